package dev.plinth.wire.messages;

import dev.plinth.wire.messages.MetaMessages.Attributes;
import dev.plinth.wire.messages.MetaMessages.Mutation;
import dev.plinth.wire.messages.MetaMessages.OpHeader;
import dev.plinth.wire.messages.MetaMessages.Query;
import java.util.ArrayList;
import java.util.List;

/**
 * Hierarchical storage management, as Lustre has it: per-file HSM state kept with the inode, and a
 * queue of actions (archive, restore, remove) per MDT that movers take, run against an archive and
 * report on. Release needs no mover: the metadata service frees the file's chunks itself.
 */
public final class HsmMessages {
    private HsmMessages() {}

    // ---- state bits: Lustre's hsm_states values, kept in Attributes#flags from bit STATES_SHIFT on

    public static final int EXISTS = 0x1;
    public static final int DIRTY = 0x2;
    public static final int RELEASED = 0x4;
    public static final int ARCHIVED = 0x8;
    public static final int NORELEASE = 0x10;
    public static final int NOARCHIVE = 0x20;
    public static final int LOST = 0x40;
    public static final int STATES_SHIFT = 8;
    /** The flags a file's owner may set and clear; root may also set and clear the states but RELEASED. */
    public static final int USER_FLAGS = NORELEASE | NOARCHIVE;
    public static final int ADMIN_STATES = EXISTS | DIRTY | ARCHIVED | LOST | USER_FLAGS;

    public static int states(Attributes attributes) {
        return statesOf(attributes.flags());
    }

    /** The state bits held in an inode's flags. */
    public static int statesOf(int flags) {
        return (flags >>> STATES_SHIFT) & 0xff;
    }

    public static boolean released(Attributes attributes) {
        return (states(attributes) & RELEASED) != 0;
    }

    /** The words {@code lfs hsm_state} prints for the state bits, in its order. */
    public static List<String> lustreWords(int states) {
        List<String> words = new ArrayList<>();
        int[] bits = {RELEASED, EXISTS, DIRTY, ARCHIVED, NORELEASE, NOARCHIVE, LOST};
        String[] names = {"released", "exists", "dirty", "archived", "never_release", "never_archive", "lost_from_hsm"};
        for (int i = 0; i < bits.length; i++) {
            if ((states & bits[i]) != 0) {
                words.add(names[i]);
            }
        }
        return words;
    }

    // ---- action kinds and results

    public static final int ARCHIVE = 1;
    public static final int RESTORE = 2;
    public static final int REMOVE = 3;
    public static final int RELEASE = 4;
    public static final int CANCEL = 5;

    public static String kindName(int kind) {
        return switch (kind) {
            case ARCHIVE -> "archive";
            case RESTORE -> "restore";
            case REMOVE -> "remove";
            case RELEASE -> "release";
            case CANCEL -> "cancel";
            default -> "kind-" + kind;
        };
    }

    /** A waiting action; RUNNING once a mover took it (until its lease ends without progress). */
    public static final int WAITING = 0;
    public static final int RUNNING = 1;

    public static final int SUCCEEDED = 0;
    public static final int FAILED = 1;
    /** The archived copy is gone or corrupt: the file's state becomes lost. */
    public static final int COPY_LOST = 2;

    /**
     * The archived copy of a file: where it is ({@code archiveId}, {@code objectKey}), what it was
     * taken from (the file's size and mtime then), the store's version token, and the CRC32C of
     * each part of {@code partBytes}, which every restored byte is checked against.
     */
    public record ArchivedCopy(int archiveId, String objectKey, long sizeBytes, long mtimeNanos, String version, int partBytes,
                               List<Integer> partCrcs, long archivedAtNanos) {
        public ArchivedCopy {
            partCrcs = List.copyOf(partCrcs);
        }
    }

    /**
     * One queued action: at most one per file. {@code mover} is the client id of the session
     * running it, which keeps it while it reports progress before {@code leaseUntilNanos}.
     * {@code doneBytes} of a restore: the bytes from the file's start that are back, checked
     * against their parts' CRCs and flushed to the targets; readers may read those meanwhile.
     */
    public record Action(long actionId, long inodeId, int kind, int archiveId, int status, long mover, long leaseUntilNanos,
                         long enqueuedNanos, long doneBytes, long totalBytes, int attempts) {
        public Action withStatus(int newStatus, long newMover, long newLeaseUntil, int newAttempts) {
            return new Action(actionId, inodeId, kind, archiveId, newStatus, newMover, newLeaseUntil, enqueuedNanos, doneBytes, totalBytes,
                    newAttempts);
        }

        public Action withProgress(long newDone, long newTotal, long newLeaseUntil) {
            return new Action(actionId, inodeId, kind, archiveId, status, mover, newLeaseUntil, enqueuedNanos, newDone, newTotal, attempts);
        }
    }

    /**
     * A file's HSM state: the bits, its archived copy (null: none), the action queued or running
     * for it (null: none), and why its last action failed (null: it did not).
     * {@code supersededCopy}: in the answer to a finished archive, the copy the new one replaced,
     * for the mover to remove from its archive (null otherwise).
     */
    public record HsmState(long inodeId, int states, int archiveId, ArchivedCopy copy, Action action, String lastError,
                           ArchivedCopy supersededCopy) {}

    public record ActionList(List<Action> actions, boolean more) {}

    /** The archived copy of a file that was removed, and when: movers delete it from its archive after a grace period. */
    public record RemovedCopy(long inodeId, ArchivedCopy copy, long removedAtNanos) {}

    public record RemovedCopies(List<RemovedCopy> copies, boolean more) {}

    // ---- queries

    public record GetHsmState(OpHeader header, long inodeId) implements Query {}

    /** Actions after {@code afterActionId} in the order movers take them (restores first), at most {@code limit}. */
    public record ListActions(OpHeader header, long afterActionId, int limit) implements Query {}

    /** Archived copies of removed files, after inode {@code afterInodeId}, at most {@code limit}. */
    public record ListRemovedCopies(OpHeader header, long afterInodeId, int limit) implements Query {}

    // ---- changes

    /** A mover (root) deleted these removed files' copies from their archives, or keeps them for good: the MDT forgets them. */
    public record ForgetRemovedCopies(OpHeader header, List<Long> inodeIds) implements Mutation {}

    /** Sets, then clears, state bits: the owner {@link #USER_FLAGS}, root {@link #ADMIN_STATES}. */
    public record SetHsmFlags(OpHeader header, long inodeId, int set, int clear) implements Mutation {}

    /**
     * Asks for an action on a file (its owner or root; a restore, anyone who may read it). Release is done at once; archive, restore and
     * remove are queued, or join the same action already queued; cancel drops the queued one.
     */
    public record RequestAction(OpHeader header, long inodeId, int kind, int archiveId) implements Mutation {}

    /** A mover takes up to {@code max} actions: waiting ones, or running ones whose lease ended; restores first. */
    public record TakeActions(OpHeader header, long leaseMillis, int max) implements Mutation {}

    /** The mover running an action reports progress and keeps its lease; NOT_FOUND once it was cancelled or handed on. */
    public record ReportProgress(OpHeader header, long actionId, long doneBytes, long totalBytes, long leaseMillis) implements Mutation {}

    /**
     * The mover ends an action. {@code result}: {@link #SUCCEEDED}, {@link #FAILED} or
     * {@link #COPY_LOST}; {@code error} says why it did not succeed. An archive names the copy it
     * made, and the size and mtime it read the file at: if the file changed since, the archive
     * fails (CHANGED) and the mover removes the copy.
     */
    public record FinishAction(OpHeader header, long actionId, int result, String error, long readSizeBytes, long readMtimeNanos,
                               ArchivedCopy copy) implements Mutation {}
}
