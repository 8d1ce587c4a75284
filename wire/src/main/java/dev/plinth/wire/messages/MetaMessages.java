package dev.plinth.wire.messages;

import dev.plinth.common.Credentials;
import dev.plinth.common.FileType;
import dev.plinth.common.Layout;
import java.util.List;

/**
 * The namespace API. Every request carries an {@link OpHeader}: who calls (for permission checks),
 * and for changes a client id and request id so that a retried change is applied once.
 */
public final class MetaMessages {
    private MetaMessages() {}

    /** {@code timeNanos} is set by the metadata leader, never trusted from the client. */
    public record OpHeader(long clientId, long requestId, Credentials credentials, long timeNanos) {
        public OpHeader withTime(long nanos) {
            return new OpHeader(clientId, requestId, credentials, nanos);
        }
    }

    /** A request that changes the namespace: it goes through the Raft log. */
    public sealed interface Mutation permits Create, Mkdir, Symlink, SetAttr, Unlink, Rmdir, Rename, Link,
            SetXattr, RemoveXattr, Open, Close, SetLayout, OpenSession, RenewSession, CloseSession, ExpireSessions, PurgeRemoved,
            SetLock, Publish, WriteInline, PutWhole, MakeNode, HsmMessages.SetHsmFlags, HsmMessages.RequestAction,
            HsmMessages.TakeActions, HsmMessages.ReportProgress, HsmMessages.FinishAction, TouchAtimes,
            HsmMessages.ForgetRemovedCopies, SwapLayout, Exchange, ReplaceCellChains, CrossMdtMessages.PrepareRemoteMkdir,
            CrossMdtMessages.PrepareRemoteRemoval, CrossMdtMessages.PrepareRemoteLink, CrossMdtMessages.PrepareRemoteRename,
            CrossMdtMessages.FinishRemoteIntent, CrossMdtMessages.MakeRemoteDirectory, CrossMdtMessages.RemoveRemoteDirectory,
            CrossMdtMessages.AdjustRemoteLinks, CrossMdtMessages.EnterRenamed, CrossMdtMessages.SetRemoteParent, CrossMdtMessages.ForgetAppliedIntent,
            CrossMdtMessages.RenameLock, MarkCellsStale, ClearStaleCells {
        OpHeader header();
    }

    /** A request that only reads: served by the leader without a log entry. */
    public sealed interface Query permits Lookup, ResolvePath, GetAttr, ReadDir, ReadDirPlus, ReadLink, GetXattr, ListXattr, StatFs,
            GetLock, ReadInline, HsmMessages.GetHsmState, HsmMessages.ListActions, HsmMessages.ListRemovedCopies, ForcedLayouts,
            CrossMdtMessages.ListRemoteIntents, CrossMdtMessages.ListAncestors, ListStaleCellFiles {
        OpHeader header();
    }

    /**
     * An inode as clients see it; {@code rdev}: a device node's device number; {@code flags}: the
     * inode's {@code FLAG_*} bits.
     */
    public record Attributes(long inodeId, FileType type, int mode, int uid, int gid, int linkCount, long sizeBytes,
                             long atimeNanos, long mtimeNanos, long ctimeNanos, long generation, Layout layout, long rdev, int flags) {
        public Attributes(long inodeId, FileType type, int mode, int uid, int gid, int linkCount, long sizeBytes, long atimeNanos,
                          long mtimeNanos, long ctimeNanos, long generation, Layout layout) {
            this(inodeId, type, mode, uid, gid, linkCount, sizeBytes, atimeNanos, mtimeNanos, ctimeNanos, generation, layout, 0, 0);
        }

        public boolean isDirectory() {
            return type == FileType.DIRECTORY;
        }

        /** Whether the file's bytes are encrypted (it has the {@link #SSE_XATTR} attribute). */
        public boolean encrypted() {
            return (flags & FLAG_ENCRYPTED) != 0;
        }

        public Attributes withSizeBytes(long newSize) {
            return new Attributes(inodeId, type, mode, uid, gid, linkCount, newSize, atimeNanos, mtimeNanos, ctimeNanos,
                    generation, layout, rdev, flags);
        }

        public Attributes withLinkCount(int newLinkCount) {
            return new Attributes(inodeId, type, mode, uid, gid, newLinkCount, sizeBytes, atimeNanos, mtimeNanos, ctimeNanos,
                    generation, layout, rdev, flags);
        }
    }

    /**
     * The attribute that says how a file's bytes are encrypted (S3 server-side encryption): while a
     * file has it, its inode carries {@link #FLAG_ENCRYPTED}, readers decrypt, and it is not written
     * in place (opens for writing and size changes are refused).
     */
    public static final String SSE_XATTR = "user.plinth.sse";
    /** {@link Attributes#flags}: the file has {@link #SSE_XATTR}. */
    public static final int FLAG_ENCRYPTED = 1;

    /**
     * Attributes, and the value of an extended attribute where the request asked for one (null
     * otherwise, or where absent or unreadable); {@code fileBytes}: the file's Data-on-MDT part, all
     * of the file when it is that short, when the request asked for it (else null).
     * {@code unresolved}: null, except where a path or name led to an inode another MDT holds
     * (several MDTs): {@code attributes} is then only a {@link #remoteStub} of that inode, and the
     * client goes on there with a {@link ResolvePath} from it of what is left of the path ("" for
     * none).
     */
    public record AttributesReply(Attributes attributes, byte[] xattrValue, byte[] fileBytes, String unresolved) {
        public AttributesReply(Attributes attributes) {
            this(attributes, null, null, null);
        }

        public AttributesReply(Attributes attributes, byte[] xattrValue) {
            this(attributes, xattrValue, null, null);
        }

        public AttributesReply(Attributes attributes, byte[] xattrValue, byte[] fileBytes) {
            this(attributes, xattrValue, fileBytes, null);
        }

        /** A reply that sends the client to the MDT of {@code inodeId} to resolve {@code unresolved} from there. */
        public static AttributesReply redirect(long inodeId, FileType type, String unresolved) {
            return new AttributesReply(remoteStub(inodeId, type), null, null, unresolved);
        }

        public boolean redirected() {
            return unresolved != null;
        }
    }

    /**
     * What an MDT knows of an inode that another MDT holds: its id and type (a directory entry's),
     * flagged {@link #FLAG_REMOTE_STUB}. Clients replace it with the owner's attributes.
     */
    public static Attributes remoteStub(long inodeId, FileType type) {
        return new Attributes(inodeId, type, type.modeBits(), 0, 0, 1, 0, 0, 0, 0, 0, null, 0, FLAG_REMOTE_STUB);
    }

    /** {@link Attributes#flags}: only the inode's id and type, from an MDT that does not hold it ({@link #remoteStub}). */
    public static final int FLAG_REMOTE_STUB = 2;

    public record DirEntry(String name, long inodeId, FileType type) {}

    // ---- queries

    public record Lookup(OpHeader header, long parentId, String name) implements Query {}

    /**
     * Resolves an absolute path from the root, following symlinks (the last only if asked).
     * {@code xattrName}: the reply also carries that xattr's value, a stat and a getxattr in one
     * (null: none). {@code fileBytesMax} > 0: also the file's Data-on-MDT part (all of a file that
     * short), if it is at most that long and the caller may read it: a small S3 GET in one query,
     * and a larger one without a query for its first bytes. {@code startId}: the directory a
     * relative {@code path} starts from (0: the root, for an absolute path), where a resolution
     * goes on at another MDT ({@link AttributesReply#unresolved}).
     */
    public record ResolvePath(OpHeader header, String path, boolean followLast, String xattrName, int fileBytesMax, long startId)
            implements Query {
        public ResolvePath(OpHeader header, String path, boolean followLast) {
            this(header, path, followLast, null, 0, 0);
        }

        public ResolvePath(OpHeader header, String path, boolean followLast, String xattrName) {
            this(header, path, followLast, xattrName, 0, 0);
        }

        public ResolvePath(OpHeader header, String path, boolean followLast, String xattrName, int fileBytesMax) {
            this(header, path, followLast, xattrName, fileBytesMax, 0);
        }

        /** The same resolution, going on from {@code from} with {@code rest} of the path. */
        public ResolvePath continuedAt(long from, String rest) {
            return new ResolvePath(header, rest, followLast, xattrName, fileBytesMax, from);
        }
    }

    public record GetAttr(OpHeader header, long inodeId) implements Query {}

    /** Entries after {@code afterName} (exclusive; "" for the start) in name order, at most {@code limit}. */
    public record ReadDir(OpHeader header, long inodeId, String afterName, int limit) implements Query {}

    public record ReadDirReply(List<DirEntry> entries, boolean more) {}

    /** ReadDir that also returns each entry's attributes (FUSE readdirplus, `ls -l`): one request per page. */
    /** A readdir page with each entry's attributes and, if {@code xattrName} is set, that attribute's value (where the caller may read it). */
    public record ReadDirPlus(OpHeader header, long inodeId, String afterName, int limit, String xattrName) implements Query {
        public ReadDirPlus(OpHeader header, long inodeId, String afterName, int limit) {
            this(header, inodeId, afterName, limit, null);
        }
    }

    /** {@code attributes.get(i)} belongs to {@code entries.get(i)}. */
    /** {@code xattrValues}: one per entry (null where absent or not readable) when asked for, else empty. */
    public record ReadDirPlusReply(List<DirEntry> entries, List<Attributes> attributes, boolean more, List<byte[]> xattrValues) {
        public ReadDirPlusReply(List<DirEntry> entries, List<Attributes> attributes, boolean more) {
            this(entries, attributes, more, List.of());
        }
    }

    public record ReadLink(OpHeader header, long inodeId) implements Query {}

    public record ReadLinkReply(String target) {}

    public record GetXattr(OpHeader header, long inodeId, String name) implements Query {}

    public record XattrValue(byte[] value) {}

    public record ListXattr(OpHeader header, long inodeId) implements Query {}

    public record XattrNames(List<String> names) {}

    public record StatFs(OpHeader header) implements Query {}

    public record StatFsReply(long capacityBytes, long freeBytes, long inodes, int blockSizeBytes) {}

    // ---- mutations

    /**
     * Creates a file; {@code layout} null means inherit the parent's default. {@code openForWrite}
     * also opens it for writing under the caller's session (open with O_CREAT in one change).
     * {@code unnamed} (with openForWrite, name null) creates it without a name, like Linux's
     * O_TMPFILE in directory {@code parentId}: an open orphan that goes away with its last close (or
     * its session) unless {@link Publish} gives it a name first.
     */
    public record Create(OpHeader header, long parentId, String name, int mode, boolean exclusive, Layout layout,
                         boolean openForWrite, boolean unnamed) implements Mutation {
        public Create(OpHeader header, long parentId, String name, int mode, boolean exclusive, Layout layout) {
            this(header, parentId, name, mode, exclusive, layout, false, false);
        }

        public Create(OpHeader header, long parentId, String name, int mode, boolean exclusive, Layout layout, boolean openForWrite) {
            this(header, parentId, name, mode, exclusive, layout, openForWrite, false);
        }
    }

    public record CreateReply(Attributes attributes, boolean created) {}

    /**
     * {@code mdt}: the MDT that is to hold the new directory (what is made below it follows it);
     * {@link #WITH_PARENT}: its parent's. A directory on another MDT than its parent's is made by
     * the parent's MDT with an intent record (design note 93).
     */
    public record Mkdir(OpHeader header, long parentId, String name, int mode, int mdt) implements Mutation {
        public static final int WITH_PARENT = -1;

        public Mkdir(OpHeader header, long parentId, String name, int mode) {
            this(header, parentId, name, mode, WITH_PARENT);
        }
    }

    public record Symlink(OpHeader header, long parentId, String name, String target) implements Mutation {}

    /** mknod of a FIFO, a character or block device ({@code rdev} its number) or a socket (a bind(2) on the mount). */
    public record MakeNode(OpHeader header, long parentId, String name, FileType type, int mode, long rdev) implements Mutation {}

    /** Bits of {@link SetAttr#mask}. */
    public static final int SET_MODE = 1;
    public static final int SET_UID = 2;
    public static final int SET_GID = 4;
    public static final int SET_SIZE = 8;
    public static final int SET_ATIME = 16;
    public static final int SET_MTIME = 32;
    /** With SET_ATIME or SET_MTIME: use the leader's clock rather than the given value. */
    public static final int SET_TIMES_NOW = 64;
    /**
     * With SET_SIZE: sent through a handle open for writing, whose access was checked at its open,
     * so the file's mode now does not matter (ftruncate(2) of a file created with mode 0).
     */
    public static final int SET_THROUGH_WRITABLE_HANDLE = 128;
    /**
     * The file was written by its caller: clear set-user-ID, and set-group-ID where group-execute
     * is set, unless the caller is root (the kernel's should_remove_suid). Allowed to anyone who
     * writes (the kernel leaves it to the file system: FUSE's handle_killpriv).
     */
    public static final int SET_KILL_PRIVILEGES = 256;

    public record SetAttr(OpHeader header, long inodeId, int mask, int mode, int uid, int gid, long sizeBytes,
                          long atimeNanos, long mtimeNanos) implements Mutation {}

    public record Unlink(OpHeader header, long parentId, String name) implements Mutation {}

    public record Rmdir(OpHeader header, long parentId, String name) implements Mutation {}

    /** Moves an entry, replacing a compatible destination atomically; {@code noReplace} fails with EEXIST instead. */
    public record Rename(OpHeader header, long sourceParentId, String sourceName, long targetParentId, String targetName,
                         boolean noReplace) implements Mutation {}

    /** renameat2's RENAME_EXCHANGE: the two names swap the inodes they name, atomically; both must exist. */
    public record Exchange(OpHeader header, long firstParentId, String firstName, long secondParentId, String secondName)
            implements Mutation {}

    public record Link(OpHeader header, long inodeId, long parentId, String name) implements Mutation {}

    public record SetXattr(OpHeader header, long inodeId, String name, byte[] value, int flags) implements Mutation {}

    /** Bits of {@link SetXattr#flags}, with Linux's values. */
    public static final int XATTR_CREATE = 1;
    public static final int XATTR_REPLACE = 2;

    public record RemoveXattr(OpHeader header, long inodeId, String name) implements Mutation {}

    /** Registers an open file for the client's session, so an unlinked file stays readable until closed. */
    public record Open(OpHeader header, long inodeId, boolean write) implements Mutation {}

    /**
     * Ends one open of a file, settling what the client wrote: size becomes at least
     * {@code writtenEndBytes} and mtime is updated if {@code wrote}. {@code release} false keeps the
     * file open (fsync settles without closing). {@code inline}: bytes the client still holds for
     * the file's Data-on-MDT part, stored first (null: none).
     */
    public record Close(OpHeader header, long inodeId, long writtenEndBytes, boolean wrote, boolean release, InlineWrite inline)
            implements Mutation {}

    /** Bytes written at {@code offset} of a file's Data-on-MDT part ({@link dev.plinth.common.Layout#mdtBytes()}). */
    public record InlineWrite(int offset, byte[] bytes) {}

    /** Writes into a file's Data-on-MDT part; the size is settled at close or fsync, as for bytes on targets. */
    public record WriteInline(OpHeader header, long inodeId, InlineWrite write) implements Mutation {}

    /**
     * Reads {@code [offset, offset + length)} of a file's Data-on-MDT part. The bytes may be fewer
     * than asked: the rest, up to the size, is zeros.
     */
    public record ReadInline(OpHeader header, long inodeId, int offset, int length) implements Query {}

    public record InlineData(byte[] bytes) {}

    /** An extended attribute: name and value. */
    public record Xattr(String name, byte[] value) {}

    /**
     * Puts a file that was written under a temporary name, or without a name ({@code sourceName}
     * null: an unnamed file from {@link Create}), in place as one change: settles and ends the
     * caller's open as {@link Close} does, sets mtime to {@code mtimeNanos} (so the writer knows it,
     * e.g. to record it beside a checksum), sets {@code xattrs}, and renames {@code sourceName} (or
     * links the unnamed file) over {@code targetName} in directory {@code parentId}
     * ({@code noReplace}: EEXIST instead); a named file may come from another directory,
     * {@code sourceParentId} (0: the same one). All or nothing: what an S3 PUT, and any "write a
     * temporary file, then rename it" writer, needs. The caller must own the file. {@code inline}
     * as in {@link Close}. {@code onlyReplacing}, when not 0: {@code targetName} must name that
     * inode now (an S3 If-Match checked against it), else CHANGED and nothing happens.
     */
    public record Publish(OpHeader header, long inodeId, long writtenEndBytes, long mtimeNanos, List<Xattr> xattrs, long parentId,
                          String sourceName, String targetName, boolean noReplace, InlineWrite inline, long onlyReplacing,
                          long sourceParentId) implements Mutation {
        /** The directory {@code sourceName} is in: {@code sourceParentId}, or {@code parentId} where that is 0. */
        public long sourceDirectoryId() {
            return sourceParentId != 0 ? sourceParentId : parentId;
        }
    }

    /**
     * Creates a file with all of its bytes, which must fit in its Data-on-MDT part, and publishes
     * it (as {@link Publish} does an unnamed file) as one change: a small S3 PUT. {@code layout} null
     * means the directory's; the leader places it as for {@link Create}.
     */
    public record PutWhole(OpHeader header, long parentId, String name, int mode, Layout layout, byte[] bytes, long mtimeNanos,
                           List<Xattr> xattrs, boolean noReplace, long onlyReplacing) implements Mutation {}

    /** Sets a directory's default layout, or the layout of a file that has no data yet. */
    /**
     * setstripe. A layout no file could be placed with (an unknown pool; more replicas than the
     * pool has nodes) is refused unless {@code force}: a forced one makes creates fail until the
     * cluster grows.
     */
    public record SetLayout(OpHeader header, long inodeId, Layout layout, boolean force, String path) implements Mutation {
        public SetLayout(OpHeader header, long inodeId, Layout layout, boolean force) {
            this(header, inodeId, layout, force, null);
        }
    }

    /**
     * The last step of {@code plinth migrate}: file {@code inodeId} takes the layout of
     * {@code donorId}, an unnamed file the migrator made with the new layout and filled with a copy
     * of the file's bytes, and the donor takes the file's old layout, so that the donor's removal at
     * its last close frees the old chunks. Refused unless the file is as the copy found it (size
     * {@code expectedSizeBytes}, mtime {@code expectedMtimeNanos}: CHANGED, and the migrator copies
     * again) and nobody has it open (WOULD_BLOCK: the migrator tries again a little later). The file keeps its size, times (ctime moves), HSM state and
     * everything else. Owner or root.
     */
    public record SwapLayout(OpHeader header, long inodeId, long donorId, long expectedSizeBytes, long expectedMtimeNanos)
            implements Mutation {}

    /**
     * The last step of {@code plinth rebuild}: erasure-coded file {@code inodeId}'s cells move from
     * the chains {@code expectedChainIds} to {@code chainIds} (same width; the rebuilder already
     * wrote the moved cells there, decoded from the others). Refused as {@link SwapLayout} is:
     * CHANGED unless the file still has the expected chains, size and mtime (the rebuilder looks
     * again), WOULD_BLOCK while it is open. The file keeps everything else. Owner or root.
     */
    public record ReplaceCellChains(OpHeader header, long inodeId, List<Integer> expectedChainIds, List<Integer> chainIds,
                                    long expectedSizeBytes, long expectedMtimeNanos) implements Mutation {}

    /**
     * A writer of erasure-coded file {@code inodeId} goes on without cells {@code cells} (a bit
     * per cell) while their targets are away: from now on the file's layout names them stale, and
     * readers decode them from the other cells (design note 89). Sent, and answered, before the
     * first write that leaves them out. Refused (INVALID_ARGUMENT) where the file would then have
     * more stale cells than parity cells. Needs the file open in the caller's session, or write
     * permission on it.
     */
    public record MarkCellsStale(OpHeader header, long inodeId, long cells) implements Mutation {}

    /**
     * The upkeep rebuilt erasure-coded file {@code inodeId}'s stale cells {@code cells} from the
     * others: they are no longer stale. Refused as {@link SwapLayout} is: CHANGED unless the file
     * still has the expected size and ctime (written meanwhile: the cells are rebuilt again),
     * WOULD_BLOCK while it is open. Owner or root. With {@code cells} 0 it only asks: refused as a
     * clear would be, it changes nothing (a rebuilder asks before it reads a whole file).
     */
    public record ClearStaleCells(OpHeader header, long inodeId, long cells, long expectedSizeBytes, long expectedCtimeNanos)
            implements Mutation {}

    /** Up to {@code limit} files of this MDT with stale cells, in inode order after {@code afterInodeId}. */
    public record ListStaleCellFiles(OpHeader header, long afterInodeId, int limit) implements Query {}

    public record StaleCellFiles(List<Long> inodeIds) {}

    /**
     * The layouts kept with {@code force} (see {@link SetLayout}) that the cluster cannot place
     * now, and erasure-coded ones whose cells must share storage nodes, for `plinth status`: each
     * with the path it was set on and what is wrong.
     */
    public record ForcedLayouts(OpHeader header) implements Query {}

    /**
     * A layout set with {@code force}, or an erasure-coded one: where (the path named when it was
     * set; null: unknown), and what is wrong with it now; {@code placeable}: files can be created
     * with it, but less safely than it promises (cells of a stripe share a node).
     */
    public record ForcedLayout(long inodeId, String path, Layout layout, String problem, boolean placeable) {
        public ForcedLayout(long inodeId, String path, Layout layout, String problem) {
            this(inodeId, path, layout, problem, false);
        }
    }

    public record ForcedLayoutList(List<ForcedLayout> layouts) {}

    public record OpenSession(OpHeader header, String clientName) implements Mutation {}

    public record SessionReply(long clientId, long leaseMillis) {}

    /** How an MDT's error begins where the caller's session is unknown to it (expired, or never opened there). */
    public static final String NO_SESSION = "no session ";

    /** Whether {@code e} says the caller's session is unknown to the MDT that answered. */
    public static boolean noSession(dev.plinth.common.PlinthException e) {
        return e.code() == dev.plinth.common.ErrorCode.STALE_HANDLE && e.detail() != null && e.detail().startsWith(NO_SESSION);
    }

    public record RenewSession(OpHeader header) implements Mutation {}

    public record CloseSession(OpHeader header) implements Mutation {}

    /** Written by the leader: ends sessions whose lease ran out before {@code header.timeNanos}. */
    public record ExpireSessions(OpHeader header) implements Mutation {}

    /** Written by the leader once the chunks of these deleted files are gone from storage. */
    public record PurgeRemoved(OpHeader header, List<Long> inodeIds) implements Mutation {}

    // ---- file locks (flock and fcntl byte ranges), coherent across all clients

    /** {@link FileLock#kind}: POSIX byte-range locks (fcntl) and BSD whole-file locks (flock) never conflict with each other. */
    public static final int LOCK_POSIX = 0;
    public static final int LOCK_FLOCK = 1;
    /** {@link FileLock#type}. */
    public static final int LOCK_READ = 0;
    public static final int LOCK_WRITE = 1;
    public static final int LOCK_UNLOCK = 2;
    /** {@link FileLock#end} of a lock that reaches to the end of the file, however long it grows. */
    public static final long LOCK_TO_END = Long.MAX_VALUE;

    /**
     * A lock held by {@code owner} of client session {@code clientId} on bytes [start, end).
     * The owner is the client's own name for who holds it (FUSE's lock_owner: a process's file
     * table for fcntl, an open file for flock); {@code pid} is reported to F_GETLK callers.
     */
    public record FileLock(long clientId, long owner, int pid, int kind, int type, long start, long end) {}

    /**
     * Takes, changes or releases a lock without waiting (F_SETLK, flock with LOCK_NB); waiting
     * callers retry. The lock's clientId is ignored: the header's client holds it. Locks end
     * with their session, so a dead client's locks go when its lease runs out.
     */
    public record SetLock(OpHeader header, long inodeId, FileLock lock) implements Mutation {}

    /** F_GETLK: a lock that would block {@code lock}, if any. */
    public record GetLock(OpHeader header, long inodeId, FileLock lock) implements Query {}

    /** {@code conflicts} is empty when the lock was granted (or would be), else holds one lock in the way. */
    public record LockReply(List<FileLock> conflicts) {
        public boolean granted() {
            return conflicts.isEmpty();
        }
    }

    /**
     * Files a client read, whose atime moves to now where relatime says so (atime not after mtime
     * or ctime, or a day old): a client sends the files it read in the last second as one change,
     * so that reads stay free of metadata changes while HSM policies still see which files are in
     * use. Files gone since are skipped. No permission check: the reader's open checked read access.
     */
    public record TouchAtimes(OpHeader header, List<Long> inodeIds) implements Mutation {}

    /** How old an atime may get before a read moves it even when it is after mtime (relatime's day). */
    public static final long RELATIME_MAX_AGE_NANOS = 24L * 3600 * 1_000_000_000;

    /** Linux's relatime: a read moves atime when it is not after mtime or ctime, or is a day old. */
    public static boolean relatimeDue(long atimeNanos, long mtimeNanos, long ctimeNanos, long nowNanos) {
        return atimeNanos <= mtimeNanos || atimeNanos <= ctimeNanos || nowNanos - atimeNanos >= RELATIME_MAX_AGE_NANOS;
    }

    /** Files whose chunks can be freed: sent by meta's state machine to its cleaner, in-process. */
    public record RemovedFile(long inodeId, Layout layout) {}

    /**
     * How long the chunks of a removed file (its last name and its last open gone) outlive it at
     * the least: an MDT's cleaner frees them no sooner than this after it learned of the removal.
     * A reader that looked a file up may therefore read it without an open (no metadata change)
     * for a while: what it read within half of this after the lookup was sent is the file's, even
     * if the file was removed meanwhile (PlinthClient#openLookedUp). A constant, not a setting, so
     * that readers and MDTs in different processes cannot disagree on it.
     */
    public static final long REMOVED_FILE_KEPT_MILLIS = 5_000;
}
