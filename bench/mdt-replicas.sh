#!/bin/bash
# MDT 0 as one Raft replica and as a group of three, each a separate `plinth meta` process beside
# one mgmt and one storage node: small-file creates, stats and unlinks through the native client
# (`plinth bench`, FILES files, ROUNDS rounds per setup) with the CPU seconds each process spent per
# file, then the failover of the group: a FUSE mount creates files one after another while the
# leader is killed (SIGKILL), KILLS times, and the longest time without a create returning in the
# 6 s after each kill is printed. Settings are the defaults.
#   usage: bench/mdt-replicas.sh [BASE_DIR=/tmp/plinth-mdt-bench] [FILES=5000] [ROUNDS=2] [KILLS=3]
set -eu
HERE=$(cd "$(dirname "$0")/.." && pwd)
BASE=$(realpath -m "${1:-/tmp/plinth-mdt-bench}"); FILES=${2:-5000}; ROUNDS=${3:-2}; KILLS=${4:-3}
PLINTH="$HERE/bin/plinth"
. "$(dirname "$0")/need.sh"; need python3
PIDS=()
MOUNTPOINT="$BASE/mnt"
cleanup() {
  mountpoint -q "$MOUNTPOINT" 2>/dev/null && { fusermount3 -u "$MOUNTPOINT" 2>/dev/null || umount -l "$MOUNTPOINT"; }
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  return 0
}
trap cleanup EXIT
"$PLINTH" --version >/dev/null   # builds on first use

# starts mgmt, one storage node and REPLICAS meta processes under $BASE/$REPLICAS; sets MGMT_PID, STORAGE_PID, META_PIDS
start_cluster() {
  local replicas=$1 dir="$BASE/$1" peers="" i
  rm -rf "$dir"; mkdir -p "$dir"
  PLINTH_JAVA_OPTS=-Xmx512m "$PLINTH" mgmt --data "$dir/mgmt" --listen 127.0.0.1:7400 --http 127.0.0.1:0 > "$dir/mgmt.log" 2>&1 &
  MGMT_PID=$!; PIDS+=("$MGMT_PID"); await_file "$dir/mgmt/endpoints.json"
  export PLINTH_SECRET_FILE="$dir/mgmt/cluster.secret"
  for i in $(seq 0 $((replicas - 1))); do peers="$peers${peers:+,}127.0.0.1:$((7410 + i))"; done
  META_PIDS=()
  for i in $(seq 0 $((replicas - 1))); do
    local raft=()
    [ "$replicas" -gt 1 ] && raft=(--raft "127.0.0.1:$((7410 + i))" --peers "$peers")
    PLINTH_JAVA_OPTS="-Xmx1g ${META_JAVA_OPTS:-}" "$PLINTH" meta --data "$dir/meta-$i" --mgmt 127.0.0.1:7400 --secret-file "$PLINTH_SECRET_FILE" --listen "127.0.0.1:$((7420 + i))" \
      --http "127.0.0.1:$((7430 + i))" "${raft[@]}" > "$dir/meta-$i.log" 2>&1 &
    META_PIDS+=($!); PIDS+=($!)
  done
  for i in $(seq 0 $((replicas - 1))); do await_file "$dir/meta-$i/endpoints.json"; done
  PLINTH_JAVA_OPTS=-Xmx1g "$PLINTH" storage --target "$dir/target" --mgmt 127.0.0.1:7400 --secret-file "$PLINTH_SECRET_FILE" --listen 127.0.0.1:7440 --http 127.0.0.1:0 \
    --endpoints "$dir/storage.json" > "$dir/storage.log" 2>&1 &
  STORAGE_PID=$!; PIDS+=("$STORAGE_PID"); await_file "$dir/storage.json"
}

stop_cluster() {
  cleanup; PIDS=()
}

# one setup: ROUNDS runs of plinth bench; prints creates/s, stats/s, unlinks/s and CPU ms per file of each process
measure_setup() {
  local replicas=$1 out="$BASE/$1/bench.txt" before=() after=() pids names i round files_done=0
  start_cluster "$replicas"
  pids=("$MGMT_PID" "$STORAGE_PID" "${META_PIDS[@]}"); names=(mgmt storage)
  for i in $(seq 0 $((replicas - 1))); do names+=("meta-$i"); done
  "$PLINTH" bench --server 127.0.0.1:7400 --size 8M --rounds 1 --files 500 > /dev/null   # warm up the JIT
  for pid in "${pids[@]}"; do before+=("$(cpu_seconds "$pid")"); done
  : > "$out"
  for round in $(seq "$ROUNDS"); do
    "$PLINTH" bench --server 127.0.0.1:7400 --size 8M --rounds 1 --files "$FILES" >> "$out"
    files_done=$((files_done + FILES))
  done
  for pid in "${pids[@]}"; do after+=("$(cpu_seconds "$pid")"); done
  for kind in create stat unlink; do
    printf '%-24s %10s\n' "$replicas replica(s) ${kind}s/s" \
      "$(awk -v k="$kind" '$1 == k {print $3}' "$out" | median)"
  done
  for i in "${!pids[@]}"; do
    printf '%-24s %10s\n' "  ${names[$i]} CPU ms/file" \
      "$(ms_per "${before[$i]}" "${after[$i]}" "$files_done")"
  done
  stop_cluster
}

measure_failover() {
  local dir="$BASE/3" kill_at next leader i n=0
  start_cluster 3
  mkdir -p "$MOUNTPOINT"
  "$PLINTH" mount --server 127.0.0.1:7400 --daemon --log "$dir/mount.log" "$MOUNTPOINT"
  # creates one after another; each line: the time it returned, in ns
  touch "$BASE/creating"
  ( while [ -e "$BASE/creating" ]; do n=$((n + 1)); touch "$MOUNTPOINT/f$n" && date +%s%N; done > "$dir/creates.txt" ) &
  local creator=$!
  sleep 5
  for i in $(seq "$KILLS"); do
    leader=""
    for _ in $(seq 100); do
      for r in 0 1 2; do
        curl -s "http://127.0.0.1:$((7430 + r))/metrics" | grep -q '^plinth_meta_raft_leader{.*} 1.0$' && leader=$r && break
      done
      [ -n "$leader" ] && break; sleep 0.1
    done
    kill_at=$(date +%s%N); kill -9 "${META_PIDS[$leader]}"
    sleep 6
    # the longest time without a returning create in the 6 s after the kill (a create in flight may return first)
    printf '%-24s %10s\n' "kill of leader meta-$leader: longest wait for a create, ms" \
      "$(awk -v t="$kill_at" -v end="$((kill_at + 6000000000))" 'BEGIN {p = t} $1 > t && $1 <= end {if ($1 - p > g) g = $1 - p; p = $1} END {printf "%d", g / 1000000}' "$dir/creates.txt")"
    local raft_peers="127.0.0.1:7410,127.0.0.1:7411,127.0.0.1:7412"
    PLINTH_JAVA_OPTS=-Xmx1g "$PLINTH" meta --data "$dir/meta-$leader" --mgmt 127.0.0.1:7400 --secret-file "$PLINTH_SECRET_FILE" --listen "127.0.0.1:$((7420 + leader))" \
      --http "127.0.0.1:$((7430 + leader))" --raft "127.0.0.1:$((7410 + leader))" --peers "$raft_peers" >> "$dir/meta-$leader.log" 2>&1 &
    META_PIDS[$leader]=$!; PIDS+=($!)
    sleep 8
  done
  rm -f "$BASE/creating"; wait "$creator" || true
  echo "creates through the mount during the kills: $(wc -l < "$dir/creates.txt")"
  stop_cluster
}

rm -rf "$BASE"; mkdir -p "$BASE"
for part in ${PARTS:-1 3 failover}; do   # PARTS: which of the three to run
  if [ "$part" = failover ]; then measure_failover; else measure_setup "$part"; fi
done
