package dev.plinth.wire.messages;

import dev.plinth.common.Layout;
import dev.plinth.wire.messages.MetaMessages.Mutation;
import dev.plinth.wire.messages.MetaMessages.OpHeader;
import dev.plinth.wire.messages.MetaMessages.Query;
import java.util.List;

/**
 * Changes of a name on one MDT whose inode another MDT holds (several MDTs, design note 93): a
 * directory made on another MDT than its parent's, and its removal. The parent's MDT coordinates:
 * it records an intent in its log, asks the other MDT to make or remove the inode (a change that
 * is idempotent per intent), and then commits or abandons the name, recovering open intents when
 * its leader starts. The messages between MDTs are for root only.
 */
public final class CrossMdtMessages {
    private CrossMdtMessages() {}

    public enum IntentKind { MKDIR, RMDIR }

    /**
     * An open intent on the coordinating MDT. {@code inodeId}: the remote directory (RMDIR; 0 for
     * a MKDIR until it is made); {@code mode}, {@code uid}, {@code gid}, {@code layout}: the new
     * directory's (MKDIR); {@code requiredOwnerUid}: the uid the directory must belong to for a
     * removal from a sticky parent (-1: any).
     */
    public record RemoteIntent(long intentId, IntentKind kind, long parentId, String name, int mdt, long inodeId, int mode, int uid,
                               int gid, Layout layout, int requiredOwnerUid, long createdNanos) {}

    /** Records the intent to make directory {@code name} in {@code parentId} on MDT {@code mdt}, reserving the name. */
    public record PrepareRemoteMkdir(OpHeader header, long parentId, String name, int mode, int mdt) implements Mutation {}

    /** Records the intent to remove remote directory {@code name} from {@code parentId}, after the usual checks. */
    public record PrepareRemoteRmdir(OpHeader header, long parentId, String name) implements Mutation {}

    /** Ends an intent: {@code commit} its name change (with the made directory's {@code inodeId}), or abandon it. */
    public record FinishRemoteIntent(OpHeader header, long intentId, boolean commit, long inodeId) implements Mutation {}

    public record ListRemoteIntents(OpHeader header) implements Query {}

    public record RemoteIntentList(List<RemoteIntent> intents) {}

    /** On the other MDT: makes the directory of intent {@code intentId} of MDT {@code coordinatorMdt}, or returns the one made before. */
    public record MakeRemoteDirectory(OpHeader header, int coordinatorMdt, long intentId, long parentId, int mode, int uid, int gid,
                                      Layout layout) implements Mutation {}

    /** On the other MDT: removes empty directory {@code inodeId} (done already if it is gone). */
    public record RemoveRemoteDirectory(OpHeader header, long inodeId, int requiredOwnerUid) implements Mutation {}
}
