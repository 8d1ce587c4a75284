#!/bin/bash
# Checkpoints through the staging directory and the agent, beside the bounds measured in the same run
# (staging, Plinth and the baselines share this machine's disk):
#   blocked   - the trainer's time to write a checkpoint into staging and commit it; bound: the same writer
#               into a plain local directory. While the agent is still uploading the previous step, the
#               bound is that write beside a cp -r of the previous step (staging and Plinth share one
#               disk here, as they would not on a training node). For comparison: the same writer
#               straight into Plinth through the mount.
#   durable   - from the commit until the step is complete on Plinth (every file fsynced on its chain,
#               the step renamed); bounds: cp -r of the same files between two local directories, then
#               sync; and the writer straight into the mount (Plinth's own write speed here)
#   Bounds are the better of a run before the checkpoints and one after (this disk wanders by half).
#   archived  - from durable until every file is archived to the local-directory archive
#   unchanged - a step with half its files unchanged: its commit-to-durable time and bytes written
#   ranks     - 4 ranks as processes, each writing a quarter, committing as one step; bound: 4 plain writers
#   usage: bench/checkpoint-bench.sh [BASE_DIR=/tmp/plinth-checkpoint-bench] [SIZE_MIB=4096] [FILES=8]
# Needs root (FUSE mount, page cache), python3, fusermount3.
set -eu
. "$(dirname "$0")/need.sh"; need python3 fusermount3:fuse3
HERE=$(cd "$(dirname "$0")/.." && pwd)
BASE=$(realpath -m "${1:-/tmp/plinth-checkpoint-bench}"); SIZE_MIB=${2:-4096}; FILES=${3:-8}
PY=/usr/bin/python3
cleanup() {
  [ -n "${AGENT_PID:-}" ] && kill "$AGENT_PID" 2>/dev/null || true
  if mountpoint -q "$BASE/plinth/mnt"; then fusermount3 -u -z "$BASE/plinth/mnt" || true; fi
  [ -n "${PLINTH_PID:-}" ] && kill "$PLINTH_PID" 2>/dev/null || true
  sleep 2; return 0
}
trap cleanup EXIT
rm -rf "$BASE"; mkdir -p "$BASE/plinth/mnt" "$BASE/staging" "$BASE/local"
plinth() { "$HERE/bin/plinth" "$@" --server 127.0.0.1:7590 --secret-file "$BASE/plinth/cluster.secret"; }
writer() { $PY "$HERE/bench/checkpoint-writer.py" "$@" --files "$FILES" --size-mib "$SIZE_MIB"; }
wait_durable() { $PY -c "import sys; sys.path.insert(0, '$HERE/python'); import plinth_checkpoint as c; assert c.wait_durable('$BASE/staging', int(sys.argv[1]), timeout=3600, poll=0.02)" "$1"; now; }

"$HERE/bin/plinth" --version >/dev/null   # builds on first use
"$HERE/bin/plinth" server --data "$BASE/plinth" --mount "$BASE/plinth/mnt" --listen 127.0.0.1:7590 --http 127.0.0.1:7591 --s3 '' \
  > "$BASE/plinth.log" 2>&1 & PLINTH_PID=$!
for _ in $(seq 120); do mountpoint -q "$BASE/plinth/mnt" && break; sleep 1; done
mountpoint -q "$BASE/plinth/mnt" || { echo "plinth did not mount; see $BASE/plinth.log" >&2; exit 1; }

# ---- bounds, each the better of a run before and one after (this disk's speed wanders by a third between runs):
# the writer into a plain local directory (one process, and four at once with a quarter each); cp -r of its
# files, then sync; and, to compare, the writer straight into Plinth through the mount
min() { python3 -c "import sys; print(min(sys.argv[1:], key=float))" "$@"; }
bounds() {
  rm -rf "$BASE/local"/*
  LOCAL_RUNS+=("$(writer plain "$BASE/local/a")"); sync
  t0=$(now); cp -r "$BASE/local/a" "$BASE/local/b"; sync; t1=$(now); COPY_RUNS+=("$(seconds "$t0" "$t1")")
  rm -rf "$BASE/local/b"; sync
  # the disk shared as the agent shares it: the same write while a copy of the previous step runs
  (cp -r "$BASE/local/a" "$BASE/local/b"; sync) & local copier=$!
  BUSY_RUNS+=("$(writer plain "$BASE/local/c")"); wait "$copier"
  rm -rf "$BASE/local"/*
  t0=$(now); local pids=()
  for r in 0 1 2 3; do $PY "$HERE/bench/checkpoint-writer.py" plain "$BASE/local/r$r" --step 5 --rank $r \
    --files $((FILES / 4 > 0 ? FILES / 4 : 1)) --size-mib $((SIZE_MIB / 4)) >/dev/null & pids+=($!); done
  wait "${pids[@]}"; t1=$(now); RANKS_LOCAL_RUNS+=("$(seconds "$t0" "$t1")")
  rm -rf "$BASE/local"/*
  mkdir -p "$BASE/plinth/mnt/direct"
  DIRECT_RUNS+=("$(writer plain "$BASE/plinth/mnt/direct/step")"); rm -rf "$BASE/plinth/mnt/direct"
}
LOCAL_RUNS=(); COPY_RUNS=(); BUSY_RUNS=(); RANKS_LOCAL_RUNS=(); DIRECT_RUNS=()
bounds

# ---- the agent; step 1 alone (durable without a trainer writing), then 2 and 3 back to back
plinth checkpoint agent --staging "$BASE/staging" --dest /ckpt --keep-local 2 --keep-hot 3 --archive-every 3 \
  > "$BASE/agent.log" 2>&1 & AGENT_PID=$!
ALONE=$(writer staged "$BASE/staging" --step 1); c1=$(now); d1=$(wait_durable 1); DURABLE_ALONE=$(seconds "$c1" "$d1")
writer staged "$BASE/staging" --step 2 >/dev/null; c2=$(now)
BLOCKED=$(writer staged "$BASE/staging" --step 3); c3=$(now)     # written while the agent uploads step 2
d2=$(wait_durable 2); d3=$(wait_durable 3); DURABLE=$(seconds "$c3" "$d3"); DURABLE_2=$(seconds "$c2" "$d2")
for _ in $(seq 3600); do
  plinth checkpoint list /ckpt --json | $PY -c "import json,sys; sys.exit(0 if any(s['step']==3 and 'cold' in s['tiers'] for s in json.load(sys.stdin)) else 1)" && break
  sleep 0.5
done; a3=$(now); ARCHIVED=$(seconds "$d3" "$a3")

# ---- half the files unchanged since step 3
UNCHANGED_BLOCKED=$(writer staged "$BASE/staging" --step 4 --same-as "$BASE/staging/step-000003"); c4=$(now)
d4=$(wait_durable 4); DURABLE_HALF=$(seconds "$c4" "$d4")
LINKED=$(grep -o 'step-000004: uploaded.*' "$BASE/agent.log" | head -1)

# ---- four ranks as processes, one step
t0=$(now); RANK_PIDS=()
for r in 0 1 2 3; do $PY "$HERE/bench/checkpoint-writer.py" staged "$BASE/staging" --step 5 --rank $r --world-size 4 \
  --files $((FILES / 4 > 0 ? FILES / 4 : 1)) --size-mib $((SIZE_MIB / 4)) > "$BASE/rank-$r.time" & RANK_PIDS+=($!); done
wait "${RANK_PIDS[@]}"
c5=$(now); RANKS_BLOCKED=$(seconds "$t0" "$c5"); d5=$(wait_durable 5); RANKS_DURABLE=$(seconds "$c5" "$d5")

bounds
LOCAL=$(min "${LOCAL_RUNS[@]}"); COPY=$(min "${COPY_RUNS[@]}"); BUSY=$(min "${BUSY_RUNS[@]}"); RANKS_LOCAL=$(min "${RANKS_LOCAL_RUNS[@]}"); DIRECT=$(min "${DIRECT_RUNS[@]}")
echo "bounds (s): local write ${LOCAL_RUNS[*]}; cp ${COPY_RUNS[*]}; local write beside a cp ${BUSY_RUNS[*]}; 4 local writers ${RANKS_LOCAL_RUNS[*]}; through the mount ${DIRECT_RUNS[*]}"
row() { printf '%-50s %8s %10s %6s %10s %6s\n' "$1" "$2" "$3" "$(ratio "$2" "$3")" "${4:-}" "${4:+$(ratio "$2" "$4")}"; }
printf '%-50s %8s %10s %6s %10s %6s\n' "$SIZE_MIB MiB checkpoint, $FILES files (s)" "Plinth" "bound" "ratio" "mount" "ratio"
row "blocked: write+commit to staging, agent idle" "$ALONE" "$LOCAL"
row "blocked: the same, agent uploading the last step" "$BLOCKED" "$BUSY"
row "blocked: written straight into the mount instead" "$DIRECT" "$LOCAL"
row "commit to durable, agent idle before (step 1)" "$DURABLE_ALONE" "$COPY" "$DIRECT"
row "commit to durable, step 2 (step 3 being written)" "$DURABLE_2" "$COPY" "$DIRECT"
row "commit to durable, step 3 (after step 2's upload)" "$DURABLE" "$COPY" "$DIRECT"
row "durable to archived (local-directory archive)" "$ARCHIVED" "$COPY"
row "half unchanged: blocked" "$UNCHANGED_BLOCKED" "$LOCAL"
row "half unchanged: commit to durable" "$DURABLE_HALF" "$COPY" "$DIRECT"
row "4 ranks as processes: blocked (last commit)" "$RANKS_BLOCKED" "$RANKS_LOCAL"
row "4 ranks as processes: commit to durable" "$RANKS_DURABLE" "$COPY" "$DIRECT"
echo "half unchanged: $LINKED"
