package dev.plinth.fuse;

import static dev.plinth.fuse.Libfuse.*;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_DOUBLE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import dev.plinth.client.PlinthClient;
import dev.plinth.client.PlinthFile;
import dev.plinth.common.Credentials;
import dev.plinth.common.ErrorCode;
import dev.plinth.common.FileType;
import dev.plinth.common.PlinthException;
import dev.plinth.common.Settings;
import dev.plinth.wire.messages.MetaMessages;
import dev.plinth.wire.messages.MetaMessages.Attributes;
import dev.plinth.wire.messages.MetaMessages.CreateReply;
import dev.plinth.wire.messages.MetaMessages.StatFsReply;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The FUSE low-level operations, served by the native client. Each method is the target of an
 * FFM upcall that libfuse makes on one of {@link FuseMount}'s worker threads; it answers the
 * request with exactly one reply before returning, and never lets an exception escape (an
 * exception in an upcall would end the JVM).
 *
 * <p>Inode numbers are Plinth inode ids (the root, MDT 0 inode 1, is FUSE's root id 1). The
 * kernel's lookup counts are not tracked: every answer comes from the metadata service, so
 * there is nothing to forget. Each request runs with its caller's uid and groups bound as
 * {@link PlinthClient#CALLER}, so the metadata service checks permissions as the caller.
 */
final class FuseOperations {
    private static final Logger LOG = LoggerFactory.getLogger(FuseOperations.class);
    /** The largest read or write the kernel sends (max_write and max_pages) and read-ahead. */
    static final int MAX_IO_BYTES = 1 << 20;
    private static final int READDIR_PAGE = 1024;
    private static final int GROUPS_MAX = 256;

    private final PlinthClient client;
    private final boolean readOnly;
    private final double attrTimeoutSeconds;
    private final double entryTimeoutSeconds;
    private final AtomicLong handles = new AtomicLong();
    private final Map<Long, OpenFile> files = new ConcurrentHashMap<>();
    private final Map<Long, Set<OpenFile>> openByInode = new ConcurrentHashMap<>();
    private final Map<Long, DirHandle> dirs = new ConcurrentHashMap<>();
    /** What each inode looked like when this mount last had it open: unchanged means cached pages are still good. */
    private final CacheValidators validators = new CacheValidators(100_000);
    private final ThreadLocal<Scratch> scratch = ThreadLocal.withInitial(Scratch::new);
    private final CapabilityCache capabilities;

    /**
     * One open(2) of a file through this mount. {@code direct}: opened write-only, so the kernel
     * sends writes straight from the caller's buffer instead of copying them through its page
     * cache first (one copy fewer per byte); nothing can read or map through such a handle.
     */
    record OpenFile(long inodeId, PlinthFile file, boolean writable, boolean direct) {}

    /** Native memory a worker thread reuses for every request it serves. */
    private static final class Scratch {
        final Arena arena = Arena.ofAuto();
        final MemorySegment data = arena.allocate(MAX_IO_BYTES + 4096, 4096);
        final MemorySegment stat = arena.allocate(STAT_SIZE, 8);
        final MemorySegment entry = arena.allocate(ENTRY_SIZE, 8);
        final MemorySegment statvfs = arena.allocate(STATVFS_SIZE, 8);
        final MemorySegment groups = arena.allocate(4L * GROUPS_MAX, 4);
        /** struct iovec[READ_IOV_MAX]: base pointer and length, 8 bytes each. */
        final MemorySegment iov = arena.allocate(ReadReply.IOVEC_BYTES * READ_IOV_MAX, 8);
    }

    /** Pieces one read reply may point at (see {@link ReadReply}). */
    static final int READ_IOV_MAX = 256;

    private final io.prometheus.metrics.core.metrics.Counter operationCount;
    private final io.prometheus.metrics.core.metrics.Histogram operationDuration;

    FuseOperations(PlinthClient client, MountOptions options, io.prometheus.metrics.model.registry.PrometheusRegistry registry) {
        client.jobStats().register(registry);
        this.jobVariables = client.jobIdVariables();
        this.operationCount = dev.plinth.wire.Metrics.counter(registry, "plinth_fuse_operations",
                "FUSE operations served, by operation and result (OK or the error code).", "operation", "result");
        this.operationDuration = dev.plinth.wire.Metrics.latency(registry, "plinth_fuse_operation_duration_seconds",
                "Time to serve a FUSE operation, by operation.", "operation");
        this.client = client;
        this.readOnly = options.readOnly();
        this.attrTimeoutSeconds = options.config().get(Settings.MOUNT_ATTR_TIMEOUT_MILLIS) / 1000.0;
        this.entryTimeoutSeconds = options.config().get(Settings.MOUNT_ENTRY_TIMEOUT_MILLIS) / 1000.0;
        this.capabilities = new CapabilityCache(options.config().get(Settings.MOUNT_ATTR_TIMEOUT_MILLIS),
                inode -> client.getXattr(inode, CapabilityCache.NAME));
    }

    /** The libfuse session, once mounted: needed to send the kernel invalidations. */
    private volatile MemorySegment session;

    void attach(MemorySegment session) {
        this.session = session;
    }

    /** Files open through this mount now. */
    int openFiles() {
        return files.size();
    }

    // ---- the operations table

    /** Builds struct fuse_lowlevel_ops with an upcall stub for each operation Plinth serves. */
    MemorySegment operationsTable(Arena arena) {
        MemorySegment ops = arena.allocate(OPS_SIZE, 8);
        put(ops, arena, OP_INIT, "init", FunctionDescriptor.ofVoid(ADDRESS, ADDRESS));
        put(ops, arena, OP_LOOKUP, "lookup", FunctionDescriptor.ofVoid(ADDRESS, JAVA_LONG, ADDRESS));
        put(ops, arena, OP_FORGET, "forget", FunctionDescriptor.ofVoid(ADDRESS, JAVA_LONG, JAVA_LONG));
        put(ops, arena, OP_FORGET_MULTI, "forgetMulti", FunctionDescriptor.ofVoid(ADDRESS, JAVA_LONG, ADDRESS));
        put(ops, arena, OP_GETATTR, "getattr", FunctionDescriptor.ofVoid(ADDRESS, JAVA_LONG, ADDRESS));
        put(ops, arena, OP_SETATTR, "setattr", FunctionDescriptor.ofVoid(ADDRESS, JAVA_LONG, ADDRESS, JAVA_INT, ADDRESS));
        put(ops, arena, OP_READLINK, "readlink", FunctionDescriptor.ofVoid(ADDRESS, JAVA_LONG));
        put(ops, arena, OP_MKNOD, "mknod", FunctionDescriptor.ofVoid(ADDRESS, JAVA_LONG, ADDRESS, JAVA_INT, JAVA_LONG));
        put(ops, arena, OP_MKDIR, "mkdir", FunctionDescriptor.ofVoid(ADDRESS, JAVA_LONG, ADDRESS, JAVA_INT));
        put(ops, arena, OP_UNLINK, "unlink", FunctionDescriptor.ofVoid(ADDRESS, JAVA_LONG, ADDRESS));
        put(ops, arena, OP_RMDIR, "rmdir", FunctionDescriptor.ofVoid(ADDRESS, JAVA_LONG, ADDRESS));
        put(ops, arena, OP_SYMLINK, "symlink", FunctionDescriptor.ofVoid(ADDRESS, ADDRESS, JAVA_LONG, ADDRESS));
        put(ops, arena, OP_RENAME, "rename", FunctionDescriptor.ofVoid(ADDRESS, JAVA_LONG, ADDRESS, JAVA_LONG, ADDRESS, JAVA_INT));
        put(ops, arena, OP_LINK, "link", FunctionDescriptor.ofVoid(ADDRESS, JAVA_LONG, JAVA_LONG, ADDRESS));
        put(ops, arena, OP_OPEN, "open", FunctionDescriptor.ofVoid(ADDRESS, JAVA_LONG, ADDRESS));
        put(ops, arena, OP_READ, "read", FunctionDescriptor.ofVoid(ADDRESS, JAVA_LONG, JAVA_LONG, JAVA_LONG, ADDRESS));
        put(ops, arena, OP_WRITE, "write", FunctionDescriptor.ofVoid(ADDRESS, JAVA_LONG, ADDRESS, JAVA_LONG, JAVA_LONG, ADDRESS));
        put(ops, arena, OP_FLUSH, "flush", FunctionDescriptor.ofVoid(ADDRESS, JAVA_LONG, ADDRESS));
        put(ops, arena, OP_RELEASE, "release", FunctionDescriptor.ofVoid(ADDRESS, JAVA_LONG, ADDRESS));
        put(ops, arena, OP_FSYNC, "fsync", FunctionDescriptor.ofVoid(ADDRESS, JAVA_LONG, JAVA_INT, ADDRESS));
        put(ops, arena, OP_OPENDIR, "opendir", FunctionDescriptor.ofVoid(ADDRESS, JAVA_LONG, ADDRESS));
        put(ops, arena, OP_READDIR, "readdir", FunctionDescriptor.ofVoid(ADDRESS, JAVA_LONG, JAVA_LONG, JAVA_LONG, ADDRESS));
        put(ops, arena, OP_READDIRPLUS, "readdirplus", FunctionDescriptor.ofVoid(ADDRESS, JAVA_LONG, JAVA_LONG, JAVA_LONG, ADDRESS));
        put(ops, arena, OP_RELEASEDIR, "releasedir", FunctionDescriptor.ofVoid(ADDRESS, JAVA_LONG, ADDRESS));
        put(ops, arena, OP_FSYNCDIR, "fsyncdir", FunctionDescriptor.ofVoid(ADDRESS, JAVA_LONG, JAVA_INT, ADDRESS));
        put(ops, arena, OP_STATFS, "statfs", FunctionDescriptor.ofVoid(ADDRESS, JAVA_LONG));
        put(ops, arena, OP_SETXATTR, "setxattr", FunctionDescriptor.ofVoid(ADDRESS, JAVA_LONG, ADDRESS, ADDRESS, JAVA_LONG, JAVA_INT));
        put(ops, arena, OP_GETXATTR, "getxattr", FunctionDescriptor.ofVoid(ADDRESS, JAVA_LONG, ADDRESS, JAVA_LONG));
        put(ops, arena, OP_LISTXATTR, "listxattr", FunctionDescriptor.ofVoid(ADDRESS, JAVA_LONG, JAVA_LONG));
        put(ops, arena, OP_REMOVEXATTR, "removexattr", FunctionDescriptor.ofVoid(ADDRESS, JAVA_LONG, ADDRESS));
        put(ops, arena, OP_CREATE, "create", FunctionDescriptor.ofVoid(ADDRESS, JAVA_LONG, ADDRESS, JAVA_INT, ADDRESS));
        put(ops, arena, OP_GETLK, "getlk", FunctionDescriptor.ofVoid(ADDRESS, JAVA_LONG, ADDRESS, ADDRESS));
        put(ops, arena, OP_SETLK, "setlk", FunctionDescriptor.ofVoid(ADDRESS, JAVA_LONG, ADDRESS, ADDRESS, JAVA_INT));
        put(ops, arena, OP_FLOCK, "flock", FunctionDescriptor.ofVoid(ADDRESS, JAVA_LONG, ADDRESS, JAVA_INT));
        return ops;
    }

    private void put(MemorySegment ops, Arena arena, int offset, String method, FunctionDescriptor descriptor) {
        try {
            MethodType type = descriptor.toMethodType();
            MethodHandle target = MethodHandles.lookup().findVirtual(FuseOperations.class, method, type).bindTo(this);
            ops.set(ADDRESS, offset, LINKER.upcallStub(target, descriptor, arena));
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("no upcall target " + method, e);
        }
    }

    // ---- connection

    void init(MemorySegment userdata, MemorySegment connection) {
        try {
            MemorySegment conn = connection.reinterpret(128);
            int capable = conn.get(JAVA_INT, CONN_CAPABLE);
            int want = conn.get(JAVA_INT, CONN_WANT);
            want |= capable & (CAP_ASYNC_READ | CAP_READDIRPLUS | CAP_READDIRPLUS_AUTO | CAP_AUTO_INVAL_DATA
                    | CAP_PARALLEL_DIROPS | CAP_ATOMIC_O_TRUNC | CAP_ASYNC_DIO | CAP_CACHE_SYMLINKS
                    | CAP_POSIX_LOCKS | CAP_FLOCK_LOCKS);
            want &= ~CAP_WRITEBACK_CACHE; // writes go through to the cluster: other clients see them after close
            conn.set(JAVA_INT, CONN_WANT, want);
            conn.set(JAVA_INT, CONN_MAX_WRITE, MAX_IO_BYTES);
            conn.set(JAVA_INT, CONN_MAX_READAHEAD, MAX_IO_BYTES);
            conn.set(JAVA_INT, CONN_MAX_READ, MAX_IO_BYTES); // must match the max_read mount option
            conn.set(JAVA_INT, CONN_MAX_BACKGROUND, 64);
            conn.set(JAVA_INT, CONN_CONGESTION_THRESHOLD, 48);
            conn.set(JAVA_INT, CONN_TIME_GRAN, 1);
        } catch (Throwable e) {
            LOG.error("FUSE init failed", e);
        }
    }

    // ---- names

    void lookup(MemorySegment req, long parent, MemorySegment name) {
        serve(req, "lookup", () -> replyEntry(req, client.lookup(parent, string(name))));
    }

    void forget(MemorySegment req, long ino, long lookups) {
        replyNone(req);
    }

    void forgetMulti(MemorySegment req, long count, MemorySegment forgets) {
        replyNone(req);
    }

    void getattr(MemorySegment req, long ino, MemorySegment fi) {
        serve(req, "getattr", () -> {
            Attributes attributes;
            try {
                attributes = client.getAttr(ino);
            } catch (PlinthException e) {
                // the kernel asks for a directory's attributes without its handle: find an open one
                DirHandle removed = e.code() != ErrorCode.NOT_FOUND ? null
                        : dirs.values().stream().filter(dir -> dir.lastKnown().inodeId() == ino).findAny().orElse(null);
                if (removed == null) {
                    throw e;
                }
                attributes = removed.lastKnown().withLinkCount(0); // fstat of an open directory that was removed, as a local file system answers
            }
            replyAttr(req, attributes);
        });
    }

    void setattr(MemorySegment req, long ino, MemorySegment stat, int toSet, MemorySegment fi) {
        serve(req, "setattr", () -> {
            MemorySegment attr = stat.reinterpret(STAT_SIZE);
            Attributes changed = null; // what the last change returned: current unless only the size changed
            if ((toSet & SET_ATTR_SIZE) != 0) {
                requireWritable();
                truncate(ino, attr.get(JAVA_LONG, ST_SIZE), fi);
            }
            int mask = 0;
            if ((toSet & SET_ATTR_MODE) != 0) {
                mask |= MetaMessages.SET_MODE;
            }
            if ((toSet & SET_ATTR_UID) != 0) {
                mask |= MetaMessages.SET_UID;
            }
            if ((toSet & SET_ATTR_GID) != 0) {
                mask |= MetaMessages.SET_GID;
            }
            if (mask != 0) {
                requireWritable();
                changed = client.setAttr(ino, mask, attr.get(JAVA_INT, ST_MODE) & 07777, attr.get(JAVA_INT, ST_UID),
                        attr.get(JAVA_INT, ST_GID), 0, 0, 0);
            }
            Attributes timesChanged = setTimes(ino, attr, toSet);
            if (timesChanged != null) {
                changed = timesChanged;
            }
            replyAttr(req, changed != null ? changed : client.getAttr(ino));
        });
    }

    /** utimensat: each of atime and mtime is left alone, set to now, or set to a given time. Returns the attributes after, or null if neither changed. */
    private Attributes setTimes(long ino, MemorySegment attr, int toSet) {
        int now = 0;
        int given = 0;
        if ((toSet & SET_ATTR_ATIME_NOW) != 0) {
            now |= MetaMessages.SET_ATIME;
        } else if ((toSet & SET_ATTR_ATIME) != 0) {
            given |= MetaMessages.SET_ATIME;
        }
        if ((toSet & SET_ATTR_MTIME_NOW) != 0) {
            now |= MetaMessages.SET_MTIME;
        } else if ((toSet & SET_ATTR_MTIME) != 0) {
            given |= MetaMessages.SET_MTIME;
        }
        if ((now | given) != 0) {
            requireWritable();
        }
        Attributes after = null;
        if (now != 0) {
            after = client.setAttr(ino, now | MetaMessages.SET_TIMES_NOW, 0, 0, 0, 0, 0, 0);
        }
        if (given != 0) {
            after = client.setAttr(ino, given, 0, 0, 0, 0, timespecNanos(attr, ST_ATIM), timespecNanos(attr, ST_MTIM));
        }
        return after;
    }

    private void truncate(long ino, long size, MemorySegment fi) {
        OpenFile open = fi.equals(MemorySegment.NULL) ? null : files.get(fileHandle(fi));
        if (open != null && open.writable()) {
            open.file().truncate(size);
        } else {
            open = null;
            try (PlinthFile file = client.open(ino, true)) {
                file.truncate(size);
            }
        }
        for (OpenFile other : openByInode.getOrDefault(ino, Set.of())) {
            if (other != open) {
                other.file().observeTruncate(size);
            }
        }
    }

    void readlink(MemorySegment req, long ino) {
        serve(req, "readlink", () -> {
            try (Arena arena = Arena.ofConfined()) {
                reply(REPLY_READLINK, req, arena.allocateFrom(client.readLink(ino)));
            }
        });
    }

    void mknod(MemorySegment req, long parent, MemorySegment name, int mode, long rdev) {
        serve(req, "mknod", () -> {
            FileType type = FileType.ofMode(mode);
            requireWritable();
            if (type == FileType.FILE) {
                replyEntry(req, client.create(parent, string(name), mode & 07777, true, null).attributes());
            } else if (type != null && type.special()) {
                replyEntry(req, client.makeNode(parent, string(name), type, mode & 07777, rdev));
            } else {
                throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "mknod of mode " + Integer.toOctalString(mode));
            }
        });
    }

    void mkdir(MemorySegment req, long parent, MemorySegment name, int mode) {
        serve(req, "mkdir", () -> {
            requireWritable();
            replyEntry(req, client.mkdir(parent, string(name), mode & 07777));
        });
    }

    void unlink(MemorySegment req, long parent, MemorySegment name) {
        serve(req, "unlink", () -> {
            requireWritable();
            client.unlink(parent, string(name));
            replyError(req, 0);
        });
    }

    void rmdir(MemorySegment req, long parent, MemorySegment name) {
        serve(req, "rmdir", () -> {
            requireWritable();
            client.rmdir(parent, string(name));
            replyError(req, 0);
        });
    }

    void symlink(MemorySegment req, MemorySegment target, long parent, MemorySegment name) {
        serve(req, "symlink", () -> {
            requireWritable();
            replyEntry(req, client.symlink(parent, string(name), string(target)));
        });
    }

    void rename(MemorySegment req, long parent, MemorySegment name, long newParent, MemorySegment newName, int flags) {
        serve(req, "rename", () -> {
            requireWritable();
            if ((flags & RENAME_EXCHANGE) != 0) {
                client.exchange(parent, string(name), newParent, string(newName));
            } else {
                client.rename(parent, string(name), newParent, string(newName), (flags & RENAME_NOREPLACE) != 0);
            }
            replyError(req, 0);
        });
    }

    void link(MemorySegment req, long ino, long newParent, MemorySegment newName) {
        serve(req, "link", () -> {
            requireWritable();
            replyEntry(req, client.link(ino, newParent, string(newName)));
        });
    }

    // ---- files

    void create(MemorySegment req, long parent, MemorySegment name, int mode, MemorySegment fi) {
        serve(req, "create", () -> {
            requireWritable();
            MemorySegment info = fi.reinterpret(FI_SIZE);
            int flags = info.get(JAVA_INT, FI_FLAGS);
            // the kernel asks to create only after a lookup found nothing, so this is one change: create and open
            boolean exclusive = (flags & 0200) != 0;
            OpenFile open;
            boolean existed;
            if ((flags & O_ACCMODE) == O_RDONLY) { // O_CREAT|O_RDONLY: rare, and an existing file then needs only read access
                CreateReply created = client.create(parent, string(name), mode & 07777, exclusive, null);
                open = openFile(created.attributes().inodeId(), flags);
                existed = !created.created();
            } else {
                PlinthClient.OpenedFile created = client.createAndOpen(parent, string(name), mode & 07777, exclusive, null);
                open = new OpenFile(created.file().inodeId(), created.file(), true, (flags & O_ACCMODE) == O_WRONLY);
                existed = !created.created();
            }
            if (existed && (flags & 01000) != 0 && open.writable()) {
                open.file().truncate(0);
            }
            if (open.direct()) {
                info.set(JAVA_BYTE, FI_BITS, (byte) (info.get(JAVA_BYTE, FI_BITS) | FI_BIT_DIRECT_IO));
            }
            info.set(JAVA_LONG, FI_FH, register(open));
            Scratch memory = scratch.get();
            fillEntry(memory.entry, withOpenSize(open.file().attributes()));
            reply(REPLY_CREATE, req, memory.entry, info);
        });
    }

    void open(MemorySegment req, long ino, MemorySegment fi) {
        serve(req, "open", () -> {
            MemorySegment info = fi.reinterpret(FI_SIZE);
            int flags = info.get(JAVA_INT, FI_FLAGS);
            if ((flags & O_ACCMODE) != O_RDONLY) {
                requireWritable();
            }
            OpenFile open = openFile(ino, flags);
            if ((flags & 01000) != 0 && open.writable()) { // O_TRUNC (atomic_o_trunc)
                open.file().truncate(0);
            }
            byte bits = info.get(JAVA_BYTE, FI_BITS);
            if (validators.unchanged(open.file().attributes()) && (flags & 01000) == 0) {
                bits |= FI_BIT_KEEP_CACHE;
            } else {
                // changed elsewhere (or never seen): the kernel drops cached pages itself when keep_cache is
                // off, but keeps cached attributes until they time out; make it ask again, or it would
                // read the new contents only up to the old size
                invalidate(ino, -1, 0); // -1: attributes only
            }
            if (open.direct()) {
                bits |= FI_BIT_DIRECT_IO;
            }
            info.set(JAVA_BYTE, FI_BITS, bits);
            info.set(JAVA_LONG, FI_FH, register(open));
            reply(REPLY_OPEN, req, info);
        });
    }

    /** Makes the kernel drop what it cached of an inode: its attributes, and with {@code offset} >= 0 those pages too. */
    private void invalidate(long ino, long offset, long length) throws Throwable {
        MemorySegment connected = session;
        if (connected != null) {
            int ignored = (int) NOTIFY_INVAL_INODE.invokeExact(connected, ino, offset, length);
        }
    }

    private OpenFile openFile(long ino, int flags) {
        boolean writable = (flags & O_ACCMODE) != O_RDONLY;
        PlinthFile file = client.open(ino, writable);
        return new OpenFile(ino, file, writable, (flags & O_ACCMODE) == O_WRONLY);
    }

    private long register(OpenFile open) {
        long fh = handles.incrementAndGet();
        files.put(fh, open);
        openByInode.computeIfAbsent(open.inodeId(), k -> ConcurrentHashMap.newKeySet()).add(open);
        return fh;
    }

    /**
     * Answers with the client's own verified buffers (fuse_reply_iov), so the kernel copies the
     * bytes once, straight into the reader's pages; they were copied into a buffer of ours first.
     */
    void read(MemorySegment req, long ino, long size, long offset, MemorySegment fi) {
        serve(req, "read", () -> {
            OpenFile open = handle(fi);
            int length = (int) Math.min(size, MAX_IO_BYTES);
            if (offset + length > open.file().size()) {
                catchUpWithOtherHandles(open);
            }
            List<io.netty.buffer.ByteBuf> buffers = open.file().readBuffers(offset, length); // up to the end of the file
            try {
                Scratch memory = scratch.get();
                int entries = ReadReply.gather(buffers, memory.iov, READ_IOV_MAX, memory.data);
                checkReply((int) REPLY_IOV.invokeExact(req, memory.iov, entries));
            } finally {
                buffers.forEach(io.netty.buffer.ByteBuf::release);
            }
        });
    }

    /** Another handle of this mount may have written past what this one knows: a reader sees its own process's writes. */
    private void catchUpWithOtherHandles(OpenFile reader) {
        Set<OpenFile> others = openByInode.get(reader.inodeId());
        if (others == null) {
            return;
        }
        for (OpenFile other : others) {
            if (other != reader && other.writable()) {
                other.file().flush();
                reader.file().observeSize(other.file().size());
            }
        }
    }

    void write(MemorySegment req, long ino, MemorySegment buffer, long size, long offset, MemorySegment fi) {
        serve(req, "write", () -> {
            OpenFile open = handle(fi);
            if (open.direct()) {
                stripCapability(ino);
            }
            boolean clearsPrivileges = open.file().clearsPrivilegesOnWrite();
            int written = open.file().write(offset, buffer.reinterpret(size).asByteBuffer());
            if (clearsPrivileges) {
                invalidate(ino, -1, 0); // set-user-ID went with this write (handle_killpriv): the kernel's cached mode is stale
            }
            if (open.direct() && openByInode.getOrDefault(ino, Set.of()).size() > 1) {
                // a write around the page cache: pages other open handles cached for this range are stale now
                invalidate(ino, offset, size);
            }
            reply(REPLY_WRITE, req, (long) written);
        });
    }

    /** Every close(2): what was written becomes visible to other clients (close-to-open), and errors surface here. */
    void flush(MemorySegment req, long ino, MemorySegment fi) {
        serve(req, "flush", () -> {
            OpenFile open = handle(fi);
            try {
                if (open.writable()) {
                    open.file().publish();
                }
            } finally {
                // close(2) drops the process's fcntl locks on the file, whichever descriptor took them
                releaseLocks(ino, lockOwner(fi), MetaMessages.LOCK_POSIX);
            }
            replyError(req, 0);
        });
    }

    void release(MemorySegment req, long ino, MemorySegment fi) {
        serve(req, "release", () -> {
            long fh = fileHandle(fi);
            if ((fi.reinterpret(FI_SIZE).get(JAVA_BYTE, FI_BITS) & FI_BIT_FLOCK_RELEASE) != 0) {
                releaseLocks(ino, lockOwner(fi), MetaMessages.LOCK_FLOCK);
            }
            OpenFile open = files.remove(fh);
            if (open != null) {
                Set<OpenFile> same = openByInode.get(open.inodeId());
                if (same != null) {
                    same.remove(open);
                    openByInode.computeIfPresent(open.inodeId(), (k, set) -> set.isEmpty() ? null : set);
                }
                try {
                    open.file().close();
                    if (open.direct()) {
                        validators.forget(open.inodeId()); // it wrote around the page cache: the next open drops cached pages
                    } else {
                        validators.remember(open.file().attributes());
                    }
                } catch (RuntimeException e) {
                    validators.forget(open.inodeId()); // the next open starts cold
                    throw e;
                }
            }
            replyError(req, 0);
        });
    }

    void fsync(MemorySegment req, long ino, int dataOnly, MemorySegment fi) {
        serve(req, "fsync", () -> {
            OpenFile open = handle(fi);
            if (open.writable()) {
                open.file().fsync();
            }
            replyError(req, 0);
        });
    }

    // ---- locks

    /** Which (inode, owner, kind) took a lock through this mount: only those need an unlock at close. */
    private record LockHolder(long inodeId, long owner, int kind) {}

    private final Set<LockHolder> lockHolders = ConcurrentHashMap.newKeySet();
    private static final long LOCK_WAIT_MAX_MILLIS = 100;
    private static final int LOCK_WAITERS_MAX = 4096;
    private final java.util.concurrent.atomic.AtomicInteger lockWaiters = new java.util.concurrent.atomic.AtomicInteger();
    private volatile boolean stopping;

    void getlk(MemorySegment req, long ino, MemorySegment fi, MemorySegment flock) {
        serve(req, "getlk", () -> {
            MemorySegment lock = flock.reinterpret(FLOCK_SIZE);
            MetaMessages.LockReply reply = client.getLock(ino, posixLock(lock, lockOwner(fi)));
            if (reply.granted()) {
                lock.set(JAVA_SHORT, L_TYPE, (short) F_UNLCK);
            } else {
                MetaMessages.FileLock conflict = reply.conflicts().getFirst();
                lock.set(JAVA_SHORT, L_TYPE, (short) (conflict.type() == MetaMessages.LOCK_WRITE ? F_WRLCK : F_RDLCK));
                lock.set(JAVA_SHORT, L_WHENCE, (short) 0);
                lock.set(JAVA_LONG, L_START, conflict.start());
                lock.set(JAVA_LONG, L_LEN, conflict.end() == MetaMessages.LOCK_TO_END ? 0 : conflict.end() - conflict.start());
                lock.set(JAVA_INT, L_PID, conflict.pid());
            }
            reply(REPLY_LOCK, req, lock);
        });
    }

    void setlk(MemorySegment req, long ino, MemorySegment fi, MemorySegment flock, int sleep) {
        serve(req, "setlk", () -> {
            MetaMessages.FileLock lock = posixLock(flock.reinterpret(FLOCK_SIZE), lockOwner(fi));
            if (lockOrWait(req, ino, lock, sleep != 0)) {
                replyError(req, 0);
            }
        });
    }

    void flock(MemorySegment req, long ino, MemorySegment fi, int operation) {
        serve(req, "flock", () -> {
            int type = (operation & LOCK_UN) != 0 ? MetaMessages.LOCK_UNLOCK
                    : (operation & LOCK_EX) != 0 ? MetaMessages.LOCK_WRITE : MetaMessages.LOCK_READ;
            MetaMessages.FileLock lock = new MetaMessages.FileLock(0, lockOwner(fi), pid(req), MetaMessages.LOCK_FLOCK, type,
                    0, MetaMessages.LOCK_TO_END);
            if (lockOrWait(req, ino, lock, (operation & LOCK_NB) == 0)) {
                replyError(req, 0);
            }
        });
    }

    /**
     * Takes the lock and returns true, or fails if it is held and the caller will not wait. A
     * caller that waits gets its answer from a waiter thread (replies may come from any thread), so
     * blocked lockers never hold the mount's worker threads; false means the waiter will reply.
     */
    private boolean lockOrWait(MemorySegment req, long ino, MetaMessages.FileLock lock, boolean wait) {
        if (lock.type() != MetaMessages.LOCK_UNLOCK) {
            lockHolders.add(new LockHolder(ino, lock.owner(), lock.kind()));
        }
        if (client.setLock(ino, lock).granted()) {
            return true;
        }
        if (!wait) {
            throw new PlinthException(ErrorCode.WOULD_BLOCK, "lock held by another owner");
        }
        if (lockWaiters.incrementAndGet() > LOCK_WAITERS_MAX) {
            lockWaiters.decrementAndGet();
            throw new PlinthException(ErrorCode.TOO_MANY_LOCKS, "too many processes waiting for locks on this mount");
        }
        Credentials caller = PlinthClient.CALLER.get();
        Thread.ofVirtual().name("plinth-lock-wait").start(() -> {
            try {
                ScopedValue.where(PlinthClient.CALLER, caller).run(() -> awaitLock(req, ino, lock));
            } finally {
                lockWaiters.decrementAndGet();
            }
        });
        return false;
    }

    /** Polls until the lock is granted (reply 0), the caller is interrupted (EINTR) or the mount stops (no reply). */
    private void awaitLock(MemorySegment req, long ino, MetaMessages.FileLock lock) {
        long delayMillis = 2;
        try {
            while (!stopping) {
                if (interrupted(req)) {
                    replyError(req, ErrorCode.INTERRUPTED.errno());
                    return;
                }
                Thread.sleep(delayMillis);
                delayMillis = Math.min(LOCK_WAIT_MAX_MILLIS, delayMillis * 2);
                if (client.setLock(ino, lock).granted()) {
                    replyError(req, 0);
                    return;
                }
            }
        } catch (PlinthException e) {
            replyError(req, e.code().retryable() ? EIO : e.code().errno());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (RuntimeException e) {
            LOG.error("waiting for a lock failed", e);
            replyError(req, EIO);
        }
    }

    /** Stops lock waiters (before the session goes away: a reply after that would touch freed memory). */
    void stop() throws InterruptedException {
        stopping = true;
        for (int i = 0; i < 50 && lockWaiters.get() > 0; i++) {
            Thread.sleep(LOCK_WAIT_MAX_MILLIS);
        }
    }

    private void releaseLocks(long ino, long owner, int kind) {
        if (lockHolders.remove(new LockHolder(ino, owner, kind))) {
            client.setLock(ino, new MetaMessages.FileLock(0, owner, 0, kind, MetaMessages.LOCK_UNLOCK, 0, MetaMessages.LOCK_TO_END));
        }
    }

    private static MetaMessages.FileLock posixLock(MemorySegment flock, long owner) {
        int type = switch (flock.get(JAVA_SHORT, L_TYPE)) {
            case F_RDLCK -> MetaMessages.LOCK_READ;
            case F_WRLCK -> MetaMessages.LOCK_WRITE;
            case F_UNLCK -> MetaMessages.LOCK_UNLOCK;
            default -> throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "lock type " + flock.get(JAVA_SHORT, L_TYPE));
        };
        long start = flock.get(JAVA_LONG, L_START);
        long length = flock.get(JAVA_LONG, L_LEN);
        long end = length == 0 ? MetaMessages.LOCK_TO_END : start + length; // libfuse hands over start and a length >= 0
        return new MetaMessages.FileLock(0, owner, flock.get(JAVA_INT, L_PID), MetaMessages.LOCK_POSIX, type, start, end);
    }

    private static long lockOwner(MemorySegment fi) {
        return fi.reinterpret(FI_SIZE).get(JAVA_LONG, FI_LOCK_OWNER);
    }

    private static int pid(MemorySegment req) throws Throwable {
        return ((MemorySegment) REQ_CTX.invokeExact(req)).reinterpret(16).get(JAVA_INT, CTX_PID);
    }

    // ---- directories

    void opendir(MemorySegment req, long ino, MemorySegment fi) {
        serve(req, "opendir", () -> {
            Attributes attributes = client.getAttr(ino);
            if (!attributes.isDirectory()) {
                throw new PlinthException(ErrorCode.NOT_A_DIRECTORY, "opendir");
            }
            long fh = handles.incrementAndGet();
            dirs.put(fh, new DirHandle(client, attributes, READDIR_PAGE));
            MemorySegment info = fi.reinterpret(FI_SIZE);
            info.set(JAVA_LONG, FI_FH, fh);
            reply(REPLY_OPEN, req, info);
        });
    }

    void readdir(MemorySegment req, long ino, long size, long offset, MemorySegment fi) {
        serve(req, "readdir", () -> fillDirectory(req, ino, size, offset, fi, false));
    }

    void readdirplus(MemorySegment req, long ino, long size, long offset, MemorySegment fi) {
        serve(req, "readdirplus", () -> fillDirectory(req, ino, size, offset, fi, true));
    }

    /**
     * Fills one reply with entries from {@code offset}: "." and ".." first, then the children in
     * name order. Each entry's offset cookie is its index plus one, so the kernel resumes after it.
     */
    private void fillDirectory(MemorySegment req, long ino, long size, long offset, MemorySegment fi, boolean plus) throws Throwable {
        DirHandle dir = dirs.get(fileHandle(fi));
        if (dir == null) {
            throw new PlinthException(ErrorCode.BAD_DESCRIPTOR, "unknown directory handle");
        }
        Scratch memory = scratch.get();
        long capacity = Math.min(size, memory.data.byteSize());
        long used = 0;
        try (Arena arena = Arena.ofConfined()) {
            synchronized (dir) {
                for (long index = offset; ; index++) {
                    DirHandle.Entry entry = dir.entry(index);
                    if (entry == null) {
                        break;
                    }
                    MemorySegment name = arena.allocateFrom(entry.name());
                    MemorySegment slot = memory.data.asSlice(used);
                    long needed;
                    if (plus) {
                        fillEntry(memory.entry, entry.attributes());
                        if (entry.name().equals(".") || entry.name().equals("..")) {
                            memory.entry.set(JAVA_LONG, ENTRY_INO, 0L); // no lookup count for these
                            memory.entry.set(JAVA_LONG, ENTRY_ATTR + ST_INO, entry.attributes().inodeId());
                        }
                        needed = (long) ADD_DIRENTRY_PLUS.invokeExact(req, slot, capacity - used, name, memory.entry, index + 1);
                    } else {
                        fillStat(memory.stat, entry.attributes());
                        needed = (long) ADD_DIRENTRY.invokeExact(req, slot, capacity - used, name, memory.stat, index + 1);
                    }
                    if (needed > capacity - used) {
                        break;
                    }
                    used += needed;
                }
            }
        }
        reply(REPLY_BUF, req, memory.data, used);
    }

    void releasedir(MemorySegment req, long ino, MemorySegment fi) {
        dirs.remove(fileHandle(fi));
        replyError(req, 0);
    }

    void fsyncdir(MemorySegment req, long ino, int dataOnly, MemorySegment fi) {
        // directory changes are in the metadata log before they are acknowledged
        replyError(req, 0);
    }

    void statfs(MemorySegment req, long ino) {
        serve(req, "statfs", () -> {
            StatFsReply fs = client.statFs();
            MemorySegment st = scratch.get().statvfs;
            st.fill((byte) 0);
            long block = Math.max(512, fs.blockSizeBytes());
            st.set(JAVA_LONG, F_BSIZE, block);
            st.set(JAVA_LONG, F_FRSIZE, block);
            st.set(JAVA_LONG, F_BLOCKS, fs.capacityBytes() / block);
            st.set(JAVA_LONG, F_BFREE, fs.freeBytes() / block);
            st.set(JAVA_LONG, F_BAVAIL, fs.freeBytes() / block);
            long freeInodes = Math.max(0, (1L << 40) - fs.inodes());
            st.set(JAVA_LONG, F_FILES, fs.inodes() + freeInodes);
            st.set(JAVA_LONG, F_FFREE, freeInodes);
            st.set(JAVA_LONG, F_FAVAIL, freeInodes);
            st.set(JAVA_LONG, F_NAMEMAX, dev.plinth.common.Names.NAME_BYTES_MAX);
            reply(REPLY_STATFS, req, st);
        });
    }

    // ---- extended attributes

    void setxattr(MemorySegment req, long ino, MemorySegment name, MemorySegment value, long size, int flags) {
        serve(req, "setxattr", () -> {
            requireWritable();
            byte[] bytes = value.reinterpret(size).toArray(JAVA_BYTE);
            String attribute = string(name);
            try {
                client.setXattr(ino, attribute, bytes, flags & (XATTR_CREATE | XATTR_REPLACE));
            } finally {
                forgetCapability(ino, attribute);
            }
            replyError(req, 0);
        });
    }

    void getxattr(MemorySegment req, long ino, MemorySegment name, long size) {
        serve(req, "getxattr", () -> {
            String attribute = string(name);
            if (!attribute.equals(CapabilityCache.NAME)) {
                replyXattr(req, client.getXattr(ino, attribute), size);
                return;
            }
            byte[] value = capabilities.get(ino);
            if (value == null) {
                throw new PlinthException(ErrorCode.NO_ATTRIBUTE, attribute);
            }
            replyXattr(req, value, size);
        });
    }

    /**
     * The kernel strips file capabilities before a write through its page cache, but not before
     * one it passes straight on (a direct handle, opened write-only), which a FUSE file system is
     * to handle as it does set-user-ID bits: removed here, as the kernel would remove it, whoever
     * writes (the removal needs no permission of the writer's).
     */
    private void stripCapability(long inodeId) {
        if (capabilities.get(inodeId) == null) {
            return;
        }
        try {
            ScopedValue.where(PlinthClient.CALLER, Credentials.ROOT).run(() -> client.removeXattr(inodeId, CapabilityCache.NAME));
        } catch (PlinthException e) {
            if (e.code() != ErrorCode.NO_ATTRIBUTE) {
                throw e;
            }
        } finally {
            capabilities.forget(inodeId);
        }
    }

    private void forgetCapability(long inodeId, String attribute) {
        if (attribute.equals(CapabilityCache.NAME)) {
            capabilities.forget(inodeId);
        }
    }

    void listxattr(MemorySegment req, long ino, long size) {
        serve(req, "listxattr", () -> {
            java.io.ByteArrayOutputStream names = new java.io.ByteArrayOutputStream();
            for (String name : client.listXattr(ino)) {
                names.writeBytes(name.getBytes(StandardCharsets.UTF_8));
                names.write(0);
            }
            replyXattr(req, names.toByteArray(), size);
        });
    }

    void removexattr(MemorySegment req, long ino, MemorySegment name) {
        serve(req, "removexattr", () -> {
            requireWritable();
            String attribute = string(name);
            try {
                client.removeXattr(ino, attribute);
            } finally {
                forgetCapability(ino, attribute);
            }
            replyError(req, 0);
        });
    }

    /** size 0 asks how big the value is; a smaller buffer than the value gets ERANGE. */
    private void replyXattr(MemorySegment req, byte[] value, long size) throws Throwable {
        if (size == 0) {
            reply(REPLY_XATTR, req, (long) value.length);
        } else if (value.length > size) {
            replyError(req, ERANGE);
        } else {
            MemorySegment data = scratch.get().data;
            MemorySegment.copy(value, 0, data, JAVA_BYTE, 0, value.length);
            reply(REPLY_BUF, req, data, (long) value.length);
        }
    }

    // ---- helpers

    /** Operations that name their inode by number: a missing inode there means a stale cached name. */
    private static final Set<String> BY_INODE = Set.of("getattr", "setattr", "open", "opendir", "readlink", "getxattr",
            "listxattr", "setxattr", "removexattr", "link");

    private interface Action {
        void run() throws Throwable;
    }

    /**
     * Runs one operation as its caller and answers the request with an errno if it fails. Nothing
     * escapes: an exception thrown out of an upcall would end the process.
     */
    private void serve(MemorySegment req, String operation, Action action) {
        long start = System.nanoTime();
        String result = "OK";
        try {
            Credentials caller = credentials(req);
            String job = jobOf(pid(req), caller.uid());
            ScopedValue.where(PlinthClient.CALLER, caller).where(PlinthClient.JOB, job).where(PlinthClient.CANCELLED, () -> interrupted(req))
                    .call(() -> {
                try {
                    action.run();
                } catch (Exception | Error e) {
                    throw e;
                } catch (Throwable e) {
                    throw new IllegalStateException(e);
                }
                return null;
            });
        } catch (PlinthException e) {
            result = e.code().name();
            if (e.code() == ErrorCode.NOT_FOUND && BY_INODE.contains(operation)) {
                // the kernel's cached name points at an inode that is gone (replaced by a rename or unlinked
                // elsewhere): ESTALE makes the VFS look the name up again and retry, as NFS's close-to-open does
                replyError(req, ErrorCode.STALE_HANDLE.errno());
                return;
            }
            if (e.code().retryable()) {
                // the cluster stayed unavailable for the whole retry window (a soft mount's timeo): EIO, as NFS soft mounts
                LOG.warn("{} failed: cluster unavailable: {}", operation, e.getMessage());
                replyError(req, EIO);
                return;
            }
            if (e.code() == ErrorCode.INTERNAL || e.code() == ErrorCode.IO_ERROR || e.code() == ErrorCode.PROTOCOL_ERROR) {
                LOG.warn("{} failed: {}", operation, e.getMessage());
            }
            replyError(req, e.code().errno());
        } catch (Throwable e) {
            result = ErrorCode.INTERNAL.name();
            LOG.error("{} failed unexpectedly", operation, e);
            replyError(req, EIO);
        } finally {
            operationCount.labelValues(operation, result).inc();
            operationDuration.labelValues(operation).observe((System.nanoTime() - start) / 1e9);
        }
    }

    // ---- jobs: which job a request belongs to, from its caller's environment (Lustre's jobid_var)

    private record CachedJob(String jobId, long expiresNanos) {}

    private static final int JOB_CACHE_MAX = 4096;
    private static final long JOB_CACHE_NANOS = 5_000_000_000L;
    private final List<String> jobVariables;
    /** Job of each recent caller pid, for a few seconds: reading /proc for every request would cost more than the request. */
    private final Map<Integer, CachedJob> jobsByPid = java.util.Collections.synchronizedMap(
            new java.util.LinkedHashMap<>(256, 0.75f, true) {
                @Override
                protected boolean removeEldestEntry(Map.Entry<Integer, CachedJob> eldest) {
                    return size() > JOB_CACHE_MAX;
                }
            });

    private String jobOf(int pid, int uid) {
        long now = System.nanoTime();
        CachedJob cached = jobsByPid.get(pid);
        if (cached != null && now < cached.expiresNanos()) {
            return cached.jobId();
        }
        String job = readJob(pid, uid);
        jobsByPid.put(pid, new CachedJob(job, now + JOB_CACHE_NANOS));
        return job;
    }

    /** The job named by the caller's environment, else COMMAND.UID; pid 0 is the kernel itself (writeback). */
    private String readJob(int pid, int uid) {
        if (pid <= 0) {
            return "kernel." + uid;
        }
        Map<String, String> environment = new java.util.HashMap<>();
        String command = "unknown";
        try {
            byte[] raw = java.nio.file.Files.readAllBytes(java.nio.file.Path.of("/proc", Integer.toString(pid), "environ"));
            for (String entry : new String(raw, java.nio.charset.StandardCharsets.UTF_8).split("\0")) {
                int equals = entry.indexOf('=');
                if (equals > 0 && jobVariables.contains(entry.substring(0, equals))) {
                    environment.put(entry.substring(0, equals), entry.substring(equals + 1));
                }
            }
            command = java.nio.file.Files.readString(java.nio.file.Path.of("/proc", Integer.toString(pid), "comm")).strip();
        } catch (java.io.IOException | RuntimeException e) {
            // the process ended, or its environment is not ours to read: its command name, or unknown
        }
        return dev.plinth.client.JobStats.jobOf(environment, jobVariables, command, uid);
    }

    /** Whether the kernel told us the caller was interrupted by a signal (FUSE_INTERRUPT). */
    private static boolean interrupted(MemorySegment req) {
        try {
            return (int) REQ_INTERRUPTED.invokeExact(req) != 0;
        } catch (Throwable e) {
            return false;
        }
    }

    private Credentials credentials(MemorySegment req) throws Throwable {
        MemorySegment ctx = ((MemorySegment) REQ_CTX.invokeExact(req)).reinterpret(16);
        int uid = ctx.get(JAVA_INT, CTX_UID);
        int gid = ctx.get(JAVA_INT, CTX_GID);
        if (uid == 0) {
            return Credentials.ROOT;
        }
        MemorySegment groups = scratch.get().groups;
        int count = (int) REQ_GETGROUPS.invokeExact(req, GROUPS_MAX, groups);
        List<Integer> list = new ArrayList<>();
        for (int i = 0; i < Math.min(Math.max(count, 0), GROUPS_MAX); i++) {
            list.add(groups.getAtIndex(JAVA_INT, i));
        }
        return new Credentials(uid, gid, list);
    }

    private void requireWritable() {
        if (readOnly) {
            throw new PlinthException(ErrorCode.READ_ONLY, "mounted read-only");
        }
    }

    private OpenFile handle(MemorySegment fi) {
        OpenFile open = files.get(fileHandle(fi));
        if (open == null) {
            throw new PlinthException(ErrorCode.BAD_DESCRIPTOR, "unknown file handle");
        }
        return open;
    }

    private static long fileHandle(MemorySegment fi) {
        return fi.reinterpret(FI_SIZE).get(JAVA_LONG, FI_FH);
    }

    private static String string(MemorySegment cString) {
        return cString.reinterpret(Integer.MAX_VALUE).getString(0, StandardCharsets.UTF_8);
    }

    private static long timespecNanos(MemorySegment stat, int offset) {
        return stat.get(JAVA_LONG, offset) * 1_000_000_000L + stat.get(JAVA_LONG, offset + 8);
    }

    /** The attributes with the size this mount's open writers have reached (the cluster learns it at close or fsync). */
    private Attributes withOpenSize(Attributes attributes) {
        Set<OpenFile> open = openByInode.get(attributes.inodeId());
        if (open == null || attributes.type() != FileType.FILE) {
            return attributes;
        }
        long size = attributes.sizeBytes();
        for (OpenFile file : open) {
            if (file.writable()) {
                size = Math.max(size, file.file().size());
            }
        }
        return size == attributes.sizeBytes() ? attributes : attributes.withSizeBytes(size);
    }

    private void fillStat(MemorySegment stat, Attributes attributes) {
        stat.fill((byte) 0);
        stat.set(JAVA_LONG, ST_INO, attributes.inodeId());
        stat.set(JAVA_LONG, ST_NLINK, attributes.linkCount());
        stat.set(JAVA_INT, ST_MODE, attributes.type().modeBits() | (attributes.mode() & 07777));
        stat.set(JAVA_LONG, ST_RDEV, attributes.rdev());
        stat.set(JAVA_INT, ST_UID, attributes.uid());
        stat.set(JAVA_INT, ST_GID, attributes.gid());
        stat.set(JAVA_LONG, ST_SIZE, attributes.sizeBytes());
        stat.set(JAVA_LONG, ST_BLKSIZE, MAX_IO_BYTES);
        // a released file holds no blocks here, but reports one, as Lustre does: archivers that skip sparse files must not skip it
        stat.set(JAVA_LONG, ST_BLOCKS, dev.plinth.wire.messages.HsmMessages.released(attributes) ? Math.min(1, attributes.sizeBytes())
                : (attributes.sizeBytes() + 511) / 512);
        setTimespec(stat, ST_ATIM, attributes.atimeNanos());
        setTimespec(stat, ST_MTIM, attributes.mtimeNanos());
        setTimespec(stat, ST_CTIM, attributes.ctimeNanos());
    }

    private static void setTimespec(MemorySegment stat, int offset, long nanos) {
        stat.set(JAVA_LONG, offset, Math.floorDiv(nanos, 1_000_000_000L));
        stat.set(JAVA_LONG, offset + 8, Math.floorMod(nanos, 1_000_000_000L));
    }

    private void fillEntry(MemorySegment entry, Attributes attributes) {
        entry.fill((byte) 0);
        entry.set(JAVA_LONG, ENTRY_INO, attributes.inodeId());
        entry.set(JAVA_LONG, ENTRY_GENERATION, attributes.generation());
        fillStat(entry.asSlice(ENTRY_ATTR, STAT_SIZE), attributes);
        entry.set(JAVA_DOUBLE, ENTRY_ATTR_TIMEOUT, attrTimeoutSeconds);
        entry.set(JAVA_DOUBLE, ENTRY_ENTRY_TIMEOUT, entryTimeoutSeconds);
    }

    private void replyEntry(MemorySegment req, Attributes attributes) throws Throwable {
        MemorySegment entry = scratch.get().entry;
        fillEntry(entry, withOpenSize(attributes));
        reply(REPLY_ENTRY, req, entry);
    }

    private void replyAttr(MemorySegment req, Attributes attributes) throws Throwable {
        MemorySegment stat = scratch.get().stat;
        fillStat(stat, withOpenSize(attributes));
        int result = (int) REPLY_ATTR.invokeExact(req, stat, attrTimeoutSeconds);
        checkReply(result);
    }

    private static void reply(MethodHandle function, MemorySegment req, MemorySegment argument) throws Throwable {
        checkReply((int) function.invokeExact(req, argument));
    }

    private static void reply(MethodHandle function, MemorySegment req, MemorySegment first, MemorySegment second) throws Throwable {
        checkReply((int) function.invokeExact(req, first, second));
    }

    private static void reply(MethodHandle function, MemorySegment req, long value) throws Throwable {
        checkReply((int) function.invokeExact(req, value));
    }

    private static void reply(MethodHandle function, MemorySegment req, MemorySegment data, long length) throws Throwable {
        checkReply((int) function.invokeExact(req, data, length));
    }

    /** A failed reply (the caller was interrupted and went away) is not an error of the operation. */
    private static void checkReply(int result) {
        if (result != 0 && result != -2) { // -ENOENT: the request was interrupted
            LOG.debug("FUSE reply failed: {}", result);
        }
    }

    private static void replyError(MemorySegment req, int errno) {
        try {
            int ignored = (int) REPLY_ERR.invokeExact(req, errno);
        } catch (Throwable e) {
            LOG.error("fuse_reply_err failed", e);
        }
    }

    private static void replyNone(MemorySegment req) {
        try {
            REPLY_NONE.invokeExact(req);
        } catch (Throwable e) {
            LOG.error("fuse_reply_none failed", e);
        }
    }
}
