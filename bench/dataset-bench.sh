#!/bin/bash
# Training data read as individual small files and as WebDataset shards, side by side in one run:
# SAMPLES samples (a ~SAMPLE_KIB KiB .input and a small .cls each) read as individual files and as shards,
# on the local disk, through the mount, and (shards) through the Java reader (`plinth shards read`); every
# read cold (page cache dropped first), by READERS processes or streams. And `plinth pack` against
# `tar -cf` of the same tree then `sync`, on the local disk, caches dropped first. Beside them: the FUSE
# ceiling for individual files (bench/fuse-ceiling/memfs.c: open, read and close answered from memory)
# and MooseFS (one copy, ../shared/peers/moosefs.sh) with the same reads.
#   usage: bench/dataset-bench.sh [BASE_DIR=/tmp/plinth-dataset-bench] [SAMPLES=100000] [SAMPLE_KIB=10] [READERS=4]
# Needs root (FUSE mounts, dropping the page cache), python3, fusermount3, GNU tar, gcc with libfuse3-dev,
# and MooseFS (moosefs-master moosefs-chunkserver moosefs-client).
set -eu
. "$(dirname "$0")/need.sh"; need python3 fusermount3:fuse3 tar gcc pkg-config mfsmaster:moosefs-master mfschunkserver:moosefs-chunkserver mfsmount:moosefs-client
HERE=$(cd "$(dirname "$0")/.." && pwd)
SHARED=$(realpath "$HERE/../shared")
BASE=$(realpath -m "${1:-/tmp/plinth-dataset-bench}"); SAMPLES=${2:-100000}; SAMPLE_KIB=${3:-10}; READERS=${4:-4}
PY=/usr/bin/python3
cleanup() {
  if mountpoint -q "$BASE/plinth/mnt"; then fusermount3 -u -z "$BASE/plinth/mnt" || true; fi
  if mountpoint -q "$BASE/memfs-mnt"; then fusermount3 -u -z "$BASE/memfs-mnt" || true; fi
  bash "$SHARED/peers/moosefs.sh" stop "$BASE/moosefs" >/dev/null 2>&1 || true
  [ -n "${PLINTH_PID:-}" ] && kill "$PLINTH_PID" 2>/dev/null || true
  sleep 2; return 0
}
trap cleanup EXIT
rm -rf "$BASE"; mkdir -p "$BASE/plinth/mnt" "$BASE/tree" "$BASE/tar"
plinth() { "$HERE/bin/plinth" "$@" --server 127.0.0.1:7790 --secret-file "$BASE/plinth/cluster.secret"; }

"$HERE/bin/plinth" --version >/dev/null   # builds on first use
"$HERE/bin/plinth" server --data "$BASE/plinth" --mount "$BASE/plinth/mnt" --listen 127.0.0.1:7790 --http 127.0.0.1:7791 --s3 '' \
  > "$BASE/plinth.log" 2>&1 & PLINTH_PID=$!
for _ in $(seq 120); do mountpoint -q "$BASE/plinth/mnt" && break; sleep 1; done
mountpoint -q "$BASE/plinth/mnt" || { echo "plinth did not mount; see $BASE/plinth.log" >&2; exit 1; }

# ---- the tree: 1,000 samples a directory, .input sizes spread around SAMPLE_KIB
$PY - "$BASE/tree" "$SAMPLES" "$SAMPLE_KIB" <<'PY'
import os, random, sys
root, samples, kib = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(1); block = os.urandom(4 * kib * 1024)
for i in range(samples):
    d = os.path.join(root, "%04d" % (i // 1000)); os.makedirs(d, exist_ok=True)
    size = rng.randint(kib * 512, kib * 1536); at = rng.randrange(len(block) - size)
    with open(os.path.join(d, "%07d.input" % i), "wb") as f: f.write(block[at:at + size])
    with open(os.path.join(d, "%07d.cls" % i), "w") as f: f.write(str(i % 1000))
PY
t0=$(now); cp -r "$BASE/tree" "$BASE/plinth/mnt/tree"; t1=$(now); COPY_IN=$(seconds "$t0" "$t1")

# ---- packing: tar -cf + sync (the bound) and plinth pack, local to local, caches dropped first
drop_caches; t0=$(now); tar -cf "$BASE/tar/all.tar" -C "$BASE/tree" .; sync; t1=$(now); TAR=$(seconds "$t0" "$t1"); rm -rf "$BASE/tar"
drop_caches; t0=$(now); "$HERE/bin/plinth" pack "$BASE/tree" "$BASE/shards" --samples-per-shard 1000 2>/dev/null; sync; t1=$(now)
PACK=$(seconds "$t0" "$t1")
drop_caches; t0=$(now); plinth pack "$BASE/tree" plinth:/shards --samples-per-shard 1000 2>/dev/null; t1=$(now); PACK_IN=$(seconds "$t0" "$t1")

# ---- reads, cold: "samples/s MiB/s seconds files"
LOCAL_FILES=$(drop_caches; $PY "$HERE/bench/dataset-read.py" files "$BASE/tree" "$READERS" 2)
LOCAL_SHARDS=$(drop_caches; $PY "$HERE/bench/dataset-read.py" shards "$BASE/shards" "$READERS" 2)
MOUNT_FILES=$(drop_caches; $PY "$HERE/bench/dataset-read.py" files "$BASE/plinth/mnt/tree" "$READERS" 2)
MOUNT_SHARDS=$(drop_caches; $PY "$HERE/bench/dataset-read.py" shards "$BASE/plinth/mnt/shards" "$READERS" 2)
drop_caches; JAVA=$(plinth shards read plinth:/shards --workers "$READERS")

# ---- the FUSE ceiling for individual files: memfs keeps sizes and answers reads with zeros; it lists nothing,
# so the reader takes its list from the local tree
gcc -O2 -o "$BASE/memfs" "$HERE/bench/fuse-ceiling/memfs.c" $(pkg-config --cflags --libs fuse3)
mkdir -p "$BASE/memfs-mnt"; "$BASE/memfs" -f "$BASE/memfs-mnt" & MEMFS=$!
for _ in $(seq 20); do mountpoint -q "$BASE/memfs-mnt" && break; sleep 0.5; done
cp -r "$BASE/tree" "$BASE/memfs-mnt/tree"
CEILING_FILES=$(drop_caches; $PY "$HERE/bench/dataset-read.py" files "$BASE/memfs-mnt/tree" "$READERS" 2 "$BASE/tree")
fusermount3 -u "$BASE/memfs-mnt"; wait "$MEMFS" 2>/dev/null || true

# ---- MooseFS, one copy: the same tree and shards, the same reads
bash "$SHARED/peers/moosefs.sh" start "$BASE/moosefs" >/dev/null
MFS=$BASE/moosefs/mnt/goal1
cp -r "$BASE/tree" "$MFS/tree"; cp -r "$BASE/shards" "$MFS/shards"
MFS_FILES=$(drop_caches; $PY "$HERE/bench/dataset-read.py" files "$MFS/tree" "$READERS" 2)
MFS_SHARDS=$(drop_caches; $PY "$HERE/bench/dataset-read.py" shards "$MFS/shards" "$READERS" 2)

field() { echo "$1" | awk "{print \$$2}"; }
printf '%-44s %12s %10s\n' "$SAMPLES samples of ~$SAMPLE_KIB KiB, cold" "samples/s" "MiB/s"
printf '%-44s %12s %10s\n' "individual files, local disk" "$(field "$LOCAL_FILES" 1)" "$(field "$LOCAL_FILES" 2)"
printf '%-44s %12s %10s\n' "shards, local disk" "$(field "$LOCAL_SHARDS" 1)" "$(field "$LOCAL_SHARDS" 2)"
printf '%-44s %12s %10s\n' "individual files, through the mount" "$(field "$MOUNT_FILES" 1)" "$(field "$MOUNT_FILES" 2)"
printf '%-44s %12s %10s\n' "shards, through the mount" "$(field "$MOUNT_SHARDS" 1)" "$(field "$MOUNT_SHARDS" 2)"
printf '%-44s %12s %10s\n' "individual files, FUSE ceiling (memfs)" "$(field "$CEILING_FILES" 1)" "$(field "$CEILING_FILES" 2)"
printf '%-44s %12s %10s\n' "individual files, MooseFS" "$(field "$MFS_FILES" 1)" "$(field "$MFS_FILES" 2)"
printf '%-44s %12s %10s\n' "shards, MooseFS" "$(field "$MFS_SHARDS" 1)" "$(field "$MFS_SHARDS" 2)"
echo "shards, Java reader (plinth shards read): $JAVA"
echo "shards through the mount / files through the mount: $(ratio "$(field "$MOUNT_SHARDS" 1)" "$(field "$MOUNT_FILES" 1)")x (target >= 20)"
echo "shards through the mount / shards on local disk: $(ratio "$(field "$MOUNT_SHARDS" 1)" "$(field "$LOCAL_SHARDS" 1)") (target >= 0.8)"
echo "files through the mount / FUSE ceiling: $(ratio "$(field "$MOUNT_FILES" 1)" "$(field "$CEILING_FILES" 1)") (target >= 0.8); / MooseFS: $(ratio "$(field "$MOUNT_FILES" 1)" "$(field "$MFS_FILES" 1)")x"
echo "pack (local to local) $PACK s, tar -cf + sync $TAR s: pack speed $(ratio "$TAR" "$PACK") of tar's (target >= 0.7)"
echo "pack into Plinth $PACK_IN s; the tree copied in through the mount (cp -r) $COPY_IN s"
