package dev.plinth.meta.ops;

import static dev.plinth.wire.messages.HsmMessages.*;

import dev.plinth.common.ErrorCode;
import dev.plinth.common.FileType;
import dev.plinth.common.InodeId;
import dev.plinth.common.PlinthException;
import dev.plinth.meta.Namespace;
import dev.plinth.meta.store.HsmRecord;
import dev.plinth.meta.store.InodeRecord;
import dev.plinth.meta.store.MetaKeys;
import dev.plinth.meta.store.MetaStore;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

/**
 * HSM state and the action queue of one MDT (design note 80). The state bits live in the inode's
 * flags; the archived copy and the last error in the file's {@link HsmRecord}; actions under
 * {@link MetaKeys#HSM_ACTION}, one per file, restores sorting before the rest so that a mover
 * takes them first. Everything changes through the metadata log, so state and queue survive
 * restarts and failover together with the namespace.
 */
public final class Hsm {
    private Hsm() {}

    /** Queued actions at most per MDT: a request past it is refused (BUSY) rather than grow the queue without bound. */
    public static final int QUEUE_MAX = 100_000;
    private static final byte[] NEXT_ACTION_KEY = MetaKeys.system("hsm-next-action");
    private static final byte[] ACTION_COUNT_KEY = MetaKeys.system("hsm-action-count");
    private static final byte PRIORITY_RESTORE = 0;
    private static final byte PRIORITY_OTHER = 1;

    // ---- state as other operations see it

    public static int states(InodeRecord inode) {
        return statesOf(inode.flags());
    }

    private static InodeRecord withStates(InodeRecord inode, int states) {
        return inode.withFlags((inode.flags() & ~(0xff << STATES_SHIFT)) | ((states & 0xff) << STATES_SHIFT));
    }

    /**
     * Called before a file's bytes may change (an open for writing, a truncation): a released file
     * must be restored first (RELEASED), except by the mover restoring it; an archived one becomes
     * dirty. Returns the inode as it is now (the caller writes it back if it changed).
     */
    public static InodeRecord beforeDataChange(Namespace namespace, InodeRecord inode) {
        int states = states(inode);
        if ((states & RELEASED) != 0) {
            if (!isRestorer(namespace, inode.inodeId())) {
                throw new PlinthException(ErrorCode.RELEASED, "inode " + InodeId.format(inode.inodeId()) + " is released to archive "
                        + record(namespace, inode.inodeId()).archiveId() + "; restore it first");
            }
            return inode;
        }
        if ((states & ARCHIVED) != 0 && (states & DIRTY) == 0) {
            InodeRecord dirty = withStates(inode, states | DIRTY);
            namespace.putInode(dirty);
            return dirty;
        }
        return inode;
    }

    /** Refuses reading a released file's bytes kept with its inode (Data-on-MDT): they were released too. */
    public static void requireResident(Namespace namespace, InodeRecord inode) {
        if ((states(inode) & RELEASED) != 0 && !isRestorer(namespace, inode.inodeId())) {
            throw new PlinthException(ErrorCode.RELEASED, "inode " + InodeId.format(inode.inodeId()) + " is released; restore it first");
        }
    }

    /**
     * How much of the file from its start may be read: all of a resident file (and of a released
     * one for the mover restoring it); of a released file being restored, the bytes its mover has
     * written back, checked and flushed ({@link Action#doneBytes}); else none.
     */
    public static long readableBytes(Namespace namespace, InodeRecord inode) {
        if ((states(inode) & RELEASED) == 0 || isRestorer(namespace, inode.inodeId())) {
            return Long.MAX_VALUE;
        }
        Action action = actionOf(namespace, inode.inodeId());
        return action != null && action.kind() == RESTORE ? action.doneBytes() : 0;
    }

    /** Whether the file is released and the caller's session is the mover restoring it. */
    public static boolean restoring(Namespace namespace, InodeRecord inode) {
        return (states(inode) & RELEASED) != 0 && isRestorer(namespace, inode.inodeId());
    }

    /** Whether the caller's session is the mover running the restore of the file. */
    private static boolean isRestorer(Namespace namespace, long inodeId) {
        Action action = actionOf(namespace, inodeId);
        return action != null && action.kind() == RESTORE && action.status() == RUNNING && action.mover() == namespace.header().clientId();
    }

    /**
     * A removed inode takes its HSM record and queued action with it; its archived copy is listed
     * for movers, which delete it from the archive after hsm.removed-copy-grace-millis.
     */
    public static void forget(Namespace namespace, InodeRecord inode) {
        HsmRecord record = record(namespace, inode.inodeId());
        if (record.copy() != null) {
            namespace.put(MetaKeys.id(MetaKeys.HSM_REMOVED_COPY, inode.inodeId()),
                    MetaStore.encode(new RemovedCopy(inode.inodeId(), record.copy(), namespace.now())));
        }
        namespace.delete(MetaKeys.id(MetaKeys.HSM, inode.inodeId()));
        Action action = actionOf(namespace, inode.inodeId());
        if (action != null) {
            dropAction(namespace, action);
        }
    }

    // ---- queries

    public static HsmState state(Namespace namespace, GetHsmState request) {
        return stateOf(namespace, namespace.inode(request.inodeId()), null);
    }

    private static HsmState stateOf(Namespace namespace, InodeRecord inode, ArchivedCopy superseded) {
        HsmRecord record = record(namespace, inode.inodeId());
        return new HsmState(inode.inodeId(), states(inode), record.archiveId(), record.copy(), actionOf(namespace, inode.inodeId()),
                record.lastError(), superseded);
    }

    public static ActionList list(Namespace namespace, ListActions request) {
        int limit = Math.max(1, Math.min(request.limit(), 1000));
        byte[] after = null;
        if (request.afterActionId() != 0) {
            Action last = actionById(namespace, request.afterActionId());
            after = last == null ? null : actionKey(last);
        }
        List<byte[][]> page = namespace.scan(new byte[] {MetaKeys.HSM_ACTION}, after, limit + 1);
        List<Action> actions = new ArrayList<>();
        for (int i = 0; i < Math.min(limit, page.size()); i++) {
            actions.add(MetaStore.decode(Action.class, page.get(i)[1]));
        }
        return new ActionList(actions, page.size() > limit);
    }

    public static RemovedCopies removedCopies(Namespace namespace, ListRemovedCopies request) {
        int limit = Math.max(1, Math.min(request.limit(), 1000));
        byte[] after = request.afterInodeId() == 0 ? null : MetaKeys.id(MetaKeys.HSM_REMOVED_COPY, request.afterInodeId());
        List<byte[][]> page = namespace.scan(new byte[] {MetaKeys.HSM_REMOVED_COPY}, after, limit + 1);
        List<RemovedCopy> copies = new ArrayList<>();
        for (int i = 0; i < Math.min(limit, page.size()); i++) {
            copies.add(MetaStore.decode(RemovedCopy.class, page.get(i)[1]));
        }
        return new RemovedCopies(copies, page.size() > limit);
    }

    // ---- changes

    public static dev.plinth.wire.messages.HandshakeMessages.Empty forgetRemovedCopies(Namespace namespace, ForgetRemovedCopies request) {
        requireRoot(namespace);
        for (long inodeId : request.inodeIds().subList(0, Math.min(request.inodeIds().size(), 1000))) {
            namespace.delete(MetaKeys.id(MetaKeys.HSM_REMOVED_COPY, inodeId));
        }
        return dev.plinth.wire.messages.HandshakeMessages.EMPTY;
    }

    public static HsmState setFlags(Namespace namespace, SetHsmFlags request) {
        InodeRecord inode = namespace.inode(request.inodeId());
        requireFile(inode);
        int allowed = namespace.caller().isRoot() ? ADMIN_STATES : USER_FLAGS;
        int asked = request.set() | request.clear();
        if ((asked & ~allowed) != 0) {
            throw new PlinthException(namespace.caller().isRoot() ? ErrorCode.INVALID_ARGUMENT : ErrorCode.OPERATION_NOT_PERMITTED,
                    "HSM bits 0x" + Integer.toHexString(asked & ~allowed) + " cannot be set or cleared"
                            + (namespace.caller().isRoot() ? " (released changes only by release and restore)" : " by the owner (only noarchive, norelease)"));
        }
        namespace.requireOwner(inode);
        int states = (states(inode) | request.set()) & ~request.clear();
        InodeRecord changed = withStates(inode, states).withTimes(inode.atimeNanos(), inode.mtimeNanos(), namespace.now());
        namespace.putInode(changed);
        return stateOf(namespace, changed, null);
    }

    public static HsmState request(Namespace namespace, RequestAction request) {
        InodeRecord inode = namespace.inode(request.inodeId());
        requireFile(inode);
        if (request.kind() == RESTORE) {
            namespace.check(inode, Namespace.READ); // whoever may read a file may bring it back to read it
        } else {
            namespace.requireOwner(inode);
        }
        int states = states(inode);
        HsmRecord record = record(namespace, inode.inodeId());
        Action queued = actionOf(namespace, inode.inodeId());
        if (request.kind() == CANCEL) {
            if (queued != null) {
                dropAction(namespace, queued);
                putRecord(namespace, inode.inodeId(), record.withError("cancelled"));
            }
            return stateOf(namespace, inode, null);
        }
        if (request.kind() == RELEASE) {
            return release(namespace, inode, states, record, queued);
        }
        if (queued != null) {
            if (queued.kind() == request.kind()) {
                return stateOf(namespace, inode, null); // joins the action already queued
            }
            throw new PlinthException(ErrorCode.OPERATION_NOT_PERMITTED, "a " + kindName(queued.kind()) + " of inode "
                    + InodeId.format(inode.inodeId()) + " is queued; wait for it or cancel it");
        }
        switch (request.kind()) {
            case ARCHIVE -> {
                if ((states & NOARCHIVE) != 0) {
                    throw new PlinthException(ErrorCode.OPERATION_NOT_PERMITTED, "the file is marked noarchive");
                }
                if ((states & RELEASED) != 0 || (states & ARCHIVED) != 0 && (states & DIRTY) == 0 && (states & LOST) == 0
                        && record.copy() != null && record.copy().archiveId() == request.archiveId()) {
                    return stateOf(namespace, inode, null); // the archive already holds what the file holds
                }
                if (request.archiveId() <= 0) {
                    throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "archive id must be at least 1");
                }
            }
            case RESTORE -> {
                if ((states & RELEASED) == 0) {
                    return stateOf(namespace, inode, null);
                }
                if ((states & LOST) != 0) {
                    throw new PlinthException(ErrorCode.ARCHIVE_UNREADABLE, "the archived copy of inode " + InodeId.format(inode.inodeId())
                            + " is lost" + (record.lastError() == null ? "" : ": " + record.lastError()));
                }
            }
            case REMOVE -> {
                if ((states & RELEASED) != 0) {
                    throw new PlinthException(ErrorCode.OPERATION_NOT_PERMITTED,
                            "the file is released: its archived copy is its only copy; restore it before removing the copy");
                }
                if (record.copy() == null) {
                    InodeRecord cleared = withStates(inode, states & ~(EXISTS | ARCHIVED | DIRTY | LOST));
                    namespace.putInode(cleared);
                    return stateOf(namespace, cleared, null);
                }
            }
            default -> throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "unknown HSM action " + request.kind());
        }
        long count = namespace.getLong(ACTION_COUNT_KEY, 0);
        if (count >= QUEUE_MAX) {
            throw new PlinthException(ErrorCode.BUSY, "the HSM queue holds " + count + " actions, its most; try again later");
        }
        long actionId = namespace.getLong(NEXT_ACTION_KEY, 1);
        namespace.putLong(NEXT_ACTION_KEY, actionId + 1);
        namespace.putLong(ACTION_COUNT_KEY, count + 1);
        int archiveId = request.kind() == ARCHIVE ? request.archiveId() : record.archiveId();
        Action action = new Action(actionId, inode.inodeId(), request.kind(), archiveId, WAITING, 0, 0, namespace.now(), 0,
                inode.sizeBytes(), 0);
        putAction(namespace, action);
        putRecord(namespace, inode.inodeId(), record.withError(null));
        return stateOf(namespace, inode, null);
    }

    /**
     * Frees the bytes of an archived, clean, closed file at once: its chunks go to the cleaner, its
     * Data-on-MDT bytes are dropped, size and the rest of its metadata stay.
     */
    private static HsmState release(Namespace namespace, InodeRecord inode, int states, HsmRecord record, Action queued) {
        if ((states & RELEASED) != 0) {
            return stateOf(namespace, inode, null);
        }
        String refusal = (states & NORELEASE) != 0 ? "the file is marked norelease"
                : (states & ARCHIVED) == 0 || record.copy() == null ? "the file is not archived"
                : (states & DIRTY) != 0 ? "the file changed since it was archived (dirty); archive it again first"
                : (states & LOST) != 0 ? "the file's archived copy is lost"
                : queued != null ? "a " + kindName(queued.kind()) + " of the file is queued"
                : namespace.isOpen(inode.inodeId()) ? "the file is open"
                : record.copy().sizeBytes() != inode.sizeBytes() ? "the file's size differs from its archived copy's" : null;
        if (refusal != null) {
            // not BUSY, which clients retry for a while: the caller decides whether to try again
            throw new PlinthException(ErrorCode.OPERATION_NOT_PERMITTED, "cannot release inode " + InodeId.format(inode.inodeId()) + ": " + refusal);
        }
        namespace.putMdtData(inode.inodeId(), null);
        namespace.freeChunks(inode);
        InodeRecord released = withStates(inode, states | RELEASED);
        namespace.putInode(released);
        return stateOf(namespace, released, null);
    }

    public static ActionList take(Namespace namespace, TakeActions request) {
        requireRoot(namespace);
        int max = Math.max(1, Math.min(request.max(), 64));
        long now = namespace.now();
        List<Action> taken = new ArrayList<>();
        byte[] after = null;
        // bounded: a mover that finds nothing takable in this many skips comes back later
        for (int scanned = 0; taken.size() < max && scanned < 4096; ) {
            List<byte[][]> page = namespace.scan(new byte[] {MetaKeys.HSM_ACTION}, after, 256);
            if (page.isEmpty()) {
                break;
            }
            for (byte[][] pair : page) {
                scanned++;
                after = pair[0];
                Action action = MetaStore.decode(Action.class, pair[1]);
                boolean takable = action.status() == WAITING || action.leaseUntilNanos() < now;
                // a restore writes chunks anew: not while the release's freeing of the old ones is still pending
                if (!takable || action.kind() == RESTORE && namespace.chunksBeingFreed(action.inodeId())) {
                    continue;
                }
                Action running = action.withStatus(RUNNING, namespace.header().clientId(), now + request.leaseMillis() * 1_000_000,
                        action.attempts() + 1);
                putAction(namespace, running);
                taken.add(running);
                if (taken.size() >= max) {
                    break;
                }
            }
        }
        return new ActionList(taken, false);
    }

    public static Action progress(Namespace namespace, ReportProgress request) {
        requireRoot(namespace);
        Action action = heldAction(namespace, request.actionId());
        Action updated = action.withProgress(request.doneBytes(), request.totalBytes(), namespace.now() + request.leaseMillis() * 1_000_000);
        putAction(namespace, updated);
        return updated;
    }

    public static HsmState finish(Namespace namespace, FinishAction request) {
        requireRoot(namespace);
        Action action = heldAction(namespace, request.actionId());
        dropAction(namespace, action);
        InodeRecord inode = namespace.inode(action.inodeId());
        HsmRecord record = record(namespace, inode.inodeId());
        int states = states(inode);
        if (request.result() != SUCCEEDED) {
            String error = request.error() == null ? "failed" : request.error();
            putRecord(namespace, inode.inodeId(), record.withError(kindName(action.kind()) + ": " + error));
            if (request.result() == COPY_LOST) {
                namespace.putInode(withStates(inode, states | LOST));
            }
            return stateOf(namespace, namespace.inode(inode.inodeId()), null);
        }
        switch (action.kind()) {
            case ARCHIVE -> {
                ArchivedCopy copy = request.copy();
                if (copy == null) {
                    throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "an archive finished without its copy");
                }
                if ((states & RELEASED) != 0 || inode.sizeBytes() != request.readSizeBytes() || inode.mtimeNanos() != request.readMtimeNanos()
                        || copy.sizeBytes() != inode.sizeBytes()) {
                    putRecord(namespace, inode.inodeId(), record.withError("archive: the file changed while it was copied"));
                    throw new PlinthException(ErrorCode.CHANGED, "inode " + InodeId.format(inode.inodeId()) + " changed while it was archived");
                }
                ArchivedCopy superseded = record.copy() != null && !record.copy().equals(copy) ? record.copy() : null;
                putRecord(namespace, inode.inodeId(), record.withCopy(copy));
                InodeRecord archived = withStates(inode, (states | EXISTS | ARCHIVED) & ~(DIRTY | LOST));
                namespace.putInode(archived);
                return stateOf(namespace, archived, superseded);
            }
            case RESTORE -> {
                // the restore's writes moved mtime: back to what it was when the mover took the action
                InodeRecord restored = withStates(inode, states & ~RELEASED).withTimes(inode.atimeNanos(), request.readMtimeNanos(),
                        namespace.now());
                namespace.putInode(restored);
                return stateOf(namespace, restored, null);
            }
            case REMOVE -> {
                putRecord(namespace, inode.inodeId(), record.withCopy(null));
                InodeRecord removed = withStates(inode, states & ~(EXISTS | ARCHIVED | DIRTY | LOST));
                namespace.putInode(removed);
                return stateOf(namespace, removed, null);
            }
            default -> throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "unknown HSM action " + action.kind());
        }
    }

    // ---- records and keys

    private static void requireFile(InodeRecord inode) {
        if (inode.type() != FileType.FILE) {
            throw new PlinthException(inode.isDirectory() ? ErrorCode.IS_A_DIRECTORY : ErrorCode.INVALID_ARGUMENT,
                    "HSM applies to regular files only");
        }
    }

    private static void requireRoot(Namespace namespace) {
        if (!namespace.caller().isRoot()) {
            throw new PlinthException(ErrorCode.OPERATION_NOT_PERMITTED, "only a mover (root) takes and finishes HSM actions");
        }
    }

    static HsmRecord record(Namespace namespace, long inodeId) {
        byte[] value = namespace.getRaw(MetaKeys.id(MetaKeys.HSM, inodeId));
        return value == null ? new HsmRecord(0, null, null) : MetaStore.decode(HsmRecord.class, value);
    }

    private static void putRecord(Namespace namespace, long inodeId, HsmRecord record) {
        namespace.put(MetaKeys.id(MetaKeys.HSM, inodeId), MetaStore.encode(record));
    }

    private static Action actionOf(Namespace namespace, long inodeId) {
        byte[] id = namespace.getRaw(MetaKeys.id(MetaKeys.HSM_ACTION_BY_INODE, inodeId));
        return id == null ? null : actionById(namespace, ByteBuffer.wrap(id).getLong());
    }

    private static Action actionById(Namespace namespace, long actionId) {
        for (byte priority : new byte[] {PRIORITY_RESTORE, PRIORITY_OTHER}) {
            byte[] value = namespace.getRaw(actionKey(priority, actionId));
            if (value != null) {
                return MetaStore.decode(Action.class, value);
            }
        }
        return null;
    }

    private static Action heldAction(Namespace namespace, long actionId) {
        Action action = actionById(namespace, actionId);
        if (action == null || action.status() != RUNNING || action.mover() != namespace.header().clientId()) {
            throw new PlinthException(ErrorCode.NOT_FOUND, "HSM action " + actionId + " is not running for this mover (cancelled, or handed on)");
        }
        return action;
    }

    private static byte[] actionKey(Action action) {
        return actionKey(action.kind() == RESTORE ? PRIORITY_RESTORE : PRIORITY_OTHER, action.actionId());
    }

    private static byte[] actionKey(byte priority, long actionId) {
        return ByteBuffer.allocate(10).put(MetaKeys.HSM_ACTION).put(priority).putLong(actionId).array();
    }

    private static void putAction(Namespace namespace, Action action) {
        namespace.put(actionKey(action), MetaStore.encode(action));
        namespace.putLong(MetaKeys.id(MetaKeys.HSM_ACTION_BY_INODE, action.inodeId()), action.actionId());
    }

    private static void dropAction(Namespace namespace, Action action) {
        namespace.delete(actionKey(action));
        namespace.delete(MetaKeys.id(MetaKeys.HSM_ACTION_BY_INODE, action.inodeId()));
        namespace.putLong(ACTION_COUNT_KEY, Math.max(0, namespace.getLong(ACTION_COUNT_KEY, 0) - 1));
    }

    /** Queued actions of the MDT (a gauge). */
    public static long queued(Namespace namespace) {
        return namespace.getLong(ACTION_COUNT_KEY, 0);
    }
}
