package dev.plinth.fuse;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_DOUBLE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * The part of libfuse 3 (3.14 on Debian 12, x86_64) that Plinth calls, through the FFM API: the
 * low-level session API and the reply functions. Struct offsets are those of x86_64 Linux, checked
 * against the C headers by {@code LibfuseLayoutTest} (gcc and libfuse3-dev, which .ci/run installs).
 *
 * <p>Only unversioned (FUSE_3.0) symbols are used, so dlsym's default version is the right one.
 */
final class Libfuse {
    private Libfuse() {}

    static final Linker LINKER = Linker.nativeLinker();

    private static final SymbolLookup LIBRARY = SymbolLookup.libraryLookup(FusePrerequisites.libraryPath(), Arena.global());

    private static MethodHandle function(String name, FunctionDescriptor descriptor) {
        MemorySegment symbol = LIBRARY.find(name).orElseThrow(() -> new IllegalStateException("libfuse3 lacks " + name));
        return LINKER.downcallHandle(symbol, descriptor);
    }

    // ---- session
    static final MethodHandle SESSION_NEW = function("fuse_session_new", FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS, JAVA_LONG, ADDRESS));
    static final MethodHandle SESSION_MOUNT = function("fuse_session_mount", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
    static final MethodHandle SESSION_UNMOUNT = function("fuse_session_unmount", FunctionDescriptor.ofVoid(ADDRESS));
    static final MethodHandle SESSION_DESTROY = function("fuse_session_destroy", FunctionDescriptor.ofVoid(ADDRESS));
    static final MethodHandle SESSION_EXIT = function("fuse_session_exit", FunctionDescriptor.ofVoid(ADDRESS));
    static final MethodHandle SESSION_EXITED = function("fuse_session_exited", FunctionDescriptor.of(JAVA_INT, ADDRESS));
    static final MethodHandle SESSION_RECEIVE_BUF = function("fuse_session_receive_buf", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
    static final MethodHandle SESSION_PROCESS_BUF = function("fuse_session_process_buf", FunctionDescriptor.ofVoid(ADDRESS, ADDRESS));
    static final MethodHandle NOTIFY_INVAL_INODE = function("fuse_lowlevel_notify_inval_inode",
            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_LONG, JAVA_LONG));

    // ---- requests and replies
    static final MethodHandle REQ_CTX = function("fuse_req_ctx", FunctionDescriptor.of(ADDRESS, ADDRESS));
    static final MethodHandle REQ_GETGROUPS = function("fuse_req_getgroups", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, ADDRESS));
    static final MethodHandle REQ_INTERRUPTED = function("fuse_req_interrupted", FunctionDescriptor.of(JAVA_INT, ADDRESS));
    static final MethodHandle REPLY_ERR = function("fuse_reply_err", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT));
    static final MethodHandle REPLY_NONE = function("fuse_reply_none", FunctionDescriptor.ofVoid(ADDRESS));
    static final MethodHandle REPLY_ENTRY = function("fuse_reply_entry", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
    static final MethodHandle REPLY_CREATE = function("fuse_reply_create", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS));
    static final MethodHandle REPLY_ATTR = function("fuse_reply_attr", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_DOUBLE));
    static final MethodHandle REPLY_READLINK = function("fuse_reply_readlink", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
    static final MethodHandle REPLY_OPEN = function("fuse_reply_open", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
    static final MethodHandle REPLY_WRITE = function("fuse_reply_write", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG));
    static final MethodHandle REPLY_BUF = function("fuse_reply_buf", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_LONG));
    static final MethodHandle REPLY_IOV = function("fuse_reply_iov", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_INT));
    static final MethodHandle REPLY_STATFS = function("fuse_reply_statfs", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
    static final MethodHandle REPLY_XATTR = function("fuse_reply_xattr", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG));
    static final MethodHandle REPLY_LOCK = function("fuse_reply_lock", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
    static final MethodHandle ADD_DIRENTRY = function("fuse_add_direntry",
            FunctionDescriptor.of(JAVA_LONG, ADDRESS, ADDRESS, JAVA_LONG, ADDRESS, ADDRESS, JAVA_LONG));
    static final MethodHandle ADD_DIRENTRY_PLUS = function("fuse_add_direntry_plus",
            FunctionDescriptor.of(JAVA_LONG, ADDRESS, ADDRESS, JAVA_LONG, ADDRESS, ADDRESS, JAVA_LONG));

    // ---- libc
    static final MethodHandle FREE = LINKER.downcallHandle(LINKER.defaultLookup().find("free").orElseThrow(),
            FunctionDescriptor.ofVoid(ADDRESS));

    // ---- struct fuse_lowlevel_ops: one function pointer per operation, in this order (8 bytes each)
    static final int OPS_SIZE = 352;
    static final int OP_INIT = 0;
    static final int OP_LOOKUP = 16;
    static final int OP_FORGET = 24;
    static final int OP_GETATTR = 32;
    static final int OP_SETATTR = 40;
    static final int OP_READLINK = 48;
    static final int OP_MKNOD = 56;
    static final int OP_MKDIR = 64;
    static final int OP_UNLINK = 72;
    static final int OP_RMDIR = 80;
    static final int OP_SYMLINK = 88;
    static final int OP_RENAME = 96;
    static final int OP_LINK = 104;
    static final int OP_OPEN = 112;
    static final int OP_READ = 120;
    static final int OP_WRITE = 128;
    static final int OP_FLUSH = 136;
    static final int OP_RELEASE = 144;
    static final int OP_FSYNC = 152;
    static final int OP_OPENDIR = 160;
    static final int OP_READDIR = 168;
    static final int OP_RELEASEDIR = 176;
    static final int OP_FSYNCDIR = 184;
    static final int OP_STATFS = 192;
    static final int OP_SETXATTR = 200;
    static final int OP_GETXATTR = 208;
    static final int OP_LISTXATTR = 216;
    static final int OP_REMOVEXATTR = 224;
    static final int OP_CREATE = 240;
    static final int OP_GETLK = 248;
    static final int OP_SETLK = 256;
    static final int OP_FORGET_MULTI = 304;
    static final int OP_FLOCK = 312;
    static final int OP_READDIRPLUS = 328;

    // ---- struct stat (x86_64)
    static final int STAT_SIZE = 144;
    static final int ST_INO = 8;
    static final int ST_NLINK = 16;
    static final int ST_MODE = 24;
    static final int ST_UID = 28;
    static final int ST_GID = 32;
    static final int ST_RDEV = 40;
    static final int ST_SIZE = 48;
    static final int ST_BLKSIZE = 56;
    static final int ST_BLOCKS = 64;
    static final int ST_ATIM = 72;
    static final int ST_MTIM = 88;
    static final int ST_CTIM = 104;

    // ---- struct fuse_entry_param
    static final int ENTRY_SIZE = 176;
    static final int ENTRY_INO = 0;
    static final int ENTRY_GENERATION = 8;
    static final int ENTRY_ATTR = 16;
    static final int ENTRY_ATTR_TIMEOUT = 160;
    static final int ENTRY_ENTRY_TIMEOUT = 168;

    // ---- struct fuse_file_info
    static final int FI_SIZE = 40;
    static final int FI_FLAGS = 0;
    static final int FI_BITS = 4;
    static final int FI_FH = 16;
    static final int FI_LOCK_OWNER = 24;
    static final byte FI_BIT_DIRECT_IO = 0x02;
    static final byte FI_BIT_KEEP_CACHE = 0x04;
    static final byte FI_BIT_FLOCK_RELEASE = 0x20;

    // ---- struct statvfs
    static final int STATVFS_SIZE = 112;
    static final int F_BSIZE = 0;
    static final int F_FRSIZE = 8;
    static final int F_BLOCKS = 16;
    static final int F_BFREE = 24;
    static final int F_BAVAIL = 32;
    static final int F_FILES = 40;
    static final int F_FFREE = 48;
    static final int F_FAVAIL = 56;
    static final int F_NAMEMAX = 80;

    // ---- struct flock
    static final int FLOCK_SIZE = 32;
    static final int L_TYPE = 0;
    static final int L_WHENCE = 2;
    static final int L_START = 8;
    static final int L_LEN = 16;
    static final int L_PID = 24;

    // ---- struct fuse_ctx
    static final int CTX_UID = 0;
    static final int CTX_GID = 4;
    static final int CTX_PID = 8;

    // ---- struct fuse_conn_info
    static final int CONN_MAX_WRITE = 8;
    static final int CONN_MAX_READ = 12;
    static final int CONN_MAX_READAHEAD = 16;
    static final int CONN_CAPABLE = 20;
    static final int CONN_WANT = 24;
    static final int CONN_MAX_BACKGROUND = 28;
    static final int CONN_CONGESTION_THRESHOLD = 32;
    static final int CONN_TIME_GRAN = 36;

    // ---- struct fuse_args, struct fuse_buf
    static final int ARGS_SIZE = 24;
    static final int BUF_SIZE = 40;
    static final int BUF_MEM = 16;

    // ---- capability bits (fuse_common.h)
    static final int CAP_ASYNC_READ = 0x1;
    static final int CAP_POSIX_LOCKS = 0x2;
    static final int CAP_ATOMIC_O_TRUNC = 0x8;
    static final int CAP_FLOCK_LOCKS = 0x400;
    static final int CAP_AUTO_INVAL_DATA = 0x1000;
    static final int CAP_READDIRPLUS = 0x2000;
    static final int CAP_READDIRPLUS_AUTO = 0x4000;
    static final int CAP_ASYNC_DIO = 0x8000;
    static final int CAP_WRITEBACK_CACHE = 0x10000;
    static final int CAP_PARALLEL_DIROPS = 0x40000;
    static final int CAP_CACHE_SYMLINKS = 0x800000;

    // ---- setattr bits
    static final int SET_ATTR_MODE = 1;
    static final int SET_ATTR_UID = 2;
    static final int SET_ATTR_GID = 4;
    static final int SET_ATTR_SIZE = 8;
    static final int SET_ATTR_ATIME = 16;
    static final int SET_ATTR_MTIME = 32;
    static final int SET_ATTR_ATIME_NOW = 128;
    static final int SET_ATTR_MTIME_NOW = 256;

    // ---- constants from Linux headers
    static final int S_IFDIR = 0040000;
    static final int S_IFREG = 0100000;
    static final int S_IFLNK = 0120000;
    static final int S_IFMT = 0170000;
    static final int O_ACCMODE = 3;
    static final int O_RDONLY = 0;
    static final int O_WRONLY = 1;
    static final int RENAME_NOREPLACE = 1;
    static final int RENAME_EXCHANGE = 2;
    static final int F_RDLCK = 0;
    static final int F_WRLCK = 1;
    static final int F_UNLCK = 2;
    static final int LOCK_EX = 2;
    static final int LOCK_NB = 4;
    static final int LOCK_UN = 8;
    static final int XATTR_CREATE = 1;
    static final int XATTR_REPLACE = 2;

    static final int EINTR = 4;
    static final int EIO = 5;
    static final int EAGAIN = 11;
    static final int ERANGE = 34;
}
