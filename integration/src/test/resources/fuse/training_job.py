#!/usr/bin/python3
"""A training job's file traffic through two mounts of one cluster.

Usage: training_job.py MOUNT OTHER_MOUNT
Writes dataset shards with their sample counts in user.* xattrs, reads them back from several
worker processes, and saves checkpoints the way trainers do: write a temporary file, fsync it,
and os.replace it into place while holding an flock on a lock file, so that a reader on another
node never sees a half-written checkpoint.
"""
import fcntl
import hashlib
import multiprocessing
import os
import sys

MOUNT, OTHER = sys.argv[1], sys.argv[2]
JOB = "job-%d" % os.getpid()
DATA = os.path.join(MOUNT, JOB, "shards")
CKPT = os.path.join(MOUNT, JOB, "checkpoints")
os.makedirs(DATA)
os.makedirs(CKPT)


def shard_bytes(index):
    seed = hashlib.sha256(b"shard-%d" % index).digest()
    return (seed * (1 + (index * 7919) % 40000))[: 256 * 1024 + index * 1000]


def write_shards(count):
    for i in range(count):
        name = os.path.join(DATA, "shard-%04d.tar" % i)
        with open(name, "wb") as f:
            f.write(shard_bytes(i))
        os.setxattr(name, "user.samples", str(100 + i).encode())


def read_shard(i):
    name = os.path.join(OTHER, JOB, "shards", "shard-%04d.tar" % i)
    with open(name, "rb") as f:
        data = f.read()
    assert data == shard_bytes(i), "shard %d differs" % i
    assert os.getxattr(name, "user.samples") == str(100 + i).encode()
    return len(data)


def save_checkpoint(step, payload):
    lock = os.path.join(CKPT, ".lock")
    with open(lock, "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        tmp = os.path.join(CKPT, ".model.pt.tmp")
        with open(tmp, "wb") as f:
            f.write(payload)
            f.flush()
            os.fsync(f.fileno())
        os.setxattr(tmp, "user.step", str(step).encode())
        os.replace(tmp, os.path.join(CKPT, "model.pt"))
        fcntl.flock(held, fcntl.LOCK_UN)


def load_checkpoint():
    lock = os.path.join(OTHER, JOB, "checkpoints", ".lock")
    with open(lock, "a") as held:
        fcntl.flock(held, fcntl.LOCK_SH)
        name = os.path.join(OTHER, JOB, "checkpoints", "model.pt")
        with open(name, "rb") as f:
            data = f.read()
        step = int(os.getxattr(name, "user.step"))
        fcntl.flock(held, fcntl.LOCK_UN)
    return step, data


write_shards(24)
with multiprocessing.Pool(4) as pool:
    total = sum(pool.map(read_shard, range(24)))
print("read %d bytes of shards with 4 workers" % total)

for step in range(1, 6):
    payload = hashlib.sha512(b"step %d" % step).digest() * (20000 * step)
    save_checkpoint(step, payload)
    loaded_step, data = load_checkpoint()
    assert loaded_step == step and data == payload, "checkpoint %d read back as step %d" % (step, loaded_step)
assert sorted(os.listdir(CKPT)) == [".lock", "model.pt"], os.listdir(CKPT)
print("5 checkpoints saved and read back whole")
