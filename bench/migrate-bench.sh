#!/bin/bash
# plinth migrate beside its bound: one large file moved between layouts (one stripe -> four
# stripes, -> erasure coding 4+2, -> a second pool), each against `cp` of the same bytes between
# two directories of this disk followed by `sync`, page cache dropped before each. Prints MiB/s
# and the ratios. The embedded server has six targets; the pool "capacity" holds two of them.
#   usage: bench/migrate-bench.sh [BASE_DIR=/tmp/plinth-migrate-bench] [SIZE_MIB=10240]
#   environment: HEAP (-Xmx2g)
# Needs root (to drop the page cache) and python3.
set -eu
. "$(dirname "$0")/need.sh"; need python3
HERE=$(cd "$(dirname "$0")/.." && pwd)
BASE=$(realpath -m "${1:-/tmp/plinth-migrate-bench}"); SIZE_MIB=${2:-10240}; HEAP=${HEAP:--Xmx2g}
cleanup() { [ -n "${PLINTH_PID:-}" ] && kill "$PLINTH_PID" 2>/dev/null; sleep 2; rm -rf "$BASE"; return 0; }
trap cleanup EXIT
rm -rf "$BASE"; mkdir -p "$BASE/plinth" "$BASE/local/a" "$BASE/local/b"
plinth() { "$HERE/bin/plinth" "$@" --server 127.0.0.1:7490 --secret-file "$BASE/plinth/cluster.secret"; }

"$HERE/bin/plinth" --version >/dev/null   # builds on first use
PLINTH_JAVA_OPTS="$HEAP" "$HERE/bin/plinth" server --data "$BASE/plinth" --targets 6 --listen 127.0.0.1:7490 --http 127.0.0.1:7491 \
  --s3 '' > "$BASE/plinth.log" 2>&1 & PLINTH_PID=$!
for _ in $(seq 120); do grep -q '"rpc"' "$BASE/plinth/endpoints.json" 2>/dev/null && break; sleep 1; done
plinth pool create capacity 5 6

head -c $((SIZE_MIB << 20)) /dev/urandom > "$BASE/local/a/big"
plinth fs mkdir /m
plinth setstripe -c 1 /m
plinth fs put "$BASE/local/a/big" /m/big >/dev/null

move() { # LABEL FLAGS... -> prints a row
  local label=$1; shift
  drop_caches; local t0 t1 c0 c1; t0=$(now); cp "$BASE/local/a/big" "$BASE/local/b/big"; sync; t1=$(now)
  local copy; copy=$(rate "$SIZE_MIB" "$t0" "$t1"); rm -f "$BASE/local/b/big"
  drop_caches; c0=$(now); plinth migrate "$@" /m/big >/dev/null 2>&1; c1=$(now)
  local moved; moved=$(rate "$SIZE_MIB" "$c0" "$c1")
  printf '%-34s %10s %10s %8s\n' "$label" "$moved" "$copy" "$(ratio "$moved" "$copy")"
  sleep 7   # the old chunks' freeing (design note 7), not part of the next move
}
printf '%-34s %10s %10s %8s\n' "$SIZE_MIB MiB file (MiB/s)" "migrate" "cp+sync" "ratio"
move "-c 1 -> -c 4" -c 4
move "-c 4 -> ec 4+2" --ec 4+2
move "ec 4+2 -> pool capacity, -c 2" --ec none -c 2 -p capacity
