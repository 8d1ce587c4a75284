#!/bin/bash
# Metadata across MDTs: two clients (separate `plinth bench --metadata-only` processes, THREADS
# threads each) create, stat and unlink FILES small files each in two directories at once, first
# with both directories on one MDT, then with each on an MDT of its own (`plinth fs mkdir --mdt 1`),
# every MDT a separate `plinth meta` process beside one mgmt and one storage node. Prints the
# aggregate rates of each setup (median of ROUNDS) and the CPU seconds each process spent per
# file, so that the scaling per added MDT on a machine with more cores can be computed.
#   usage: bench/mdt-scaling.sh [BASE_DIR=/tmp/plinth-mdt-scaling] [FILES=5000] [ROUNDS=3] [THREADS=4]
set -eu
HERE=$(cd "$(dirname "$0")/.." && pwd)
BASE=$(realpath -m "${1:-/tmp/plinth-mdt-scaling}"); FILES=${2:-5000}; ROUNDS=${3:-3}; THREADS=${4:-4}
PLINTH="$HERE/bin/plinth"
. "$(dirname "$0")/need.sh"; need python3
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  return 0
}
trap cleanup EXIT
"$PLINTH" --version >/dev/null   # builds on first use

# starts mgmt, one storage node and MDTS single-replica MDTs under $BASE/$MDTS; sets PIDS_BY_NAME
start_cluster() {
  local mdts=$1 dir="$BASE/$1" i
  rm -rf "$dir"; mkdir -p "$dir"
  declare -gA PIDS_BY_NAME=()
  PLINTH_JAVA_OPTS=-Xmx512m "$PLINTH" mgmt --data "$dir/mgmt" --listen 127.0.0.1:7500 --http 127.0.0.1:0 > "$dir/mgmt.log" 2>&1 &
  PIDS_BY_NAME[mgmt]=$!; PIDS+=($!); await_file "$dir/mgmt/endpoints.json"
  export PLINTH_SECRET_FILE="$dir/mgmt/cluster.secret"
  for i in $(seq 0 $((mdts - 1))); do
    PLINTH_JAVA_OPTS=-Xmx1g "$PLINTH" meta --data "$dir/mdt$i" --mdt "$i" --mgmt 127.0.0.1:7500 --secret-file "$PLINTH_SECRET_FILE" \
      --listen "127.0.0.1:$((7520 + i))" --http 127.0.0.1:0 > "$dir/mdt$i.log" 2>&1 &
    PIDS_BY_NAME[mdt$i]=$!; PIDS+=($!)
  done
  for i in $(seq 0 $((mdts - 1))); do await_file "$dir/mdt$i/endpoints.json"; done
  PLINTH_JAVA_OPTS=-Xmx1g "$PLINTH" storage --target "$dir/target" --mgmt 127.0.0.1:7500 --secret-file "$PLINTH_SECRET_FILE" --listen 127.0.0.1:7540 \
    --http 127.0.0.1:0 --endpoints "$dir/storage.json" > "$dir/storage.log" 2>&1 &
  PIDS_BY_NAME[storage]=$!; PIDS+=($!); await_file "$dir/storage.json"
  for _ in $(seq 60); do [ "$("$PLINTH" df -i --server 127.0.0.1:7500 2>/dev/null | grep -c '^mdt')" -ge "$mdts" ] && break; sleep 0.5; done
}

measure_setup() {
  local mdts=$1 dir="$BASE/$1" out name round before=() after=() names files_done
  start_cluster "$mdts"
  "$PLINTH" fs mkdir --server 127.0.0.1:7500 /a
  "$PLINTH" fs mkdir --server 127.0.0.1:7500 --mdt $((mdts - 1)) /b
  echo "setup: $mdts MDT(s); /a on MDT 0, /b on MDT $("$PLINTH" getdirstripe --server 127.0.0.1:7500 -i /b)"
  # warm-up round, untimed (the servers' JIT)
  "$PLINTH" bench --server 127.0.0.1:7500 --metadata-only --threads "$THREADS" --files 2000 --path /a/warm > /dev/null
  names=(mgmt storage); for i in $(seq 0 $((mdts - 1))); do names+=("mdt$i"); done
  for name in "${names[@]}"; do before+=("$(cpu_seconds "${PIDS_BY_NAME[$name]}")"); done
  : > "$dir/rates.txt"
  for round in $(seq "$ROUNDS"); do
    "$PLINTH" bench --server 127.0.0.1:7500 --metadata-only --threads "$THREADS" --files "$FILES" --path /a/bench > "$dir/a-$round.txt" &
    local first=$!
    "$PLINTH" bench --server 127.0.0.1:7500 --metadata-only --threads "$THREADS" --files "$FILES" --path /b/bench > "$dir/b-$round.txt" &
    local second=$!
    wait "$first"; wait "$second"
    for kind in create stat unlink; do
      echo "$kind $(awk -v k="$kind" '$1 == k {s += $3} END {printf "%.0f", s}' "$dir/a-$round.txt" "$dir/b-$round.txt")" >> "$dir/rates.txt"
    done
  done
  for name in "${names[@]}"; do after+=("$(cpu_seconds "${PIDS_BY_NAME[$name]}")"); done
  files_done=$((2 * FILES * ROUNDS))
  for kind in create stat unlink; do
    printf '%-34s %10s\n' "$mdts MDT(s): aggregate ${kind}s/s" "$(awk -v k="$kind" '$1 == k {print $2}' "$dir/rates.txt" | median)"
  done
  for i in "${!names[@]}"; do
    printf '%-34s %10s\n' "  ${names[$i]} CPU ms per file (3 ops)" \
      "$(ms_per "${before[$i]}" "${after[$i]}" "$files_done")"
  done
  cleanup; PIDS=()
}

rm -rf "$BASE"; mkdir -p "$BASE"
echo "two clients of $THREADS threads, $FILES files each, median of $ROUNDS rounds; $(nproc) cores"
for mdts in ${SETUPS:-1 2}; do
  measure_setup "$mdts"
done
