#!/usr/bin/python3
"""Every file system call over every file type, mode and caller, on a Plinth mount and on a local
file system side by side; any difference in outcome or in the resulting inode is a finding.

Usage: posix_sweep.py MOUNT REFERENCE
MOUNT is a Plinth mount, REFERENCE an empty directory on a local file system (ext4, xfs, tmpfs).
Runs as root; each caller (root, the files' owner, a member of their group, anyone else) runs its
calls in a child process with that uid. Each (call, caller, parent, fixture) has a fixture of its
own, so that no call sees another's effects. Prints the differences and exits non-zero if any
remain that KNOWN does not explain.

What is compared for each case: the call's result (ok, a value, or the errno), and afterwards, for
the fixture's name and every name the call may have made, whether it exists, its type, mode bits,
owner, group, link count and size, and whether its mtime and ctime moved.
"""
import ctypes
import errno
import json
import os
import stat
import sys
import time

OWNER, GROUP = 4242, 4242
CALLERS = {"root": (0, 0), "owner": (OWNER, GROUP), "group": (4243, GROUP), "other": (4244, 4244)}
# set-id bits: a write or truncate by a non-owner, and a chown, clears them (S_ISGID only with
# group-execute set or by a caller outside the file's
# group (Linux 6.2 on; Plinth follows the newer rule, so older kernels skip that mode)
MODES = (0o444, 0o222, 0o111, 0o700, 0o070, 0o007, 0o6777, 0o2767)
if tuple(int(part) for part in os.uname().release.split("-")[0].split(".")[:2]) < (6, 2):
    MODES = MODES[:-1]
KINDS = ("reg", "dir", "lnk", "fifo", "sock", "chr", "blk")
# parents are root's: anyone may enter and write; sticky; read-only; not searchable by others;
# set-group-ID (what is made in it takes its group, and a directory its S_ISGID)
PARENTS = {"open": 0o777, "sticky": 0o1777, "readonly": 0o555, "nosearch": 0o666, "setgid": 0o2777}
TIME = 1_000_000_000 * 10**9  # a fixed timestamp in ns, far from now

# Differences the design explains, by (call, kind) with None for any kind, and why.
KNOWN = {
    ("tmpfile_in", "dir"): "O_TMPFILE: libfuse 3.14 (Debian 12) has no tmpfile operation, so the kernel answers "
                           "EOPNOTSUPP (Python's tempfile then falls back to a named file)",
}


def opener(flags, mode=0o644):
    return lambda p: os.close(os.open(p, flags | os.O_NONBLOCK, mode))


def user_xattrs(p):
    return sorted(a for a in os.listxattr(p, follow_symlinks=False) if a.startswith("user."))


def rename_over(kind):
    def call(p):
        os.rename(p, p + "-victim")
    call.victim = kind
    return call


def write(p):
    fd = os.open(p, os.O_WRONLY | os.O_NONBLOCK)
    try:
        os.write(fd, b"w")
    finally:
        os.close(fd)


LIBC = ctypes.CDLL(None, use_errno=True)
RENAME_NOREPLACE, RENAME_EXCHANGE = 1, 2


def renameat2(flags):
    def call(p):
        if LIBC.renameat2(-100, p.encode(), -100, (p + "-victim").encode(), flags) != 0:
            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code))
    call.victim = "reg"
    return call


def fallocate(p):
    fd = os.open(p, os.O_WRONLY | os.O_NONBLOCK)
    try:
        os.posix_fallocate(fd, 0, 8192)
    finally:
        os.close(fd)


def chdir(p):
    os.chdir(p)
    os.chdir("/")


# name -> (function, parents it runs under, extra names to report afterwards)
CALLS = {
    "stat": (os.stat, ("open", "nosearch")),
    "lstat": (os.lstat, ("open", "nosearch")),
    "access_r": (lambda p: os.access(p, os.R_OK), ("open",)),
    "access_w": (lambda p: os.access(p, os.W_OK), ("open",)),
    "access_x": (lambda p: os.access(p, os.X_OK), ("open",)),
    "open_r": (opener(os.O_RDONLY), ("open",)),
    "open_w": (opener(os.O_WRONLY), ("open",)),
    "open_rw": (opener(os.O_RDWR), ("open",)),
    "open_trunc": (opener(os.O_WRONLY | os.O_TRUNC), ("open",)),
    "open_append": (opener(os.O_WRONLY | os.O_APPEND), ("open",)),
    "open_nofollow": (opener(os.O_RDONLY | os.O_NOFOLLOW), ("open",)),
    "open_directory": (opener(os.O_RDONLY | os.O_DIRECTORY), ("open",)),
    "open_creat": (opener(os.O_WRONLY | os.O_CREAT), ("open", "readonly", "setgid")),
    "open_creat_excl": (opener(os.O_WRONLY | os.O_CREAT | os.O_EXCL), ("open", "readonly")),
    "write": (write, ("open",)),
    "listdir": (lambda p: sorted(os.listdir(p)), ("open",)),
    "chdir": (chdir, ("open",)),
    "readlink": (os.readlink, ("open",)),
    "chmod": (lambda p: os.chmod(p, 0o640), ("open",)),
    "chmod_setgid": (lambda p: os.chmod(p, 0o2755), ("open",)),
    "chmod_sticky": (lambda p: os.chmod(p, 0o1755), ("open",)),
    "chown_same": (lambda p: os.lchown(p, OWNER, -1), ("open",)),
    "chown_other": (lambda p: os.lchown(p, 4244, -1), ("open",)),
    "chgrp_own": (lambda p: os.lchown(p, -1, GROUP), ("open",)),
    "chgrp_foreign": (lambda p: os.lchown(p, -1, 4244), ("open",)),
    "chown_follow": (lambda p: os.chown(p, -1, GROUP), ("open",)),
    "truncate": (lambda p: os.truncate(p, 2), ("open",)),
    "truncate_up": (lambda p: os.truncate(p, 100), ("open",)),
    "utime_set": (lambda p: os.utime(p, ns=(TIME, TIME)), ("open",)),
    "utime_now": (lambda p: os.utime(p), ("open",)),
    "utime_nofollow": (lambda p: os.utime(p, ns=(TIME, TIME), follow_symlinks=False), ("open",)),
    "setxattr": (lambda p: os.setxattr(p, "user.sweep", b"v", follow_symlinks=False), ("open",)),
    "setxattr_follow": (lambda p: os.setxattr(p, "user.sweep", b"v"), ("open",)),
    "getxattr": (lambda p: os.getxattr(p, "user.present", follow_symlinks=False).decode(), ("open",)),
    "listxattr": (user_xattrs, ("open",)),
    "removexattr": (lambda p: os.removexattr(p, "user.present", follow_symlinks=False), ("open",)),
    "unlink": (os.unlink, ("open", "sticky", "readonly")),
    "rmdir": (os.rmdir, ("open", "sticky", "readonly")),
    "rename_here": (lambda p: os.rename(p, p + "-renamed"), ("open", "sticky", "readonly")),
    "rename_away": (lambda p: os.rename(p, os.path.join(os.path.dirname(os.path.dirname(p)), "dest", os.path.basename(p))),
                    ("open", "sticky", "readonly")),
    "rename_over_reg": (rename_over("reg"), ("open", "sticky")),
    "rename_over_dir": (rename_over("dir"), ("open", "sticky")),
    "rename_noreplace": (renameat2(RENAME_NOREPLACE), ("open", "sticky")),
    "rename_exchange": (renameat2(RENAME_EXCHANGE), ("open", "sticky")),
    "fallocate": (fallocate, ("open",)),
    "tmpfile_in": (lambda p: os.close(os.open(p, os.O_TMPFILE | os.O_WRONLY, 0o600)), ("open",)),
    "link": (lambda p: os.link(p, p + "-link", follow_symlinks=False), ("open", "sticky", "readonly")),
    "link_follow": (lambda p: os.link(p, p + "-link", follow_symlinks=True), ("open",)),
    "mkdir_in": (lambda p: os.mkdir(os.path.join(p, "child")), ("open",)),
    "create_in": (lambda p: os.close(os.open(os.path.join(p, "child"), os.O_WRONLY | os.O_CREAT, 0o644)), ("open",)),
    "stat_in": (lambda p: os.stat(os.path.join(p, "child")), ("open",)),
    "mkdir_at": (os.mkdir, ("open", "sticky", "readonly", "setgid")),
    "mkfifo_at": (os.mkfifo, ("open", "readonly", "setgid")),
    "symlink_at": (lambda p: os.symlink("somewhere", p), ("open", "readonly", "setgid")),
    "mknod_reg_at": (lambda p: os.mknod(p, 0o644 | stat.S_IFREG), ("open", "readonly", "setgid")),
    "mknod_chr_at": (lambda p: os.mknod(p, 0o644 | stat.S_IFCHR, os.makedev(1, 3)), ("open",)),
}
# calls that make a name: their fixtures include a name that does not exist yet
MAKERS = {"open_creat", "open_creat_excl", "mkdir_at", "mkfifo_at", "symlink_at", "mknod_reg_at", "mknod_chr_at",
          "stat", "lstat", "unlink", "open_r"}


def fixtures():
    """(kind, mode) pairs: every kind with every mode, and a name that does not exist."""
    for kind in KINDS:
        for mode in MODES:
            yield kind, mode


def make(p, kind, mode):
    """Makes one fixture owned by OWNER:GROUP with mode (a symlink's target gets the mode)."""
    if kind == "none":
        return
    if kind == "reg":
        with open(p, "wb") as f:
            f.write(b"hello")
    elif kind == "dir":
        os.mkdir(p)
    elif kind == "lnk":
        make(p + "-target", "reg", mode)
        os.symlink(os.path.basename(p) + "-target", p)
        os.lchown(p, OWNER, GROUP)
        return
    elif kind == "fifo":
        os.mkfifo(p)
    elif kind == "sock":
        import socket
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        cwd = os.getcwd()
        os.chdir(os.path.dirname(p))  # socket paths are limited to 107 bytes
        try:
            s.bind(os.path.basename(p))
        finally:
            os.chdir(cwd)
            s.close()
    elif kind == "chr":
        os.mknod(p, 0o600 | stat.S_IFCHR, os.makedev(1, 3))
    elif kind == "blk":
        os.mknod(p, 0o600 | stat.S_IFBLK, os.makedev(7, 200))
    if kind in ("reg", "dir"):
        os.setxattr(p, "user.present", b"yes")
    os.lchown(p, OWNER, GROUP)
    os.chmod(p, mode)


def summary(p):
    try:
        s = os.lstat(p)
    except (FileNotFoundError, NotADirectoryError):
        return None
    kind = stat.S_IFMT(s.st_mode)
    size = s.st_size if stat.S_ISREG(s.st_mode) or stat.S_ISLNK(s.st_mode) else None
    rdev = s.st_rdev if stat.S_ISCHR(s.st_mode) or stat.S_ISBLK(s.st_mode) else None
    return {"type": kind, "mode": oct(stat.S_IMODE(s.st_mode)), "uid": s.st_uid, "gid": s.st_gid, "nlink": s.st_nlink,
            "size": size, "rdev": rdev, "mtime": s.st_mtime_ns, "ctime": s.st_ctime_ns, "ino": s.st_ino}


def names_after(p):
    """Every name a call on p may leave behind."""
    parent = os.path.dirname(os.path.dirname(p))
    return {"name": p, "renamed": p + "-renamed", "moved": os.path.join(parent, "dest", os.path.basename(p)),
            "link": p + "-link", "victim": p + "-victim", "child": os.path.join(p, "child"), "target": p + "-target"}


def plan(root, xattrs):
    """Lays out every case's fixture under root; returns [(key, call name, caller, path)]."""
    cases = []
    for call, (function, parents) in CALLS.items():
        if not xattrs and "xattr" in call:
            continue
        for caller in CALLERS:
            for parent in parents:
                directory = os.path.join(root, call, caller, parent)
                os.makedirs(directory)
                os.makedirs(os.path.join(root, call, caller, "dest"), exist_ok=True)
                os.chmod(os.path.join(root, call, caller, "dest"), 0o777)
                os.chmod(os.path.join(root, call, caller), 0o755)
                pairs = list(fixtures()) + [("none", 0)]
                for kind, mode in pairs:
                    if kind == "none" and call not in MAKERS and not call.startswith("rename") and call != "link":
                        continue
                    name = "%s-%o" % (kind, mode)
                    p = os.path.join(directory, name)
                    make(p, kind, mode)
                    victim = getattr(function, "victim", None)
                    if victim == "reg":
                        with open(p + "-victim", "wb") as f:
                            f.write(b"victim")
                    elif victim == "dir":
                        os.mkdir(p + "-victim")
                    cases.append(("%s %s %s %s" % (call, caller, parent, name), call, caller, p))
                os.chmod(directory, PARENTS[parent])
    return cases


def run_as(caller, cases):
    """Runs the caller's cases in a child with the caller's ids; returns {key: outcome}."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        uid, gid = CALLERS[caller]
        os.setgroups([])
        os.setgid(gid)
        os.setuid(uid)
        os.umask(0o022)
        outcomes = {}
        for key, call, who, p in cases:
            if who != caller:
                continue
            try:
                value = CALLS[call][0](p)
                outcomes[key] = "ok" if value is None or call.startswith(("stat", "lstat")) else "ok:%s" % (value,)
            except OSError as e:
                outcomes[key] = errno.errorcode.get(e.errno, str(e.errno))
        with os.fdopen(write, "w") as out:
            json.dump(outcomes, out)
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as source:
        outcomes = json.load(source)
    os.waitpid(pid, 0)
    return outcomes


def sweep(root, xattrs):
    cases = plan(root, xattrs)
    before = {key: {what: summary(name) for what, name in names_after(p).items()} for key, _, _, p in cases}
    time.sleep(0.05)  # so that any timestamp a call sets differs from the fixture's
    outcomes = {}
    for caller in CALLERS:
        outcomes.update(run_as(caller, cases))
    results = {}
    for key, _, _, p in cases:
        after = {}
        # timestamps are compared with the same inode's before the call, wherever its name is now
        inodes = {state["ino"]: state for state in before[key].values() if state is not None}
        for what, name in names_after(p).items():
            now = summary(name)
            if now is None:
                if before[key][what] is not None:
                    after[what] = None
                continue
            then = inodes.get(now.pop("ino"))
            for stamp in ("mtime", "ctime"):
                value = now.pop(stamp)
                now[stamp] = "fixed" if value == TIME else ("moved" if then is None or value != then[stamp] else "kept")
            after[what] = now
        results[key] = {"result": outcomes[key], "after": after}
    return results


def supports_user_xattrs(directory):
    probe = os.path.join(directory, ".xattr-probe")
    open(probe, "w").close()
    try:
        os.setxattr(probe, "user.probe", b"1")
        return True
    except OSError:
        return False
    finally:
        os.unlink(probe)


def main():
    mount, reference = sys.argv[1], sys.argv[2]
    xattrs = supports_user_xattrs(reference)
    if not xattrs:
        print("the reference file system has no user extended attributes: the xattr calls are skipped")
    started = time.time()
    roots = [os.path.join(top, "sweep-%d" % os.getpid()) for top in (mount, reference)]
    for r in roots:
        os.makedirs(r)
        os.chmod(r, 0o755)
    plinth, local = (sweep(r, xattrs) for r in roots)
    differences = []
    for key in sorted(local):
        ours, theirs = plinth[key], local[key]
        if ours == theirs:
            continue
        call, _, _, name = key.split(" ")
        kind = name.split("-")[0]
        if (call, kind) in KNOWN or (call, None) in KNOWN:
            continue
        detail = ["result %s, local %s" % (ours["result"], theirs["result"])] if ours["result"] != theirs["result"] else []
        for what in sorted(set(ours["after"]) | set(theirs["after"])):
            a, b = ours["after"].get(what), theirs["after"].get(what)
            if a != b:
                if a and b:
                    fields = ", ".join("%s %s/%s" % (f, a[f], b[f]) for f in a if a[f] != b[f])
                    detail.append("%s: %s" % (what, fields))
                else:
                    detail.append("%s: %s / %s" % (what, "present" if a else "absent", "present" if b else "absent"))
        differences.append("%s: %s" % (key, "; ".join(detail)))
    for line in differences:
        print("DIFF " + line)
    print("%d cases, %d differ from the local file system (%.0f s)" % (len(local), len(differences), time.time() - started))
    sys.exit(1 if differences else 0)


main()
