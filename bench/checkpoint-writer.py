"""A trainer's checkpoint write, for bench/checkpoint-bench.sh: FILES files of SIZE_MIB/FILES MiB each,
written in 8 MiB blocks and fsynced, either committed into a staging directory with
python/plinth_checkpoint.py (staged) or into a plain directory (plain: the local disk's or the
mount's own write time). --same-as copies the first half of the files' bytes from an earlier
step's directory, as frozen layers that do not change between steps. Prints the seconds taken."""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "python"))
import plinth_checkpoint as ckpt  # noqa: E402

BLOCK = 8 << 20
PATTERN = os.urandom(64 << 20)


def write_file(path, size, tag, source=None):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        if source is not None:
            with open(source, "rb") as f:
                while True:
                    block = f.read(BLOCK)
                    if not block:
                        break
                    os.write(fd, block)
        else:
            written = 0
            # a tag per step and file, so that no two files (and no two steps) are equal
            head = tag.encode().ljust(64, b".")
            while written < size:
                offset = (written // BLOCK * 7919 * 4096) % (len(PATTERN) - BLOCK)
                block = head + PATTERN[offset + 64:offset + min(BLOCK, size - written)]
                os.write(fd, block)
                written += len(block)
        os.fsync(fd)
    finally:
        os.close(fd)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["staged", "plain"])
    parser.add_argument("directory")
    parser.add_argument("--step", type=int, default=1)
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--size-mib", type=int, default=4096)
    parser.add_argument("--rank", type=int, default=0)
    parser.add_argument("--world-size", type=int, default=1)
    parser.add_argument("--same-as", help="an earlier step's directory: the first half of the files are copied from it")
    args = parser.parse_args()
    size = (args.size_mib << 20) // args.files
    start = time.monotonic()
    if args.mode == "staged":
        target = ckpt.tmp_dir(args.directory, args.step, args.rank, args.world_size)
    else:
        target = args.directory
        os.makedirs(target, exist_ok=True)
    for i in range(args.files):
        name = "shard-%03d.bin" % i
        source = os.path.join(args.same_as, name) if args.same_as and i < args.files // 2 else None
        write_file(os.path.join(target, name), size, "step %d rank %d file %d" % (args.step, args.rank, i), source)
    if args.mode == "staged":
        ckpt.commit(args.directory, args.step, args.rank, args.world_size)
    else:
        fd = os.open(target, os.O_RDONLY)
        os.fsync(fd)
        os.close(fd)
    print("%.3f" % (time.monotonic() - start))


if __name__ == "__main__":
    main()
