"""Reads a dataset as a training job's loaders would, for bench/dataset-bench.sh: MODE files reads every
file of DIR (open, read, close), MODE shards streams every *.tar in DIR with tarfile; READERS processes
split the work. The listing is made before the clock starts (from LIST_FROM, if given, a tree with the
same names: the FUSE ceiling lists nothing). Prints samples/s and MiB/s (a sample is a key: the files
sharing a name up to the first dot)."""

import multiprocessing
import os
import sys
import tarfile
import time


def read_files(paths):
    total = 0
    for path in paths:
        with open(path, "rb") as f:
            total += len(f.read())
    return len(paths), total


def read_shards(paths):
    members = total = 0
    for path in paths:
        with open(path, "rb", buffering=1 << 20) as raw, tarfile.open(fileobj=raw, mode="r|") as tar:
            for member in tar:
                if member.isfile():
                    total += len(tar.extractfile(member).read())
                    members += 1
    return members, total


def main():
    mode, directory, readers, files_per_sample = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    if mode == "files":
        listed = sys.argv[5] if len(sys.argv) > 5 else directory
        paths = [os.path.join(directory, os.path.relpath(os.path.join(root, name), listed))
                 for root, _, names in os.walk(listed) for name in names]
        work = read_files
    else:
        paths = sorted(os.path.join(directory, name) for name in os.listdir(directory) if name.endswith(".tar"))
        work = read_shards
    chunks = [paths[i::readers] for i in range(readers)]
    start = time.monotonic()
    with multiprocessing.Pool(readers) as pool:
        results = pool.map(work, chunks)
    seconds = time.monotonic() - start
    files = sum(r[0] for r in results)
    total = sum(r[1] for r in results)
    print("%.0f %.1f %.2f %d" % (files / files_per_sample / seconds, total / seconds / (1 << 20), seconds, files))


if __name__ == "__main__":
    main()
