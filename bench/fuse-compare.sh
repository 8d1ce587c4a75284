#!/bin/bash
# The FUSE mount against the local disk and MooseFS (one copy), side by side in one run:
# ../shared/bench/fio-suite.sh for data, ../shared/bench/mdbench.c for metadata, iperf3 for
# loopback TCP. Prints every figure and the ratios the FUSE issue sets targets for. Each target
# gets the same warm-up first (1 GiB written and read four times, the metadata run twice): a fresh JVM is
# still compiling its hot paths for the first gigabytes (design note 53).
#   usage: bench/fuse-compare.sh [BASE_DIR=/tmp/plinth-bench] [SIZE=1G] [MD_THREADS=4] [MD_FILES=2000]
# Needs root, fuse3, fio, iperf3, gcc and MooseFS (moosefs-master moosefs-chunkserver moosefs-client);
# libfuse3-dev for the FUSE ceiling (an in-memory C file system that does no work, same mdbench).
set -eu
. "$(dirname "$0")/need.sh"; need fio iperf3 gcc python3 fusermount3:fuse3 mfsmaster:moosefs-master mfschunkserver:moosefs-chunkserver mfsmount:moosefs-client
HERE=$(cd "$(dirname "$0")/.." && pwd)
SHARED=$(realpath "$HERE/../shared")
BASE=$(realpath -m "${1:-/tmp/plinth-bench}"); SIZE=${2:-1G}; MD_THREADS=${3:-4}; MD_FILES=${4:-2000}
OUT=$BASE/results.txt
mkdir -p "$BASE/local"
# Every step may find its process already gone (iperf3 -1 exits after one test): under set -e a
# failing last command in the trap would turn a finished run's status into 1.
cleanup() {
  if [ -f "$BASE/plinth.pid" ] && kill "$(cat "$BASE/plinth.pid")" 2>/dev/null; then sleep 3; fi
  if mountpoint -q "$BASE/plinth/mnt"; then fusermount3 -u -z "$BASE/plinth/mnt" || true; fi
  bash "$SHARED/peers/moosefs.sh" stop "$BASE/moosefs" >/dev/null 2>&1 || true
  if [ -n "${IPERF:-}" ]; then kill "$IPERF" 2>/dev/null || true; fi
}
trap cleanup EXIT

# random 4 KiB reads with O_DIRECT, 32 in flight (libaio): what map-style datasets and mmap'd token files do
# when many workers read at once; fio-suite's randread4k is one buffered reader
randread_direct() {
  local dir=$1 label=$2
  fio --name=prepare --filename="$dir/randread.dat" --rw=write --bs=1M --size="$SIZE" --ioengine=psync >/dev/null
  drop_caches
  fio --output-format=json --name=randread4k-direct32 --filename="$dir/randread.dat" --rw=randread --bs=4k --size="$SIZE" \
    --direct=1 --ioengine=libaio --iodepth=32 --runtime=15 --time_based --norandommap --randrepeat=0 \
    | python3 -c 'import json,sys; print("'"$label"' randread4k-direct32 %.0f IOPS" % json.load(sys.stdin)["jobs"][0]["read"]["iops"])' | tee -a "$OUT"
  rm -f "$dir/randread.dat"
}

gcc -O2 -pthread -o "$BASE/mdbench" "$SHARED/bench/mdbench.c"
rm -rf "$BASE/plinth"; mkdir -p "$BASE/plinth"
"$HERE/bin/plinth" server --data "$BASE/plinth" --mount "$BASE/plinth/mnt" --listen 127.0.0.1:7190 --http 127.0.0.1:7191 \
  > "$BASE/plinth.log" 2>&1 & echo $! > "$BASE/plinth.pid"
for _ in $(seq 120); do mountpoint -q "$BASE/plinth/mnt" && break; sleep 1; done
mountpoint -q "$BASE/plinth/mnt" || { echo "plinth did not mount; see $BASE/plinth.log" >&2; exit 1; }
bash "$SHARED/peers/moosefs.sh" start "$BASE/moosefs" >/dev/null
MFS=$BASE/moosefs/mnt/goal1

: > "$OUT"
iperf3 -s -1 -p 5299 >/dev/null 2>&1 & IPERF=$!; sleep 1
iperf3 -c 127.0.0.1 -p 5299 -t 5 -J | python3 -c 'import json,sys; print("loopback tcp %.1f MiB/s" % (json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"]/8/1048576))' | tee -a "$OUT"
for target in "local:$BASE/local" "plinth:$BASE/plinth/mnt" "moosefs:$MFS"; do
  label=${target%%:*}; dir=${target#*:}
  # warm-up (every target alike): a fresh JVM compiles per-request code only after ~10,000 requests;
  # the mount's cold 1 GiB reads ran 912, 1298, 1378, 1718 MiB/s in a row
  bash "$SHARED/bench/fio-suite.sh" "$dir" warmup 1G "seqwrite seqread seqread seqread seqread" >/dev/null
  # metadata: twice the measured run (a fresh mount's create rate was still doubling over its first 16,000 files)
  mkdir -p "$dir/md"; for round in 1 2; do "$BASE/mdbench" "$dir/md" "$MD_THREADS" "$MD_FILES" >/dev/null; done; rmdir "$dir/md" 2>/dev/null || true
  bash "$SHARED/bench/fio-suite.sh" "$dir" "$label" "$SIZE" | tee -a "$OUT"
  randread_direct "$dir" "$label"
  mkdir -p "$dir/md"; "$BASE/mdbench" "$dir/md" "$MD_THREADS" "$MD_FILES" | sed "s/^/$label mdbench /" | tee -a "$OUT"
  "$BASE/mdbench" "$dir/md" 1 "$MD_FILES" | sed "s/^/$label mdbench-1 /" | tee -a "$OUT"
  rmdir "$dir/md" 2>/dev/null || true
done
# The ceiling of any FUSE file system here: an in-memory C file system that does no work at all
# (bench/fuse-ceiling/memfs.c), run through the same mdbench. Needs libfuse3-dev and pkg-config.
if gcc -O2 -o "$BASE/memfs" "$HERE/bench/fuse-ceiling/memfs.c" $(pkg-config --cflags --libs fuse3 2>/dev/null) 2>/dev/null; then
  mkdir -p "$BASE/memfs-mnt"; "$BASE/memfs" -f "$BASE/memfs-mnt" & MEMFS=$!
  for _ in $(seq 20); do mountpoint -q "$BASE/memfs-mnt" && break; sleep 0.5; done
  "$BASE/mdbench" "$BASE/memfs-mnt" 1 500 >/dev/null
  "$BASE/mdbench" "$BASE/memfs-mnt" "$MD_THREADS" "$MD_FILES" | sed "s/^/fuse-ceiling mdbench /" | tee -a "$OUT"
  "$BASE/mdbench" "$BASE/memfs-mnt" 1 "$MD_FILES" | sed "s/^/fuse-ceiling mdbench-1 /" | tee -a "$OUT"
  # the small-I/O jobs too: what a FUSE round trip per request allows (its reads are zeros, its writes kept nowhere)
  bash "$SHARED/bench/fio-suite.sh" "$BASE/memfs-mnt" fuse-ceiling "$SIZE" "seqread-direct randread4k fsync4k" | tee -a "$OUT"
  randread_direct "$BASE/memfs-mnt" fuse-ceiling
  fusermount3 -u "$BASE/memfs-mnt"; wait "$MEMFS" 2>/dev/null || true
else
  echo "(no libfuse3-dev: the FUSE ceiling is not measured)" >&2
fi
python3 - "$OUT" <<'PY'
import re, sys
v = {}
JOBS = ("seqwrite", "seqread", "seqread-direct", "randread4k", "randread4k-direct32", "fsync4k")
for line in open(sys.argv[1]):
    f = line.split()
    if f[:2] == ["loopback", "tcp"]: v["loopback"] = float(f[2])
    elif len(f) >= 4 and f[1] in JOBS: v[(f[0], f[1])] = float(f[2])
    elif len(f) > 2 and f[1].startswith("mdbench"):
        for k, x in re.findall(r"(\S+)/s=(\d+)", line): v[(f[0], f[1], k)] = float(x)
def r(a, b): return "%.2f" % (a / b) if b else "n/a"
print("\nratios (targets: seqwrite >= 0.7 local and >= moosefs; seqread >= 0.7 min(local, loopback) and >= 3x moosefs; metadata >= 3x moosefs)")
for job in JOBS:
    p, l, m = v.get(("plinth", job)), v.get(("local", job)), v.get(("moosefs", job))
    if p is None: continue
    ref = min(l, v.get("loopback", l)) if job.startswith("seqread") else l
    c = v.get(("fuse-ceiling", job))
    ceiling = f"   plinth/fuse-ceiling {r(p, c)}" if c is not None else ""
    print(f"  {job:19s} plinth/local {r(p, ref)}   plinth/moosefs {r(p, m)}{ceiling}")
for md in ("mdbench", "mdbench-1"):
    for k in ("create", "stat", "unlink", "triple"):
        p, m, l = v.get(("plinth", md, k)), v.get(("moosefs", md, k)), v.get(("local", md, k))
        c = v.get(("fuse-ceiling", md, k))
        ceiling = f"   fuse-ceiling/moosefs {r(c, m)}" if c is not None else ""
        if p is not None: print(f"  {md:9s} {k:7s} plinth/moosefs {r(p, m)}   plinth/local {r(p, l)}{ceiling}")
PY
