package dev.plinth.wire.messages;

import dev.plinth.common.Credentials;
import dev.plinth.common.FileType;
import dev.plinth.common.Layout;
import dev.plinth.wire.messages.MetaMessages.Mutation;
import dev.plinth.wire.messages.MetaMessages.OpHeader;
import dev.plinth.wire.messages.MetaMessages.Query;
import java.util.List;

/**
 * Changes of names on one MDT whose inodes another MDT holds, or that move a name from one MDT to
 * another (several MDTs, design note 93): a directory made on another MDT than its parent's and
 * its removal, a hard link or unlink of a file held elsewhere, and rename across MDTs. One MDT
 * coordinates (the one whose name goes or comes): it records an intent in its log after the
 * usual checks, asks the other MDTs for their parts (each applied once per intent however often
 * it is asked), and then commits or abandons its own part; its leader carries open intents
 * forward after a crash. The steps between MDTs are for root only.
 */
public final class CrossMdtMessages {
    private CrossMdtMessages() {}

    public enum IntentKind { MKDIR, RMDIR, LINK, UNLINK, RENAME }

    /**
     * An open intent on the coordinating MDT, for {@code caller}'s change of {@code name} in
     * {@code parentId} (this MDT's): {@code inodeId} and {@code type}: the inode the name gives
     * or takes (0 for a MKDIR until it is made), held by MDT {@code mdt}; for a RENAME, the name's
     * new place {@code targetParentId} and {@code targetName}, with {@code noReplace}; for a
     * MKDIR, the new directory's {@code mode}, {@code gid} and {@code layout};
     * {@code requiredOwnerUid}: the uid the inode must belong to (a sticky parent; -1: any).
     */
    public record RemoteIntent(long intentId, IntentKind kind, Credentials caller, long parentId, String name, long inodeId, FileType type,
                               int mdt, long targetParentId, String targetName, boolean noReplace, int mode, int gid, Layout layout,
                               int requiredOwnerUid, long createdNanos) {}

    /** Records the intent to make directory {@code name} in {@code parentId} on MDT {@code mdt}, reserving the name. */
    public record PrepareRemoteMkdir(OpHeader header, long parentId, String name, int mode, int mdt) implements Mutation {}

    /** Records the intent to remove {@code name} from {@code parentId}: a directory (RMDIR) or a file's name (UNLINK) another MDT holds. */
    public record PrepareRemoteRemoval(OpHeader header, long parentId, String name, boolean directory) implements Mutation {}

    /** Records the intent to link {@code inodeId} (another MDT's) as {@code name} in {@code parentId}, reserving the name. */
    public record PrepareRemoteLink(OpHeader header, long inodeId, long parentId, String name) implements Mutation {}

    /** Records the intent to rename across MDTs (or a name whose inode another MDT holds), marking the source entry. */
    public record PrepareRemoteRename(OpHeader header, long sourceParentId, String sourceName, long targetParentId, String targetName,
                                      boolean noReplace) implements Mutation {}

    /** Ends an intent: {@code commit} this MDT's part (with the inode made, for a MKDIR; with its type, for a LINK), or abandon it. */
    public record FinishRemoteIntent(OpHeader header, long intentId, boolean commit, long inodeId, FileType type) implements Mutation {}

    public record ListRemoteIntents(OpHeader header) implements Query {}

    public record RemoteIntentList(List<RemoteIntent> intents) {}

    /**
     * {@code inodeId} and its ancestors on the MDT asked, from it up: to the root, or to the first
     * one another MDT holds (listed last), at most a page.
     */
    public record ListAncestors(OpHeader header, long inodeId) implements Query {}

    public record AncestorList(List<Long> inodeIds) {}

    // ---- the parts other MDTs apply (once per coordinating MDT and intent)
    //
    // Each carries the Raft term in which its sender leads the coordinating MDT (0 where it does not
    // say): an MDT refuses a part from an older term than the newest it has seen from that MDT, so a
    // former leader still at work after a pause or a cut cannot apply again a part its successor
    // finished and had forgotten.

    /** Makes the directory of the intent, or returns the one made before. */
    public record MakeRemoteDirectory(OpHeader header, int coordinatorMdt, long intentId, long parentId, int mode, int uid, int gid,
                                      Layout layout, long coordinatorTerm) implements Mutation {}

    /** Removes empty directory {@code inodeId} (done already if it is gone). */
    public record RemoveRemoteDirectory(OpHeader header, long inodeId, int requiredOwnerUid, int coordinatorMdt, long coordinatorTerm)
            implements Mutation {}

    /** Adds ({@code delta} 1) or drops (-1) a link of file {@code inodeId}, whose name another MDT adds or removes. */
    public record AdjustRemoteLinks(OpHeader header, int coordinatorMdt, long intentId, long inodeId, int delta, int requiredOwnerUid,
                                    long coordinatorTerm) implements Mutation {}

    /**
     * A rename's arrival: {@code targetName} in {@code targetParentId} (this MDT's) names
     * {@code inodeId} of {@code type}, replacing a file or empty directory there unless
     * {@code noReplace}, with {@code caller}'s permissions checked here.
     */
    public record EnterRenamed(OpHeader header, int coordinatorMdt, long intentId, Credentials caller, long targetParentId, String targetName,
                               long inodeId, FileType type, boolean noReplace, long coordinatorTerm) implements Mutation {}

    /** Directory {@code inodeId} now lives in {@code parentId} (its "..", after a rename on other MDTs). */
    public record SetRemoteParent(OpHeader header, long inodeId, long parentId, int coordinatorMdt, long coordinatorTerm)
            implements Mutation {}

    /**
     * On MDT 0: takes ({@code take}) or lets go of the one lock that every rename moving a
     * directory to another parent holds while a namespace has several MDTs, for {@code holder}
     * (an MDT and its intent); a take renews the holder's lease of {@code leaseMillis}, and is
     * BUSY while another holder's lease runs. With the moves one at a time, the walk that checks
     * a directory is not moved below itself cannot race another move (as Linux's rename mutex).
     */
    public record RenameLock(OpHeader header, String holder, boolean take, long leaseMillis) implements Mutation {}

    /** The coordinator finished the intent: the record that this MDT applied its part goes. */
    public record ForgetAppliedIntent(OpHeader header, int coordinatorMdt, long intentId, long coordinatorTerm) implements Mutation {}
}
