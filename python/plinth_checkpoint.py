"""Plinth's checkpoint protocol for Python trainers (standard library only).

A trainer writes each checkpoint into a staging directory on fast local disk and commits it; the
Plinth checkpoint agent (``plinth checkpoint agent --staging DIR --dest PLINTH_PATH``) uploads
committed steps to Plinth, archives and prunes them. See docs/checkpoints.md.

    import plinth_checkpoint as ckpt

    path = ckpt.tmp_dir(STAGING, step)                    # STAGING/step-000500.tmp/
    torch.save(state, os.path.join(path, "state.pt"))
    ckpt.commit(STAGING, step)                            # renamed to STAGING/step-000500/
    ...
    ckpt.wait_durable(STAGING, step, timeout=600)         # the agent has it complete on Plinth
    step = ckpt.latest(STAGING, dest="/ckpt/run1")        # newest complete step, local or on Plinth
    ckpt.restore("/ckpt/run1", "/tmp/resume", step=step)  # nearest tier, checksums checked

With several ranks, each rank passes ``rank`` and ``world_size``: it writes
``STAGING/step-000500/rank-00003.tmp/`` and commits it to ``rank-00003/``; the step is complete
when all ``world_size`` ranks are committed (on Plinth, once every node's agent uploaded its ranks).

The manifest a rank commits lists each file's size; its ``crc32c`` is null because the standard
library has no CRC32C: the agent computes it as it uploads, and restores check against that.
"""

import json
import os
import shutil
import subprocess
import time

MANIFEST = "MANIFEST.json"
_DURABLE = ".durable"


def step_name(step):
    return "step-%06d" % step


def rank_name(rank):
    return "rank-%05d" % rank


def _check(step, rank, world_size):
    if step < 0 or world_size < 1 or not 0 <= rank < world_size:
        raise ValueError("step %r, rank %r of world_size %r" % (step, rank, world_size))


def _uncommitted(staging, step, rank, world_size):
    if world_size == 1:
        return os.path.join(staging, step_name(step) + ".tmp")
    return os.path.join(staging, step_name(step), rank_name(rank) + ".tmp")


def _committed(staging, step, rank, world_size):
    if world_size == 1:
        return os.path.join(staging, step_name(step))
    return os.path.join(staging, step_name(step), rank_name(rank))


def tmp_dir(staging, step, rank=0, world_size=1):
    """Returns an empty directory to write this rank's part of ``step`` into.

    What a writer that died left of this step, and this rank's uncommitted directories of earlier
    steps (a writer killed, or refused by a full disk), are removed first.
    """
    _check(step, rank, world_size)
    if os.path.exists(_committed(staging, step, rank, world_size)):
        raise FileExistsError("%s is already committed; a committed step never changes" % _committed(staging, step, rank, world_size))
    _remove_abandoned(staging, step, rank, world_size)
    path = _uncommitted(staging, step, rank, world_size)
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return path


def abort(staging, step, rank=0, world_size=1):
    """Removes what was written of ``step`` without committing it (after a failed save, say on a full disk)."""
    _check(step, rank, world_size)
    shutil.rmtree(_uncommitted(staging, step, rank, world_size), ignore_errors=True)


def _remove_abandoned(staging, step, rank, world_size):
    if not os.path.isdir(staging):
        return
    for name in os.listdir(staging):
        if not name.startswith("step-"):
            continue
        if world_size == 1 and name.endswith(".tmp") and name[5:-4].isdigit() and int(name[5:-4]) < step:
            shutil.rmtree(os.path.join(staging, name), ignore_errors=True)
        elif world_size > 1 and name[5:].isdigit() and int(name[5:]) < step:
            shutil.rmtree(os.path.join(staging, name, rank_name(rank) + ".tmp"), ignore_errors=True)


def _fsync(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def commit(staging, step, rank=0, world_size=1):
    """Commits what was written into ``tmp_dir(...)``: manifest, fsync, rename. Returns the committed directory.

    Until the rename the step is not complete; a trainer killed before it leaves a ``.tmp``
    directory that nothing treats as a checkpoint.
    """
    _check(step, rank, world_size)
    source = _uncommitted(staging, step, rank, world_size)
    target = _committed(staging, step, rank, world_size)
    if not os.path.isdir(source):
        raise FileNotFoundError("nothing to commit: %s" % source)
    if os.path.exists(target):
        raise FileExistsError("%s is already committed" % target)
    files = []
    directories = [source]
    for root, dirs, names in os.walk(source):
        dirs.sort()
        directories.extend(os.path.join(root, d) for d in dirs)
        for name in sorted(names):
            path = os.path.join(root, name)
            relative = os.path.relpath(path, source).replace(os.sep, "/")
            if relative == MANIFEST or not os.path.isfile(path) or os.path.islink(path):
                continue
            _fsync(path)
            files.append({"path": relative, "size": os.path.getsize(path), "crc32c": None})
    manifest = {"step": step, "rank": rank, "world_size": world_size, "files": files}
    with open(os.path.join(source, MANIFEST), "w") as out:
        json.dump(manifest, out)
        out.write("\n")
        out.flush()
        os.fsync(out.fileno())
    for directory in directories:
        _fsync(directory)
    os.rename(source, target)
    _fsync(os.path.dirname(target))
    return target


def is_durable(staging, step):
    """Whether the agent has completed ``step`` on Plinth (every rank uploaded, verified and renamed)."""
    return os.path.exists(os.path.join(staging, _DURABLE, step_name(step)))


def wait_durable(staging, step, timeout=None, poll=0.2):
    """Waits until ``step`` is complete on Plinth; returns False if ``timeout`` seconds pass first."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while not is_durable(staging, step):
        if deadline is not None and time.monotonic() >= deadline:
            return False
        time.sleep(poll)
    return True


def _local_complete_steps(staging):
    steps = []
    if not os.path.isdir(staging):
        return steps
    for name in os.listdir(staging):
        if not name.startswith("step-") or not name[5:].isdigit():
            continue
        step = int(name[5:])
        directory = os.path.join(staging, name)
        single = os.path.join(directory, MANIFEST)
        if os.path.isfile(single):
            steps.append(step)
            continue
        world_size = None
        ranks = 0
        for rank in os.listdir(directory) if os.path.isdir(directory) else []:
            manifest = os.path.join(directory, rank, MANIFEST)
            if rank.startswith("rank-") and rank[5:].isdigit() and os.path.isfile(manifest):
                with open(manifest) as f:
                    world_size = json.load(f)["world_size"]
                ranks += 1
        if world_size is not None and ranks == world_size:
            steps.append(step)
    return sorted(steps)


def plinth_command():
    """The plinth launcher: $PLINTH_BIN, else bin/plinth of the checkout this file is in, else plinth on PATH."""
    if os.environ.get("PLINTH_BIN"):
        return os.environ["PLINTH_BIN"].split()
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "bin", "plinth")
    if os.access(here, os.X_OK):
        return [os.path.normpath(here)]
    return ["plinth"]


def _plinth(args, plinth_args=()):
    command = plinth_command() + list(args) + list(plinth_args)
    result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if result.returncode != 0:
        raise RuntimeError("%s failed (%d): %s" % (" ".join(command), result.returncode, result.stderr.strip()))
    return result.stdout


def list_steps(dest, staging=None, plinth_args=()):
    """``plinth checkpoint list --json``: [{step, state, tiers[], durable, ...}]."""
    args = ["checkpoint", "list", dest, "--json"]
    if staging:
        args += ["--staging", staging]
    return json.loads(_plinth(args, plinth_args))


def latest(staging=None, dest=None, plinth_args=()):
    """The newest complete step: committed in ``staging``, or complete on Plinth under ``dest``; None if there is none."""
    steps = _local_complete_steps(staging) if staging else []
    if dest:
        steps += [s["step"] for s in list_steps(dest, staging, plinth_args) if s["state"] == "complete"]
    return max(steps) if steps else None


def restore(dest, to, step=None, rank=None, staging=None, timeout=None, plinth_args=()):
    """Fetches a complete step (the newest by default) into ``to`` from the nearest tier, checksums checked.

    Returns {step, tier, files, bytes}. With ``rank``, only that rank's part, straight into ``to``.
    """
    args = ["checkpoint", "restore", dest, "--to", to, "--json"]
    args += ["--step", str(step)] if step is not None else ["--latest"]
    if rank is not None:
        args += ["--rank", str(rank)]
    if staging:
        args += ["--staging", staging]
    if timeout is not None:
        args += ["--timeout", str(int(timeout))]
    return json.loads(_plinth(args, plinth_args))
