#!/usr/bin/python3
"""POSIX behaviour of a Plinth mount, checked the way applications see it.

Usage: posix_suite.py MOUNT [OTHER_MOUNT]
MOUNT and OTHER_MOUNT are two mounts of the same cluster (two clients). Runs as root; the
permission checks fork a child that drops to an unprivileged uid. Prints one line per check and
exits non-zero if any failed.
"""
import errno
import fcntl
import mmap
import os
import stat
import sys
import time
import traceback

MOUNT = sys.argv[1]
OTHER = sys.argv[2] if len(sys.argv) > 2 else None
BASE = os.path.join(MOUNT, "posix-%d" % os.getpid())
USER, GROUP = 4242, 4242
failures = []


def check(function):
    name = function.__name__
    try:
        function()
        print("ok   " + name)
    except Exception:
        failures.append(name)
        print("FAIL " + name)
        traceback.print_exc(file=sys.stdout)
    sys.stdout.flush()
    return function


def path(*parts):
    return os.path.join(BASE, *parts)


def expect_errno(code, function, *args, **kwargs):
    try:
        function(*args, **kwargs)
    except OSError as e:
        assert e.errno == code, "expected %s, got %s (%s)" % (errno.errorcode[code], errno.errorcode.get(e.errno), e)
        return
    raise AssertionError("expected %s, but %s succeeded" % (errno.errorcode[code], function.__name__))


def write_file(name, data, mode=0o644):
    with open(name, "wb") as f:
        f.write(data)
    os.chmod(name, mode)


def read_file(name):
    with open(name, "rb") as f:
        return f.read()


def as_user(function, uid=USER, gid=GROUP):
    """Runs function in a child process as uid/gid; its assertion errors fail the check."""
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            os.setgroups([])
            os.setgid(gid)
            os.setuid(uid)
            function()
        except BaseException:
            traceback.print_exc(file=sys.stdout)
            code = 1
        sys.stdout.flush()
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, "child as uid %d failed" % uid


os.makedirs(BASE)
os.chmod(BASE, 0o777)


@check
def create_exclusive_truncate_append():
    name = path("flags")
    fd = os.open(name, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o640)
    os.write(fd, b"hello world")
    os.close(fd)
    assert stat.S_IMODE(os.stat(name).st_mode) == 0o640
    expect_errno(errno.EEXIST, os.open, name, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    fd = os.open(name, os.O_WRONLY | os.O_APPEND)
    os.write(fd, b"!")
    os.close(fd)
    assert read_file(name) == b"hello world!"
    fd = os.open(name, os.O_WRONLY | os.O_TRUNC)
    assert os.fstat(fd).st_size == 0
    os.write(fd, b"new")
    os.close(fd)
    assert read_file(name) == b"new"
    fd = os.open(name, os.O_CREAT | os.O_WRONLY, 0o600)  # exists: opens it
    os.close(fd)
    assert read_file(name) == b"new"


@check
def read_write_at_offsets_and_holes():
    name = path("sparse")
    fd = os.open(name, os.O_CREAT | os.O_RDWR, 0o644)
    os.pwrite(fd, b"A" * 10, 0)
    os.pwrite(fd, b"B" * 10, 3 * 1024 * 1024 + 7)  # a hole in between, across a chunk's stripe
    os.pwrite(fd, b"C" * 5, 2)
    assert os.fstat(fd).st_size == 3 * 1024 * 1024 + 17
    os.fsync(fd)
    os.close(fd)
    data = read_file(name)
    assert data[:10] == b"AACCCCCAAA"
    assert data[10:3 * 1024 * 1024 + 7] == bytes(3 * 1024 * 1024 - 3)
    assert data[-10:] == b"B" * 10
    fd = os.open(name, os.O_RDONLY)
    assert os.pread(fd, 4, 3 * 1024 * 1024 + 15) == b"BB"
    assert os.pread(fd, 4, 10 * 1024 * 1024) == b""
    os.close(fd)


@check
def file_above_4_gib():
    name = path("big")
    offset = 5 * 1024 * 1024 * 1024 + 12345
    fd = os.open(name, os.O_CREAT | os.O_RDWR, 0o644)
    os.pwrite(fd, b"beyond4g", offset)
    os.close(fd)
    assert os.stat(name).st_size == offset + 8
    fd = os.open(name, os.O_RDONLY)
    assert os.pread(fd, 8, offset) == b"beyond4g"
    assert os.pread(fd, 8, 4 * 1024 * 1024 * 1024) == bytes(8)
    os.close(fd)
    os.unlink(name)


@check
def truncate_up_and_down():
    name = path("trunc")
    write_file(name, b"x" * 100000)
    os.truncate(name, 10)
    assert read_file(name) == b"x" * 10
    os.truncate(name, 5000)
    data = read_file(name)
    assert data == b"x" * 10 + bytes(4990), "truncate up must read zeros"
    fd = os.open(name, os.O_RDWR)
    os.ftruncate(fd, 3)
    os.pwrite(fd, b"yz", 5)
    os.close(fd)
    assert read_file(name) == b"xxx\0\0yz"


@check
def fsync_and_fdatasync():
    name = path("sync")
    fd = os.open(name, os.O_CREAT | os.O_WRONLY, 0o644)
    os.write(fd, b"durable" * 1000)
    os.fsync(fd)
    os.write(fd, b"more")
    os.fdatasync(fd)
    os.close(fd)
    assert os.stat(name).st_size == 7004
    dfd = os.open(BASE, os.O_RDONLY | os.O_DIRECTORY)
    os.fsync(dfd)
    os.close(dfd)


@check
def rename_semantics():
    os.mkdir(path("r1"))
    os.mkdir(path("r2"))
    write_file(path("r1", "a"), b"a")
    write_file(path("r2", "b"), b"b")
    os.rename(path("r1", "a"), path("r2", "b"))  # over an existing file, across directories
    assert read_file(path("r2", "b")) == b"a"
    assert not os.path.exists(path("r1", "a"))
    os.mkdir(path("r1", "empty"))
    os.mkdir(path("r1", "d"))
    write_file(path("r1", "d", "inside"), b"i")
    os.rename(path("r1", "d"), path("r1", "empty"))  # directory over an empty directory
    assert read_file(path("r1", "empty", "inside")) == b"i"
    os.mkdir(path("r1", "full"))
    write_file(path("r1", "full", "f"), b"f")
    os.mkdir(path("r1", "d2"))
    expect_errno(errno.ENOTEMPTY, os.rename, path("r1", "d2"), path("r1", "full"))
    expect_errno(errno.EISDIR, os.rename, path("r2", "b"), path("r1", "full"))
    expect_errno(errno.ENOTDIR, os.rename, path("r1", "d2"), path("r2", "b"))
    expect_errno(errno.EINVAL, os.rename, path("r1"), path("r1", "d2", "sub"))  # into itself
    expect_errno(errno.ENOENT, os.rename, path("r1", "missing"), path("r1", "x"))
    os.rename(path("r2", "b"), path("r2", "b"))  # onto itself: nothing happens
    assert read_file(path("r2", "b")) == b"a"


@check
def rename_across_file_systems_is_exdev():
    write_file(path("exdev"), b"e")
    expect_errno(errno.EXDEV, os.rename, path("exdev"), "/tmp/plinth-exdev-%d" % os.getpid())


@check
def hard_links_and_counts():
    write_file(path("h1"), b"linked")
    os.link(path("h1"), path("h2"))
    assert os.stat(path("h1")).st_nlink == 2
    assert os.stat(path("h1")).st_ino == os.stat(path("h2")).st_ino
    os.unlink(path("h1"))
    assert os.stat(path("h2")).st_nlink == 1
    assert read_file(path("h2")) == b"linked"
    os.mkdir(path("hd"))
    expect_errno(errno.EPERM, os.link, path("hd"), path("hd2"))
    expect_errno(errno.EEXIST, os.link, path("h2"), path("hd"))
    dir_links = os.stat(path("hd")).st_nlink
    os.mkdir(path("hd", "sub"))
    assert os.stat(path("hd")).st_nlink == dir_links + 1


@check
def symlinks_and_loops():
    write_file(path("target"), b"t")
    os.symlink("target", path("link"))
    assert os.readlink(path("link")) == "target"
    assert read_file(path("link")) == b"t"
    assert stat.S_ISLNK(os.lstat(path("link")).st_mode)
    os.symlink("loop2", path("loop1"))
    os.symlink("loop1", path("loop2"))
    expect_errno(errno.ELOOP, os.stat, path("loop1"))
    os.symlink("nowhere", path("dangling"))
    expect_errno(errno.ENOENT, os.stat, path("dangling"))
    assert os.lstat(path("dangling")).st_size == len("nowhere")


@check
def unlink_and_rmdir_while_open():
    write_file(path("open-unlinked"), b"still here")
    fd = os.open(path("open-unlinked"), os.O_RDWR)
    os.unlink(path("open-unlinked"))
    assert not os.path.exists(path("open-unlinked"))
    assert os.pread(fd, 100, 0) == b"still here"
    os.pwrite(fd, b"S", 0)
    assert os.pread(fd, 100, 0) == b"Still here"
    os.close(fd)
    os.mkdir(path("gone-dir"))
    dfd = os.open(path("gone-dir"), os.O_RDONLY | os.O_DIRECTORY)
    os.rmdir(path("gone-dir"))
    os.fstat(dfd)
    os.close(dfd)


@check
def unlink_while_another_client_has_it_open():
    if OTHER is None:
        return
    other_base = os.path.join(OTHER, os.path.relpath(BASE, MOUNT))
    write_file(path("shared"), b"x" * 300000)
    fd = os.open(path("shared"), os.O_RDONLY)
    os.unlink(os.path.join(other_base, "shared"))
    time.sleep(0.05)
    assert os.pread(fd, 300000, 0) == b"x" * 300000
    os.close(fd)
    expect_errno(errno.ENOENT, os.stat, os.path.join(other_base, "shared"))


@check
def close_to_open_across_clients():
    if OTHER is None:
        return
    other_base = os.path.join(OTHER, os.path.relpath(BASE, MOUNT))
    write_file(path("c2o"), b"version-1")
    assert read_file(os.path.join(other_base, "c2o")) == b"version-1"
    write_file(path("c2o"), b"version-2, longer")
    assert read_file(os.path.join(other_base, "c2o")) == b"version-2, longer"


@check
def permissions_as_a_user():
    write_file(path("root-only"), b"secret", 0o600)
    write_file(path("readable"), b"public", 0o644)
    os.mkdir(path("user-dir"))
    os.chown(path("user-dir"), USER, GROUP)
    os.mkdir(path("sticky"), 0o1777)
    os.chmod(path("sticky"), 0o1777)
    write_file(path("sticky", "roots"), b"r", 0o666)

    def user_checks():
        expect_errno(errno.EACCES, open, path("root-only"), "rb")
        assert read_file(path("readable")) == b"public"
        expect_errno(errno.EACCES, open, path("readable"), "ab")
        expect_errno(errno.EPERM, os.chmod, path("readable"), 0o777)
        expect_errno(errno.EPERM, os.chown, path("readable"), USER, GROUP)
        expect_errno(errno.EPERM, os.utime, path("readable"), (1, 1))
        expect_errno(errno.EACCES, os.utime, path("readable"), None)
        expect_errno(errno.EPERM, os.unlink, path("sticky", "roots"))
        mine = path("user-dir", "mine")
        write_file(mine, b"m", 0o600)
        os.chmod(mine, 0o640)
        assert stat.S_IMODE(os.stat(mine).st_mode) == 0o640
        os.utime(mine, (1000000000, 1000000000))
        assert int(os.stat(mine).st_mtime) == 1000000000
        os.utime(mine, None)
        assert os.stat(mine).st_mtime > 1000000000
        expect_errno(errno.EPERM, os.chown, mine, 0, 0)
        os.chmod(path("user-dir"), 0o500)
        expect_errno(errno.EACCES, write_file, path("user-dir", "denied"), b"x")
        os.chmod(path("user-dir"), 0o700)

    as_user(user_checks)
    os.chown(path("readable"), USER, GROUP)
    st = os.stat(path("readable"))
    assert (st.st_uid, st.st_gid) == (USER, GROUP)
    os.utime(path("readable"), ns=(1_500_000_000_123_456_789, 1_600_000_000_987_654_321))
    st = os.stat(path("readable"))
    assert st.st_mtime_ns == 1_600_000_000_987_654_321, st.st_mtime_ns
    assert st.st_atime_ns == 1_500_000_000_123_456_789, st.st_atime_ns


@check
def set_id_bits_go_with_a_write_by_another():
    """A write or truncate by anyone but root, and a chown by anyone, clears S_ISUID (and S_ISGID with group-execute, or by a writer outside the file's group)."""
    os.mkdir(path("setid"), 0o777)
    os.chmod(path("setid"), 0o777)
    for mode in (0o4777, 0o2777, 0o6777):
        name = path("setid", "w%o" % mode)
        write_file(name, b"x", mode)
        assert stat.S_IMODE(os.stat(name).st_mode) == mode

        def user_writes(name=name):
            with open(name, "r+b") as f:  # O_RDWR: the write must succeed, not fail with EPERM
                f.write(b"y")
            assert stat.S_IMODE(os.stat(name).st_mode) == 0o777, oct(os.stat(name).st_mode)

        as_user(user_writes)
        assert read_file(name) == b"y"
    name = path("setid", "truncated")
    write_file(name, b"xyz", 0o6777)
    as_user(lambda: os.truncate(name, 1))
    assert stat.S_IMODE(os.stat(name).st_mode) == 0o777
    name = path("setid", "rooted")
    write_file(name, b"x", 0o4755)
    with open(name, "ab") as f:  # root keeps it (CAP_FSETID)
        f.write(b"y")
    assert stat.S_IMODE(os.stat(name).st_mode) == 0o4755
    os.chown(name, USER, GROUP)  # a chown clears it, even root's
    assert stat.S_IMODE(os.stat(name).st_mode) == 0o755
    # set-group-ID without group-execute stays for a writer in the file's group and goes for
    # anyone else (Linux 6.2 on: setattr_should_drop_sgid)
    name = path("setid", "group-writer")
    write_file(name, b"x", 0o2666)
    os.chown(name, 0, GROUP)
    os.chmod(name, 0o2666)
    as_user(lambda: open(name, "ab").write(b"y"))
    assert stat.S_IMODE(os.stat(name).st_mode) == 0o2666
    name = path("setid", "other-writer")
    write_file(name, b"x", 0o2666)
    as_user(lambda: open(name, "ab").write(b"y"))
    assert stat.S_IMODE(os.stat(name).st_mode) == 0o666


@check
def ftruncate_uses_the_descriptors_access():
    os.mkdir(path("ftruncate"), 0o777)
    os.chmod(path("ftruncate"), 0o777)

    def user_checks():
        fd = os.open(path("ftruncate", "mode0"), os.O_CREAT | os.O_RDWR, 0)
        try:
            os.write(fd, b"hello")
            os.ftruncate(fd, 2)  # the descriptor is open for writing: the file's mode 0 does not matter
            assert os.fstat(fd).st_size == 2
        finally:
            os.close(fd)
        expect_errno(errno.EACCES, os.truncate, path("ftruncate", "mode0"), 1)  # by name the mode does

    as_user(user_checks)
    assert read_file(path("ftruncate", "mode0")) == b"he"


@check
def rename_changes_ctime():
    write_file(path("renamed"), b"r")
    os.mkdir(path("rename-to"))
    before = os.stat(path("renamed")).st_ctime_ns
    parent_before = os.stat(BASE)
    time.sleep(0.05)
    os.rename(path("renamed"), path("rename-to", "renamed"))
    assert os.stat(path("rename-to", "renamed")).st_ctime_ns > before
    parent_after = os.stat(BASE)
    assert parent_after.st_mtime_ns > parent_before.st_mtime_ns and parent_after.st_ctime_ns > parent_before.st_ctime_ns


@check
def rename_exchange_swaps_two_names():
    """renameat2(RENAME_EXCHANGE): across directories, a directory's link moves with it, and never into itself."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)

    def exchange(a, b):
        if libc.renameat2(-100, a.encode(), -100, b.encode(), 2) != 0:
            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code))

    os.makedirs(path("swap-a", "dir", "inner"))
    os.mkdir(path("swap-b"))
    write_file(path("swap-b", "file"), b"file")
    links_a, links_b = os.stat(path("swap-a")).st_nlink, os.stat(path("swap-b")).st_nlink
    exchange(path("swap-a", "dir"), path("swap-b", "file"))
    assert read_file(path("swap-a", "dir")) == b"file"
    assert os.path.isdir(path("swap-b", "file", "inner"))
    assert os.stat(path("swap-a")).st_nlink == links_a - 1 and os.stat(path("swap-b")).st_nlink == links_b + 1
    assert os.stat(path("swap-b", "file", "..")).st_ino == os.stat(path("swap-b")).st_ino
    expect_errno(errno.EINVAL, exchange, path("swap-b", "file"), path("swap-b", "file", "inner"))
    expect_errno(errno.ENOENT, exchange, path("swap-a", "dir"), path("swap-a", "absent"))


@check
def special_files_are_inodes_of_their_type():
    """mkfifo, mknod of devices, and a Unix socket's bind make inodes that behave as other inodes do."""
    import socket
    os.mkdir(path("special"))
    os.mkfifo(path("special", "fifo"), 0o640)
    os.mknod(path("special", "chr"), 0o600 | stat.S_IFCHR, os.makedev(1, 3))
    os.mknod(path("special", "blk"), 0o600 | stat.S_IFBLK, os.makedev(7, 0))
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path("special", "sock"))
    server.close()
    kinds = {name: os.lstat(path("special", name)) for name in ("fifo", "chr", "blk", "sock")}
    assert stat.S_ISFIFO(kinds["fifo"].st_mode) and stat.S_IMODE(kinds["fifo"].st_mode) == 0o640
    assert stat.S_ISCHR(kinds["chr"].st_mode) and kinds["chr"].st_rdev == os.makedev(1, 3), kinds["chr"].st_rdev
    assert stat.S_ISBLK(kinds["blk"].st_mode) and kinds["blk"].st_rdev == os.makedev(7, 0)
    assert stat.S_ISSOCK(kinds["sock"].st_mode)
    with os.scandir(path("special")) as entries:
        assert sorted(e.name for e in entries) == ["blk", "chr", "fifo", "sock"]
    # a FIFO carries data between processes of this host, as on a local file system
    pid = os.fork()
    if pid == 0:
        with open(path("special", "fifo"), "wb") as writer:
            writer.write(b"through the pipe")
        os._exit(0)
    with open(path("special", "fifo"), "rb") as reader:
        assert reader.read() == b"through the pipe"
    os.waitpid(pid, 0)
    # what works on other inodes works on these
    os.chmod(path("special", "fifo"), 0o600)
    os.chown(path("special", "fifo"), USER, GROUP)
    assert (os.stat(path("special", "fifo")).st_uid, stat.S_IMODE(os.stat(path("special", "fifo")).st_mode)) == (USER, 0o600)
    os.utime(path("special", "chr"), (1_000_000_000, 1_000_000_000))
    assert int(os.stat(path("special", "chr")).st_mtime) == 1_000_000_000
    os.link(path("special", "fifo"), path("special", "fifo-link"))
    assert os.stat(path("special", "fifo")).st_nlink == 2
    os.rename(path("special", "fifo-link"), path("special", "fifo-renamed"))
    expect_errno(errno.EEXIST, os.mkfifo, path("special", "fifo"))
    expect_errno(errno.EEXIST, os.mknod, path("special", "chr"), 0o600 | stat.S_IFCHR, os.makedev(1, 3))
    expect_errno(errno.ENOTDIR, os.mkfifo, path("special", "fifo", "below"))
    os.mkdir(path("special-full"))
    os.mkfifo(path("special-full", "inside"))
    os.mkdir(path("special-empty"))
    expect_errno(errno.ENOTEMPTY, os.rename, path("special-empty"), path("special-full"))
    expect_errno(errno.ENOTEMPTY, os.rmdir, path("special-full"))
    os.mkdir(path("special-sticky"), 0o1777)
    os.chmod(path("special-sticky"), 0o1777)
    os.mkfifo(path("special-sticky", "roots"), 0o666)

    def user_checks():
        expect_errno(errno.EPERM, os.unlink, path("special-sticky", "roots"))
        expect_errno(errno.EPERM, os.mknod, path("special-sticky", "dev"), 0o600 | stat.S_IFCHR, os.makedev(1, 3))
        os.mkfifo(path("special-sticky", "users"))
        os.unlink(path("special-sticky", "users"))

    as_user(user_checks)
    for name in ("fifo", "fifo-renamed", "chr", "blk", "sock"):
        os.unlink(path("special", name))
    assert os.listdir(path("special")) == []


@check
def user_xattrs():
    name = path("xattr")
    write_file(name, b"x")
    os.setxattr(name, "user.shard", b"0007")
    os.setxattr(name, "user.empty", b"")
    assert os.getxattr(name, "user.shard") == b"0007"
    assert os.getxattr(name, "user.empty") == b""
    assert sorted(a for a in os.listxattr(name) if a.startswith("user.")) == ["user.empty", "user.shard"]
    expect_errno(errno.EEXIST, os.setxattr, name, "user.shard", b"1", os.XATTR_CREATE)
    expect_errno(errno.ENODATA, os.setxattr, name, "user.none", b"1", os.XATTR_REPLACE)
    os.removexattr(name, "user.shard")
    expect_errno(errno.ENODATA, os.getxattr, name, "user.shard")
    os.setxattr(name, "user.big", b"v" * 4000)
    assert os.getxattr(name, "user.big") == b"v" * 4000


@check
def file_capabilities_go_with_a_write():
    """A write strips security.capability (the kernel asks for it before each write; the mount
    may answer from what it fetched within the attribute timeout, and forgets it on a change)."""
    import struct
    capability = struct.pack("<IIIII", 0x02000001, 1 << 10, 0, 0, 0)  # v2, effective, cap_net_bind_service
    name = path("capped")
    write_file(name, b"x", 0o666)
    with open(name, "r+b", buffering=0) as f:
        f.write(b"y")  # the mount now holds "none" for this file
        os.setxattr(name, "security.capability", capability)
        assert os.getxattr(name, "security.capability") == capability
        f.write(b"z")  # even root's write strips it: the cached "none" must not hide it
    expect_errno(errno.ENODATA, os.getxattr, name, "security.capability")
    os.setxattr(name, "security.capability", capability)
    if OTHER:
        assert os.getxattr(os.path.join(OTHER, os.path.relpath(name, MOUNT)), "security.capability") == capability

    def user_writes():
        with open(name, "ab", buffering=0) as f:
            f.write(b"u")

    as_user(user_writes)
    expect_errno(errno.ENODATA, os.getxattr, name, "security.capability")
    assert read_file(name) == b"yzu"


@check
def error_codes():
    expect_errno(errno.ENOENT, os.stat, path("no", "such"))
    write_file(path("plain"), b"p")
    expect_errno(errno.ENOTDIR, os.stat, path("plain", "child"))
    expect_errno(errno.ENOTDIR, os.mkdir, path("plain", "child"))
    expect_errno(errno.ENOTDIR, os.rmdir, path("plain"))
    os.mkdir(path("adir"))
    expect_errno(errno.EISDIR, open, path("adir"), "wb")
    expect_errno(errno.EISDIR, os.unlink, path("adir"))
    write_file(path("adir", "f"), b"f")
    expect_errno(errno.ENOTEMPTY, os.rmdir, path("adir"))
    expect_errno(errno.EEXIST, os.mkdir, path("adir"))
    expect_errno(errno.ENAMETOOLONG, os.stat, path("n" * 256))
    expect_errno(errno.ENAMETOOLONG, write_file, path("n" * 256), b"")
    write_file(path("n" * 255), b"longest name")
    assert read_file(path("n" * 255)) == b"longest name"


@check
def statfs_has_real_capacity():
    st = os.statvfs(MOUNT)
    assert st.f_blocks > 0 and st.f_bsize > 0
    assert 0 < st.f_bavail <= st.f_blocks
    assert st.f_namemax == 255


@check
def mmap_reads_and_writes():
    name = path("mapped")
    write_file(name, b"\0" * 3 * 4096)
    with open(name, "r+b") as f:
        m = mmap.mmap(f.fileno(), 0)
        m[0:5] = b"hello"
        m[8192:8197] = b"world"
        m.flush()
        m.close()
    data = read_file(name)
    assert data[0:5] == b"hello" and data[8192:8197] == b"world"
    with open(name, "rb") as f:
        m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
        assert m[8192:8197] == b"world"
        m.close()


@check
def flock_and_fcntl_locks_between_processes():
    name = path("locked")
    write_file(name, b"l" * 100)
    with open(name, "r+b") as holder:
        fcntl.flock(holder, fcntl.LOCK_EX)
        pid = os.fork()
        if pid == 0:
            with open(name, "r+b") as other:
                try:
                    fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    os._exit(1)
                except BlockingIOError:
                    os._exit(0)
        _, status = os.waitpid(pid, 0)
        assert os.WEXITSTATUS(status) == 0, "flock must conflict"
        fcntl.flock(holder, fcntl.LOCK_UN)
        fcntl.lockf(holder, fcntl.LOCK_EX, 10, 0)
        pid = os.fork()
        if pid == 0:
            with open(name, "r+b") as other:
                try:
                    fcntl.lockf(other, fcntl.LOCK_EX | fcntl.LOCK_NB, 10, 5)
                    os._exit(1)
                except OSError:
                    pass
                fcntl.lockf(other, fcntl.LOCK_EX | fcntl.LOCK_NB, 10, 10)  # next to it: no conflict
                os._exit(0)
        _, status = os.waitpid(pid, 0)
        assert os.WEXITSTATUS(status) == 0, "byte-range locks must conflict only where they overlap"


@check
def locks_are_coherent_across_clients():
    if OTHER is None:
        return
    other_name = os.path.join(OTHER, os.path.relpath(BASE, MOUNT), "cluster-locked")
    name = path("cluster-locked")
    write_file(name, b"c" * 100)
    with open(name, "r+b") as holder, open(other_name, "r+b") as other:
        fcntl.flock(holder, fcntl.LOCK_SH)
        fcntl.flock(other, fcntl.LOCK_SH | fcntl.LOCK_NB)  # shared locks share
        try:
            fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
            raise AssertionError("flock LOCK_EX must conflict with another client's LOCK_SH")
        except BlockingIOError:
            pass
        fcntl.flock(holder, fcntl.LOCK_UN)
        fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.flock(other, fcntl.LOCK_UN)
        fcntl.lockf(holder, fcntl.LOCK_EX, 50, 0)
        try:
            fcntl.lockf(other, fcntl.LOCK_SH | fcntl.LOCK_NB, 10, 40)
            raise AssertionError("fcntl lock must conflict with another client's lock")
        except OSError as e:
            assert e.errno in (errno.EAGAIN, errno.EACCES), e
        fcntl.lockf(other, fcntl.LOCK_EX | fcntl.LOCK_NB, 10, 50)  # past it: free
        import struct
        query = struct.pack("hhqqi", fcntl.F_WRLCK, 0, 0, 10, 0)
        answer = struct.unpack("hhqqi", fcntl.fcntl(other.fileno(), fcntl.F_GETLK, query + bytes(32 - len(query)))[:28])
        assert answer[0] == fcntl.F_WRLCK and answer[2] == 0 and answer[3] == 50, answer
    # closing the holder released its locks: a blocking lock from the other client gets it
    with open(other_name, "r+b") as other:
        fcntl.lockf(other, fcntl.LOCK_EX, 0, 0)
        fcntl.flock(other, fcntl.LOCK_EX)


@check
def many_blocked_lockers_do_not_stall_the_mount():
    if OTHER is None:
        return
    name = path("contended")
    other_name = os.path.join(OTHER, os.path.relpath(BASE, MOUNT), "contended")
    write_file(name, b"")
    waiters = 24  # more than the mount's worker threads
    with open(name, "r+b") as holder:
        fcntl.flock(holder, fcntl.LOCK_EX)
        children = []
        for _ in range(waiters):
            pid = os.fork()
            if pid == 0:
                holder.close()  # the holder's flock belongs to its open file, which the child inherited
                with open(other_name, "r+b") as f:
                    fcntl.flock(f, fcntl.LOCK_EX)  # blocks until the holder lets go
                    fcntl.flock(f, fcntl.LOCK_UN)
                os._exit(0)
            children.append(pid)
        time.sleep(1)
        started = time.time()
        os.stat(other_name)  # the blocked lockers must not hold every worker of the other mount
        os.listdir(os.path.join(OTHER, os.path.relpath(BASE, MOUNT)))
        assert time.time() - started < 5, "the mount stalled behind blocked lockers"
        assert all(os.waitpid(pid, os.WNOHANG) == (0, 0) for pid in children), "a locker got the lock while it was held"
    for pid in children:
        _, status = os.waitpid(pid, 0)
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


@check
def directory_listing():
    os.mkdir(path("list"))
    names = ["f%03d" % i for i in range(300)]
    for n in names:
        os.mknod(path("list", n), 0o644 | stat.S_IFREG)
    listed = os.listdir(path("list"))
    assert sorted(listed) == names, "listdir: %d entries" % len(listed)
    with os.scandir(path("list")) as entries:
        kinds = {e.name: e.is_file() for e in entries}
    assert all(kinds.values()) and len(kinds) == 300


print("%d checks failed: %s" % (len(failures), failures) if failures else "all checks passed")
sys.exit(1 if failures else 0)
