package dev.plinth.meta.ops;

import dev.plinth.common.Credentials;
import dev.plinth.common.ErrorCode;
import dev.plinth.common.FileType;
import dev.plinth.common.InodeId;
import dev.plinth.common.Names;
import dev.plinth.common.PlinthException;
import dev.plinth.meta.Namespace;
import dev.plinth.meta.store.DentryRecord;
import dev.plinth.meta.store.InodeRecord;
import dev.plinth.meta.store.MetaKeys;
import dev.plinth.meta.store.MetaStore;
import dev.plinth.wire.messages.CrossMdtMessages.AdjustRemoteLinks;
import dev.plinth.wire.messages.CrossMdtMessages.AncestorList;
import dev.plinth.wire.messages.CrossMdtMessages.EnterRenamed;
import dev.plinth.wire.messages.CrossMdtMessages.FinishRemoteIntent;
import dev.plinth.wire.messages.CrossMdtMessages.ForgetAppliedIntent;
import dev.plinth.wire.messages.CrossMdtMessages.IntentKind;
import dev.plinth.wire.messages.CrossMdtMessages.ListAncestors;
import dev.plinth.wire.messages.CrossMdtMessages.MakeRemoteDirectory;
import dev.plinth.wire.messages.CrossMdtMessages.PrepareRemoteLink;
import dev.plinth.wire.messages.CrossMdtMessages.PrepareRemoteMkdir;
import dev.plinth.wire.messages.CrossMdtMessages.PrepareRemoteRemoval;
import dev.plinth.wire.messages.CrossMdtMessages.PrepareRemoteRename;
import dev.plinth.wire.messages.CrossMdtMessages.RemoteIntent;
import dev.plinth.wire.messages.CrossMdtMessages.RemoteIntentList;
import dev.plinth.wire.messages.CrossMdtMessages.RemoveRemoteDirectory;
import dev.plinth.wire.messages.CrossMdtMessages.SetRemoteParent;
import dev.plinth.wire.messages.HandshakeMessages;
import dev.plinth.wire.messages.HandshakeMessages.Empty;
import dev.plinth.wire.messages.MetaMessages.AttributesReply;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

/**
 * The log's side of changes that span MDTs (design note 93). On the coordinating MDT (the one
 * whose name changes): an intent is prepared with the usual checks, reserving a name that is to
 * come ({@link DentryRecord#PENDING}) or marking an entry that is to go or move (no other change
 * may touch it meanwhile), and later finished, committing or abandoning this MDT's part in one
 * batch. On the other MDTs: their parts, each applied once per intent however often it is asked
 * (an APPLIED_INTENT record, dropped when the coordinator has finished). The service drives the
 * steps in between ({@code dev.plinth.meta.RemoteEntryCoordinator}).
 */
public final class RemoteEntries {
    private static final byte[] NEXT_INTENT_ID_KEY = MetaKeys.system("next-intent-id");
    /** Open intents a listing returns at most (recovery takes them a page at a time). */
    public static final int LIST_MAX = 1000;
    /** Ancestors one listing returns at most (the caller goes on from the last). */
    private static final int ANCESTORS_MAX = 1024;

    private RemoteEntries() {}

    // ---- on the coordinating MDT

    public static RemoteIntent prepareMkdir(Namespace namespace, PrepareRemoteMkdir request) {
        if (request.mdt() < 0 || request.mdt() == namespace.mdtIndex() || request.mdt() >= 1 << InodeId.MDT_BITS) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "MDT " + request.mdt() + " is not another MDT");
        }
        InodeRecord parent = reservable(namespace, request.parentId(), request.name());
        if (parent.linkCount() >= Namespace.LINK_COUNT_MAX) {
            throw new PlinthException(ErrorCode.TOO_MANY_LINKS, "too many subdirectories");
        }
        // the new directory's group and mode as a directory made here would have them
        int gid = NewEntry.groupOf(namespace, parent);
        int permissions = NewEntry.permissionsOf(parent, FileType.DIRECTORY, request.mode());
        RemoteIntent intent = new RemoteIntent(nextIntentId(namespace), IntentKind.MKDIR, namespace.caller(), parent.inodeId(),
                request.name(), 0, FileType.DIRECTORY, request.mdt(), 0, null, false, permissions, gid, parent.layout(), -1, namespace.now());
        reserve(namespace, parent, request.name());
        record(namespace, intent);
        return intent;
    }

    public static RemoteIntent prepareLink(Namespace namespace, PrepareRemoteLink request) {
        if (namespace.isLocal(request.inodeId())) {
            throw new PlinthException(ErrorCode.CHANGED, "the inode is on this MDT"); // the service links it the usual way
        }
        InodeRecord parent = reservable(namespace, request.parentId(), request.name());
        RemoteIntent intent = new RemoteIntent(nextIntentId(namespace), IntentKind.LINK, namespace.caller(), parent.inodeId(), request.name(),
                request.inodeId(), FileType.FILE, InodeId.mdtIndex(request.inodeId()), 0, null, false, 0, 0, null, -1, namespace.now());
        reserve(namespace, parent, request.name());
        record(namespace, intent);
        return intent;
    }

    public static RemoteIntent prepareRemoval(Namespace namespace, PrepareRemoteRemoval request) {
        InodeRecord parent = namespace.directory(request.parentId());
        namespace.check(parent, Namespace.WRITE | Namespace.EXECUTE);
        DentryRecord entry = markable(namespace, parent, request.name());
        if (namespace.isLocal(entry.inodeId())) {
            throw new PlinthException(ErrorCode.CHANGED, "'" + request.name() + "' is on this MDT"); // the service removes it the usual way
        }
        boolean directory = entry.type() == FileType.DIRECTORY;
        if (request.directory() != directory) {
            throw new PlinthException(directory ? ErrorCode.IS_A_DIRECTORY : ErrorCode.NOT_A_DIRECTORY, "'" + request.name() + "'");
        }
        RemoteIntent intent = new RemoteIntent(nextIntentId(namespace), directory ? IntentKind.RMDIR : IntentKind.UNLINK, namespace.caller(),
                parent.inodeId(), request.name(), entry.inodeId(), entry.type(), InodeId.mdtIndex(entry.inodeId()), 0, null, false,
                0, 0, null, stickyOwner(namespace, parent), namespace.now());
        record(namespace, intent);
        return intent;
    }

    public static RemoteIntent prepareRename(Namespace namespace, PrepareRemoteRename request) {
        Names.validateName(request.targetName());
        InodeRecord parent = namespace.directory(request.sourceParentId());
        namespace.check(parent, Namespace.WRITE | Namespace.EXECUTE);
        DentryRecord entry = markable(namespace, parent, request.sourceName());
        if (request.sourceParentId() == request.targetParentId() && request.sourceName().equals(request.targetName())) {
            throw new PlinthException(ErrorCode.CHANGED, "a rename onto itself"); // the usual rename answers it
        }
        RemoteIntent intent = new RemoteIntent(nextIntentId(namespace), IntentKind.RENAME, namespace.caller(), parent.inodeId(),
                request.sourceName(), entry.inodeId(), entry.type(), InodeId.mdtIndex(entry.inodeId()), request.targetParentId(),
                request.targetName(), request.noReplace(), 0, 0, null, stickyOwner(namespace, parent), namespace.now());
        record(namespace, intent);
        return intent;
    }

    public static Empty finish(Namespace namespace, FinishRemoteIntent request) {
        requireRoot(namespace);
        byte[] value = namespace.getRaw(MetaKeys.id(MetaKeys.INTENT, request.intentId()));
        if (value == null) {
            return HandshakeMessages.EMPTY; // finished before: a coordinator's retry, or recovery after it
        }
        RemoteIntent intent = MetaStore.decode(RemoteIntent.class, value);
        InodeRecord parent = namespace.inode(intent.parentId());
        long now = namespace.now();
        boolean commit = request.commit();
        switch (intent.kind()) {
            case MKDIR, LINK -> {
                if (commit) {
                    if (InodeId.mdtIndex(request.inodeId()) != intent.mdt() || request.inodeId() == 0) {
                        throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "the inode was to be on MDT " + intent.mdt());
                    }
                    FileType type = intent.kind() == IntentKind.MKDIR ? FileType.DIRECTORY : request.type();
                    namespace.putDentry(parent.inodeId(), intent.name(), new DentryRecord(request.inodeId(), type));
                    namespace.putInode(parent.withChildDelta(1, type == FileType.DIRECTORY ? 1 : 0, now));
                } else {
                    namespace.deleteDentry(parent.inodeId(), intent.name());
                }
            }
            case RMDIR, UNLINK, RENAME -> {
                if (commit) {
                    namespace.deleteDentry(parent.inodeId(), intent.name());
                    namespace.putInode(parent.withChildDelta(-1, intent.type() == FileType.DIRECTORY ? -1 : 0, now));
                    if (intent.kind() == IntentKind.RENAME && namespace.isLocal(intent.inodeId()) && intent.type() != FileType.DIRECTORY) {
                        InodeRecord moved = namespace.inodeOrNull(intent.inodeId());
                        if (moved != null) {
                            namespace.putInode(moved.withTimes(moved.atimeNanos(), moved.mtimeNanos(), now)); // rename changes ctime
                        }
                    }
                }
            }
        }
        namespace.delete(MetaKeys.id(MetaKeys.INTENT, intent.intentId()));
        namespace.delete(MetaKeys.named(MetaKeys.INTENT_BY_ENTRY, intent.parentId(), intent.name()));
        return HandshakeMessages.EMPTY;
    }

    public static RemoteIntentList list(Namespace namespace) {
        List<RemoteIntent> intents = new ArrayList<>();
        for (byte[][] pair : namespace.scan(new byte[] {MetaKeys.INTENT}, null, LIST_MAX)) {
            intents.add(MetaStore.decode(RemoteIntent.class, pair[1]));
        }
        return new RemoteIntentList(intents);
    }

    /** Whether intent {@code intentId} is still open here. */
    public static boolean open(Namespace namespace, long intentId) {
        return namespace.getRaw(MetaKeys.id(MetaKeys.INTENT, intentId)) != null;
    }

    /** Whether an open intent holds {@code name} in {@code parentId} (an entry that goes or moves): other changes of it wait. */
    public static boolean marked(Namespace namespace, long parentId, String name) {
        return namespace.getRaw(MetaKeys.named(MetaKeys.INTENT_BY_ENTRY, parentId, name)) != null;
    }

    public static AncestorList ancestors(Namespace namespace, ListAncestors request) {
        List<Long> chain = new ArrayList<>();
        long current = request.inodeId();
        while (chain.size() < ANCESTORS_MAX) {
            chain.add(current);
            if (current == InodeId.ROOT || !namespace.isLocal(current)) {
                break;
            }
            InodeRecord inode = namespace.inode(current);
            current = inode.parentId();
        }
        return new AncestorList(chain);
    }

    // ---- on the other MDTs

    public static AttributesReply make(Namespace namespace, MakeRemoteDirectory request) {
        requireRoot(namespace);
        long made = applied(namespace, request.coordinatorMdt(), request.intentId());
        if (made != 0) {
            return new AttributesReply(namespace.inode(made).toAttributes()); // asked again: the one made before
        }
        requireCurrentCoordinator(namespace, request.coordinatorMdt(), request.coordinatorTerm());
        if (InodeId.mdtIndex(request.parentId()) != request.coordinatorMdt() || request.coordinatorMdt() == namespace.mdtIndex()) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "the parent must be on the coordinating MDT, another one");
        }
        long now = namespace.now();
        long inodeId = namespace.allocateInodeId();
        InodeRecord directory = new InodeRecord(inodeId, FileType.DIRECTORY, request.mode() & InodeRecord.PERMISSION_BITS, request.uid(),
                request.gid(), 2, 0, now, now, now, 1, request.parentId(), request.layout(), null, 0, 0, 0);
        namespace.putInode(directory);
        markApplied(namespace, request.coordinatorMdt(), request.intentId(), inodeId);
        return new AttributesReply(directory.toAttributes());
    }

    public static Empty remove(Namespace namespace, RemoveRemoteDirectory request) {
        requireRoot(namespace);
        requireCurrentCoordinator(namespace, request.coordinatorMdt(), request.coordinatorTerm());
        InodeRecord directory = namespace.inodeOrNull(request.inodeId());
        if (directory == null) {
            return HandshakeMessages.EMPTY; // removed before: ids are never used again
        }
        if (!directory.isDirectory() || namespace.isLocal(directory.parentId())) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "inode " + InodeId.format(request.inodeId()) + " is not a remote directory");
        }
        requireOwner(directory, request.requiredOwnerUid());
        if (!namespace.scan(MetaKeys.id(MetaKeys.DENTRY, directory.inodeId()), null, 1).isEmpty()) {
            throw new PlinthException(ErrorCode.DIRECTORY_NOT_EMPTY, "directory " + InodeId.format(directory.inodeId()));
        }
        namespace.removeInode(directory);
        return HandshakeMessages.EMPTY;
    }

    public static AttributesReply adjustLinks(Namespace namespace, AdjustRemoteLinks request) {
        requireRoot(namespace);
        if (applied(namespace, request.coordinatorMdt(), request.intentId()) != 0) {
            InodeRecord now = namespace.inodeOrNull(request.inodeId());
            return new AttributesReply(now == null ? gone(request.inodeId()) : now.toAttributes());
        }
        requireCurrentCoordinator(namespace, request.coordinatorMdt(), request.coordinatorTerm());
        InodeRecord inode = namespace.inode(request.inodeId());
        if (inode.isDirectory()) {
            throw new PlinthException(ErrorCode.OPERATION_NOT_PERMITTED, "hard links to directories are not allowed");
        }
        InodeRecord changed;
        if (request.delta() > 0) {
            if (inode.linkCount() == 0) {
                throw new PlinthException(ErrorCode.NOT_FOUND, "file was removed");
            }
            if (inode.linkCount() >= Namespace.LINK_COUNT_MAX) {
                throw new PlinthException(ErrorCode.TOO_MANY_LINKS, "inode has " + inode.linkCount() + " links");
            }
            changed = inode.withLinkCount(inode.linkCount() + 1, namespace.now());
            namespace.putInode(changed);
        } else {
            requireOwner(inode, request.requiredOwnerUid());
            namespace.dropLink(inode);
            changed = inode.withLinkCount(inode.linkCount() - 1, namespace.now());
        }
        markApplied(namespace, request.coordinatorMdt(), request.intentId(), inode.inodeId());
        return new AttributesReply(changed.toAttributes());
    }

    /** A rename's arrival on this MDT: the usual rename rules for the target, with the caller's permissions. */
    public static Empty enterRenamed(Namespace namespace, EnterRenamed request) {
        requireRoot(namespace);
        if (applied(namespace, request.coordinatorMdt(), request.intentId()) != 0) {
            return HandshakeMessages.EMPTY;
        }
        requireCurrentCoordinator(namespace, request.coordinatorMdt(), request.coordinatorTerm());
        Credentials caller = request.caller();
        InodeRecord parent = namespace.directory(request.targetParentId());
        Namespace.check(caller, parent, Namespace.WRITE | Namespace.EXECUTE);
        if (parent.linkCount() == 0) {
            throw new PlinthException(ErrorCode.NOT_FOUND, "directory was removed");
        }
        String name = request.targetName();
        boolean directory = request.type() == FileType.DIRECTORY;
        long now = namespace.now();
        DentryRecord existing = namespace.dentry(parent.inodeId(), name);
        if (existing != null && existing.inodeId() != request.inodeId()) {
            if (existing.pending() || marked(namespace, parent.inodeId(), name)) {
                throw new PlinthException(ErrorCode.BUSY, "'" + name + "' is being changed on another MDT");
            }
            if (request.noReplace()) {
                throw new PlinthException(ErrorCode.ALREADY_EXISTS, "'" + name + "'");
            }
            if (!namespace.isLocal(existing.inodeId())) {
                throw new PlinthException(ErrorCode.CROSS_DEVICE, "'" + name + "' names an inode on MDT " + InodeId.mdtIndex(existing.inodeId())
                        + ": replacing it in a rename from another MDT is not supported");
            }
            InodeRecord target = namespace.inode(existing.inodeId());
            Namespace.checkSticky(caller, parent, target);
            if (directory && !target.isDirectory()) {
                throw new PlinthException(ErrorCode.NOT_A_DIRECTORY, "'" + name + "'");
            }
            if (!directory && target.isDirectory()) {
                throw new PlinthException(ErrorCode.IS_A_DIRECTORY, "'" + name + "'");
            }
            if (target.isDirectory()) {
                Rmdir.removeEmptyDirectory(namespace, parent, name, target);
            } else {
                Rename.removeReplacedFile(namespace, parent, name, target, now);
            }
            parent = namespace.inode(parent.inodeId());
        }
        if (existing == null || existing.inodeId() != request.inodeId()) {
            namespace.putDentry(parent.inodeId(), name, new DentryRecord(request.inodeId(), request.type()));
            namespace.putInode(parent.withChildDelta(1, directory ? 1 : 0, now));
        }
        if (namespace.isLocal(request.inodeId())) {
            InodeRecord moved = namespace.inode(request.inodeId());
            namespace.putInode(directory ? moved.withParent(parent.inodeId(), now) : moved.withTimes(moved.atimeNanos(), moved.mtimeNanos(), now));
        }
        markApplied(namespace, request.coordinatorMdt(), request.intentId(), request.inodeId());
        return HandshakeMessages.EMPTY;
    }

    public static Empty setParent(Namespace namespace, SetRemoteParent request) {
        requireRoot(namespace);
        requireCurrentCoordinator(namespace, request.coordinatorMdt(), request.coordinatorTerm());
        InodeRecord directory = namespace.inodeOrNull(request.inodeId());
        if (directory != null && directory.isDirectory() && directory.parentId() != request.parentId()) {
            namespace.putInode(directory.withParent(request.parentId(), namespace.now()));
        }
        return HandshakeMessages.EMPTY;
    }

    private static final byte[] RENAME_LOCK_KEY = MetaKeys.system("rename-lock");

    /** The lock directory moves take (on MDT 0): its value is the holder's lease end (the leader's clock) and its name. */
    public static Empty renameLock(Namespace namespace, dev.plinth.wire.messages.CrossMdtMessages.RenameLock request) {
        requireRoot(namespace);
        if (namespace.mdtIndex() != 0) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "the rename lock is MDT 0's");
        }
        byte[] held = namespace.getRaw(RENAME_LOCK_KEY);
        String holder = null;
        long until = 0;
        if (held != null) {
            ByteBuffer value = ByteBuffer.wrap(held);
            until = value.getLong();
            holder = java.nio.charset.StandardCharsets.UTF_8.decode(value).toString();
        }
        boolean mine = request.holder().equals(holder);
        if (!request.take()) {
            if (mine) {
                namespace.delete(RENAME_LOCK_KEY);
            }
            return HandshakeMessages.EMPTY;
        }
        if (held != null && !mine && until > namespace.now()) {
            throw new PlinthException(ErrorCode.BUSY, "another directory is being moved (" + holder + ")");
        }
        byte[] name = request.holder().getBytes(java.nio.charset.StandardCharsets.UTF_8);
        namespace.put(RENAME_LOCK_KEY, ByteBuffer.allocate(8 + name.length)
                .putLong(namespace.now() + Math.max(1, Math.min(request.leaseMillis(), 600_000)) * 1_000_000).put(name).array());
        return HandshakeMessages.EMPTY;
    }

    public static Empty forgetApplied(Namespace namespace, ForgetAppliedIntent request) {
        requireRoot(namespace);
        requireCurrentCoordinator(namespace, request.coordinatorMdt(), request.coordinatorTerm());
        namespace.delete(MetaKeys.twoIds(MetaKeys.APPLIED_INTENT, request.coordinatorMdt(), request.intentId()));
        return HandshakeMessages.EMPTY;
    }

    // ----

    /** The parent, checked as for a new entry {@code name}, which must not exist. */
    private static InodeRecord reservable(Namespace namespace, long parentId, String name) {
        InodeRecord parent = NewEntry.writableParent(namespace, parentId, name);
        if (namespace.dentry(parent.inodeId(), name) != null) {
            throw new PlinthException(ErrorCode.ALREADY_EXISTS, "'" + name + "'");
        }
        return parent;
    }

    /** Takes {@code name} for an inode another MDT is to give it. */
    private static void reserve(Namespace namespace, InodeRecord parent, String name) {
        namespace.putDentry(parent.inodeId(), name, new DentryRecord(DentryRecord.PENDING, FileType.DIRECTORY));
    }

    /** The entry {@code name}, which exists and no other intent holds. */
    private static DentryRecord markable(Namespace namespace, InodeRecord parent, String name) {
        Names.validateName(name);
        DentryRecord entry = namespace.dentry(parent.inodeId(), name);
        if (entry == null || entry.pending()) {
            throw new PlinthException(ErrorCode.NOT_FOUND, "'" + name + "'");
        }
        if (marked(namespace, parent.inodeId(), name)) {
            throw new PlinthException(ErrorCode.BUSY, "'" + name + "' is being changed on another MDT");
        }
        return entry;
    }

    /** The uid the inode must belong to for the caller to take it out of sticky {@code parent} (-1: any; its MDT checks). */
    private static int stickyOwner(Namespace namespace, InodeRecord parent) {
        boolean sticky = (parent.mode() & 01000) != 0 && !namespace.caller().isRoot() && namespace.caller().uid() != parent.uid();
        return sticky ? namespace.caller().uid() : -1;
    }

    /** Records the intent, and marks its entry (reserved or existing) as held by it. */
    private static void record(Namespace namespace, RemoteIntent intent) {
        namespace.put(MetaKeys.id(MetaKeys.INTENT, intent.intentId()), MetaStore.encode(intent));
        namespace.put(MetaKeys.named(MetaKeys.INTENT_BY_ENTRY, intent.parentId(), intent.name()),
                ByteBuffer.allocate(8).putLong(intent.intentId()).array());
    }

    /**
     * Refuses a part sent in an older term of {@code coordinatorMdt}'s leadership than the newest
     * this MDT has seen from it, and remembers the newest. A leader that was paused or cut off may
     * go on driving an intent its successor has since finished; once the successor has asked here
     * (it must, to finish or forget the intent), the former leader's parts are refused, so a part
     * whose applied record was forgotten cannot be applied twice. Term 0: a sender that does not say.
     */
    private static void requireCurrentCoordinator(Namespace namespace, int coordinatorMdt, long term) {
        if (term <= 0) {
            return;
        }
        byte[] key = MetaKeys.id(MetaKeys.COORDINATOR_TERM, coordinatorMdt);
        long newest = namespace.getLong(key, 0);
        if (term < newest) {
            throw new PlinthException(ErrorCode.NOT_LEADER, "MDT " + coordinatorMdt + " has a newer leader (term " + newest
                    + ") than the one asking (term " + term + ")");
        }
        if (term > newest) {
            namespace.putLong(key, term);
        }
    }

    /** Drops every coordinator term this MDT fenced by (a restored metadata service starts new Raft logs). */
    public static void forgetCoordinatorTerms(Namespace namespace) {
        for (byte[][] entry : namespace.scan(new byte[] {MetaKeys.COORDINATOR_TERM}, null, Integer.MAX_VALUE)) {
            namespace.delete(entry[0]);
        }
    }

    private static long applied(Namespace namespace, int coordinatorMdt, long intentId) {
        return namespace.getLong(MetaKeys.twoIds(MetaKeys.APPLIED_INTENT, coordinatorMdt, intentId), 0);
    }

    private static void markApplied(Namespace namespace, int coordinatorMdt, long intentId, long inodeId) {
        namespace.putLong(MetaKeys.twoIds(MetaKeys.APPLIED_INTENT, coordinatorMdt, intentId), inodeId);
    }

    private static dev.plinth.wire.messages.MetaMessages.Attributes gone(long inodeId) {
        return dev.plinth.wire.messages.MetaMessages.remoteStub(inodeId, FileType.FILE).withLinkCount(0);
    }

    private static long nextIntentId(Namespace namespace) {
        long next = namespace.getLong(NEXT_INTENT_ID_KEY, 1);
        namespace.putLong(NEXT_INTENT_ID_KEY, next + 1);
        return next;
    }

    private static void requireOwner(InodeRecord inode, int requiredOwnerUid) {
        if (requiredOwnerUid >= 0 && inode.uid() != requiredOwnerUid) {
            throw new PlinthException(ErrorCode.OPERATION_NOT_PERMITTED, "sticky directory");
        }
    }

    private static void requireRoot(Namespace namespace) {
        if (!namespace.caller().isRoot()) {
            throw new PlinthException(ErrorCode.PERMISSION_DENIED, "changes between MDTs are for root");
        }
    }
}
