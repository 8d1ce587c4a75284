package dev.plinth.meta.ops;

import dev.plinth.common.ErrorCode;
import dev.plinth.common.FileType;
import dev.plinth.common.InodeId;
import dev.plinth.common.PlinthException;
import dev.plinth.meta.Namespace;
import dev.plinth.meta.store.DentryRecord;
import dev.plinth.meta.store.InodeRecord;
import dev.plinth.meta.store.MetaKeys;
import dev.plinth.meta.store.MetaStore;
import dev.plinth.wire.messages.CrossMdtMessages.FinishRemoteIntent;
import dev.plinth.wire.messages.CrossMdtMessages.IntentKind;
import dev.plinth.wire.messages.CrossMdtMessages.MakeRemoteDirectory;
import dev.plinth.wire.messages.CrossMdtMessages.PrepareRemoteMkdir;
import dev.plinth.wire.messages.CrossMdtMessages.PrepareRemoteRmdir;
import dev.plinth.wire.messages.CrossMdtMessages.RemoteIntent;
import dev.plinth.wire.messages.CrossMdtMessages.RemoteIntentList;
import dev.plinth.wire.messages.CrossMdtMessages.RemoveRemoteDirectory;
import dev.plinth.wire.messages.HandshakeMessages;
import dev.plinth.wire.messages.HandshakeMessages.Empty;
import dev.plinth.wire.messages.MetaMessages.AttributesReply;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

/**
 * The log's side of directories made on another MDT than their parent's (design note 93). On
 * the parent's MDT (the coordinator): an intent is prepared with the usual checks, reserving the
 * name (a MKDIR) or marking the entry (an RMDIR), and later finished, committing or abandoning
 * the name change in one batch. On the other MDT: making the directory for an intent (once,
 * however often it is asked) and removing an empty one. The service drives the steps in between
 * ({@code dev.plinth.meta.RemoteEntryCoordinator}).
 */
public final class RemoteEntries {
    private static final byte[] NEXT_INTENT_ID_KEY = MetaKeys.system("next-intent-id");
    /** Open intents a listing returns at most (recovery takes them a page at a time). */
    public static final int LIST_MAX = 1000;

    private RemoteEntries() {}

    public static RemoteIntent prepareMkdir(Namespace namespace, PrepareRemoteMkdir request) {
        if (request.mdt() < 0 || request.mdt() == namespace.mdtIndex() || request.mdt() >= 1 << InodeId.MDT_BITS) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "MDT " + request.mdt() + " is not another MDT");
        }
        InodeRecord parent = NewEntry.writableParent(namespace, request.parentId(), request.name());
        if (namespace.dentry(parent.inodeId(), request.name()) != null) {
            throw new PlinthException(ErrorCode.ALREADY_EXISTS, "'" + request.name() + "'");
        }
        if (parent.linkCount() >= Namespace.LINK_COUNT_MAX) {
            throw new PlinthException(ErrorCode.TOO_MANY_LINKS, "too many subdirectories");
        }
        // the new directory's owner and mode as NewEntry would set them here
        boolean setGroupId = (parent.mode() & 02000) != 0;
        int gid = setGroupId ? parent.gid() : namespace.caller().gid();
        int permissions = request.mode() & InodeRecord.PERMISSION_BITS | (setGroupId ? 02000 : 0);
        RemoteIntent intent = new RemoteIntent(nextIntentId(namespace), IntentKind.MKDIR, parent.inodeId(), request.name(), request.mdt(),
                0, permissions, namespace.caller().uid(), gid, parent.layout(), -1, namespace.now());
        // the name is taken (and the parent not empty) from now on; the entry names the directory once it is made
        namespace.putDentry(parent.inodeId(), request.name(), new DentryRecord(DentryRecord.PENDING, FileType.DIRECTORY));
        namespace.putInode(parent.withChildDelta(1, 1, namespace.now()));
        record(namespace, intent);
        return intent;
    }

    public static RemoteIntent prepareRmdir(Namespace namespace, PrepareRemoteRmdir request) {
        InodeRecord parent = namespace.directory(request.parentId());
        namespace.check(parent, Namespace.WRITE | Namespace.EXECUTE);
        DentryRecord entry = namespace.dentry(parent.inodeId(), request.name());
        if (entry == null || entry.pending()) {
            throw new PlinthException(ErrorCode.NOT_FOUND, "'" + request.name() + "'");
        }
        if (namespace.isLocal(entry.inodeId())) {
            throw new PlinthException(ErrorCode.CHANGED, "'" + request.name() + "' is on this MDT"); // the service removes it the usual way
        }
        if (entry.type() != FileType.DIRECTORY) {
            throw new PlinthException(ErrorCode.NOT_A_DIRECTORY, "'" + request.name() + "'");
        }
        if (namespace.getRaw(MetaKeys.named(MetaKeys.INTENT_BY_ENTRY, parent.inodeId(), request.name())) != null) {
            throw new PlinthException(ErrorCode.BUSY, "'" + request.name() + "' is being removed");
        }
        // the sticky rule needs the directory's owner, which its MDT checks when it removes it
        boolean sticky = (parent.mode() & 01000) != 0 && !namespace.caller().isRoot() && namespace.caller().uid() != parent.uid();
        RemoteIntent intent = new RemoteIntent(nextIntentId(namespace), IntentKind.RMDIR, parent.inodeId(), request.name(),
                InodeId.mdtIndex(entry.inodeId()), entry.inodeId(), 0, namespace.caller().uid(), namespace.caller().gid(), null,
                sticky ? namespace.caller().uid() : -1, namespace.now());
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
        switch (intent.kind()) {
            case MKDIR -> {
                if (request.commit()) {
                    if (InodeId.mdtIndex(request.inodeId()) != intent.mdt()) {
                        throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "the directory was to be made on MDT " + intent.mdt());
                    }
                    namespace.putDentry(parent.inodeId(), intent.name(), new DentryRecord(request.inodeId(), FileType.DIRECTORY));
                    namespace.putInode(parent.withTimes(parent.atimeNanos(), now, now));
                } else {
                    namespace.deleteDentry(parent.inodeId(), intent.name());
                    namespace.putInode(parent.withChildDelta(-1, -1, now));
                }
            }
            case RMDIR -> {
                if (request.commit()) {
                    namespace.deleteDentry(parent.inodeId(), intent.name());
                    namespace.putInode(parent.withChildDelta(-1, -1, now));
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

    // ---- on the MDT that holds the directory

    public static AttributesReply make(Namespace namespace, MakeRemoteDirectory request) {
        requireRoot(namespace);
        byte[] madeKey = MetaKeys.twoIds(MetaKeys.MADE_FOR_INTENT, request.coordinatorMdt(), request.intentId());
        long made = namespace.getLong(madeKey, 0);
        if (made != 0) {
            return new AttributesReply(namespace.inode(made).toAttributes()); // asked again: the one made before
        }
        if (InodeId.mdtIndex(request.parentId()) != request.coordinatorMdt() || request.coordinatorMdt() == namespace.mdtIndex()) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "the parent must be on the coordinating MDT, another one");
        }
        long now = namespace.now();
        long inodeId = namespace.allocateInodeId();
        InodeRecord directory = new InodeRecord(inodeId, FileType.DIRECTORY, request.mode() & InodeRecord.PERMISSION_BITS, request.uid(),
                request.gid(), 2, 0, now, now, now, 1, request.parentId(), request.layout(), null, 0, 0, 0);
        namespace.putInode(directory);
        namespace.putLong(madeKey, inodeId);
        namespace.put(MetaKeys.id(MetaKeys.INTENT_OF_MADE, inodeId), madeKey);
        return new AttributesReply(directory.toAttributes());
    }

    public static Empty remove(Namespace namespace, RemoveRemoteDirectory request) {
        requireRoot(namespace);
        InodeRecord directory = namespace.inodeOrNull(request.inodeId());
        if (directory == null) {
            return HandshakeMessages.EMPTY; // removed before: ids are never used again
        }
        if (!directory.isDirectory() || namespace.isLocal(directory.parentId())) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "inode " + InodeId.format(request.inodeId()) + " is not a remote directory");
        }
        if (request.requiredOwnerUid() >= 0 && directory.uid() != request.requiredOwnerUid()) {
            throw new PlinthException(ErrorCode.OPERATION_NOT_PERMITTED, "sticky directory");
        }
        if (!namespace.scan(MetaKeys.id(MetaKeys.DENTRY, directory.inodeId()), null, 1).isEmpty()) {
            throw new PlinthException(ErrorCode.DIRECTORY_NOT_EMPTY, "directory " + InodeId.format(directory.inodeId()));
        }
        byte[] madeKey = namespace.getRaw(MetaKeys.id(MetaKeys.INTENT_OF_MADE, directory.inodeId()));
        if (madeKey != null) {
            namespace.delete(madeKey);
            namespace.delete(MetaKeys.id(MetaKeys.INTENT_OF_MADE, directory.inodeId()));
        }
        namespace.removeInode(directory);
        return HandshakeMessages.EMPTY;
    }

    // ----

    private static void record(Namespace namespace, RemoteIntent intent) {
        namespace.put(MetaKeys.id(MetaKeys.INTENT, intent.intentId()), MetaStore.encode(intent));
        namespace.put(MetaKeys.named(MetaKeys.INTENT_BY_ENTRY, intent.parentId(), intent.name()),
                ByteBuffer.allocate(8).putLong(intent.intentId()).array());
    }

    private static long nextIntentId(Namespace namespace) {
        long next = namespace.getLong(NEXT_INTENT_ID_KEY, 1);
        namespace.putLong(NEXT_INTENT_ID_KEY, next + 1);
        return next;
    }

    private static void requireRoot(Namespace namespace) {
        if (!namespace.caller().isRoot()) {
            throw new PlinthException(ErrorCode.PERMISSION_DENIED, "changes between MDTs are for root");
        }
    }
}
