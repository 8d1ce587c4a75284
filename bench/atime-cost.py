#!/usr/bin/env python3
"""What relatime atime updates cost reads: two sets of FILES small files read through a mount,
one whose atimes are due to move (set two days back before each round) and one whose are not
(set an hour ahead), page cache dropped before each pass; prints the median time per open, read
and close of each. Both sets get the same utime calls each round, so the mount's attribute caches
start equal.
    usage: bench/atime-cost.py MOUNTPOINT [FILES=3000] [ROUNDS=5]   (as root, on a plinth mount)"""
import os
import statistics
import subprocess
import sys
import time

mount = sys.argv[1]
files = int(sys.argv[2]) if len(sys.argv) > 2 else 3000
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 5
base = os.path.join(mount, ".atime-cost")
for name in ("due", "not-due"):
    os.makedirs(os.path.join(base, name), exist_ok=True)
    for i in range(files):
        with open(os.path.join(base, name, "f%d" % i), "wb") as f:
            f.write(os.urandom(4096))


def drop_caches():
    subprocess.run(["sync"], check=True)
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def read_all(directory):
    start = time.time()
    for i in range(files):
        with open(os.path.join(directory, "f%d" % i), "rb") as f:
            f.read()
    return time.time() - start


seconds = {"due": [], "not-due": []}
for _ in range(rounds):
    for i in range(files):
        for name, atime in (("due", time.time() - 2 * 86400), ("not-due", time.time() + 3600)):
            path = os.path.join(base, name, "f%d" % i)
            os.utime(path, (atime, os.stat(path).st_mtime))
    time.sleep(2)
    for name in ("due", "not-due"):
        drop_caches()
        seconds[name].append(read_all(os.path.join(base, name)))
    time.sleep(1.5)  # the client's batch of atime updates goes out
for name in ("due", "not-due"):
    print("atime %-8s median %.1f us per open+read+close (rounds: %s)" % (name, statistics.median(seconds[name]) / files * 1e6,
          ", ".join("%.2fs" % s for s in seconds[name])))
subprocess.run(["rm", "-rf", base], check=True)
