package dev.plinth.client;

import dev.plinth.common.ErrorCode;
import dev.plinth.common.InodeId;
import dev.plinth.common.PlinthException;
import dev.plinth.wire.messages.HsmMessages;
import dev.plinth.wire.messages.HsmMessages.Action;
import dev.plinth.wire.messages.HsmMessages.ActionList;
import dev.plinth.wire.messages.HsmMessages.ArchivedCopy;
import dev.plinth.wire.messages.HsmMessages.HsmState;
import dev.plinth.wire.messages.MetaMessages.Attributes;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CompletableFuture;

/**
 * HSM calls: a file's state and flags, asking for actions, and what movers call to take and
 * finish them ({@link PlinthClient#hsm()}). Also the transparent restore every read path uses:
 * a released file is restored by asking for it and waiting, one wait per file per client
 * however many readers need it; a reader waits only until its own range is back
 * ({@link RestoreProgress}).
 */
public final class HsmAccess {
    private final PlinthClient client;
    private final long restoreWaitMillis;
    private final ConcurrentHashMap<Long, CompletableFuture<Attributes>> restoring = new ConcurrentHashMap<>();

    HsmAccess(PlinthClient client, long restoreWaitMillis) {
        this.client = client;
        this.restoreWaitMillis = restoreWaitMillis;
    }

    public HsmState state(long inodeId) {
        return client.meta(new HsmMessages.GetHsmState(client.header(), inodeId));
    }

    public HsmState setFlags(long inodeId, int set, int clear) {
        return client.meta(new HsmMessages.SetHsmFlags(client.header(), inodeId, set, clear));
    }

    /** Asks for an action ({@link HsmMessages#ARCHIVE} and the rest); release is done when this returns. */
    public HsmState request(long inodeId, int kind, int archiveId) {
        return client.meta(new HsmMessages.RequestAction(client.header(), inodeId, kind, archiveId));
    }

    /**
     * Each MDT keeps the queue of its own files' actions (action ids are per MDT) and the list of
     * its removed files' copies: movers and listings ask every MDT in the cluster map.
     */
    public java.util.List<Integer> mdts() {
        long now = System.nanoTime();
        if (now - mdtsCheckedNanos > MDTS_CHECK_NANOS) { // a long-running mover learns of MDTs added since it started
            mdtsCheckedNanos = now;
            try {
                client.refreshClusterMap();
            } catch (PlinthException e) {
                // the map it has
            }
        }
        java.util.TreeSet<Integer> mdts = new java.util.TreeSet<>(java.util.List.of(0)); // MDT 0 answers before it registered, too
        client.clusterMap().mdts().forEach(mdt -> mdts.add(mdt.mdtId()));
        return java.util.List.copyOf(mdts);
    }

    private static final long MDTS_CHECK_NANOS = 5_000_000_000L;
    private volatile long mdtsCheckedNanos = System.nanoTime();

    /** MDT 0's queued and running actions, in the order movers take them. */
    public ActionList actions(long afterActionId, int limit) {
        return actions(0, afterActionId, limit);
    }

    /** MDT {@code mdt}'s queued and running actions, in the order movers take them. */
    public ActionList actions(int mdt, long afterActionId, int limit) {
        return client.metaOn(mdt, new HsmMessages.ListActions(client.header(), afterActionId, limit));
    }

    // ---- for movers (root)

    public ActionList take(long leaseMillis, int max) {
        return take(0, leaseMillis, max);
    }

    public ActionList take(int mdt, long leaseMillis, int max) {
        return client.metaOn(mdt, new HsmMessages.TakeActions(client.header(), leaseMillis, max));
    }

    /** Reports an action's progress to the MDT that queued it (its file's). */
    public Action progress(Action action, long doneBytes, long totalBytes, long leaseMillis) {
        return client.metaOn(InodeId.mdtIndex(action.inodeId()),
                new HsmMessages.ReportProgress(client.header(), action.actionId(), doneBytes, totalBytes, leaseMillis));
    }

    public HsmState finish(Action action, int result, String error, long readSizeBytes, long readMtimeNanos, ArchivedCopy copy) {
        return client.metaOn(InodeId.mdtIndex(action.inodeId()),
                new HsmMessages.FinishAction(client.header(), action.actionId(), result, error, readSizeBytes, readMtimeNanos, copy));
    }

    /** MDT 0's archived copies of removed files, a page at a time. */
    public HsmMessages.RemovedCopies removedCopies(long afterInodeId, int limit) {
        return removedCopies(0, afterInodeId, limit);
    }

    public HsmMessages.RemovedCopies removedCopies(int mdt, long afterInodeId, int limit) {
        return client.metaOn(mdt, new HsmMessages.ListRemovedCopies(client.header(), afterInodeId, limit));
    }

    public void forgetRemovedCopies(int mdt, java.util.List<Long> inodeIds) {
        client.metaOn(mdt, new HsmMessages.ForgetRemovedCopies(client.header(), inodeIds));
    }

    // ---- transparent restore

    /**
     * Restores a released file and returns its attributes once it is resident again: asks for the
     * restore (joining one already queued) and waits for a mover to finish it, up to
     * hsm.restore-wait-millis. Fails with ARCHIVE_UNREADABLE (EIO) when the restore failed or the copy is lost, and
     * with RESTORE_PENDING (EIO; S3 503) when no mover finished it in time.
     */
    public Attributes restore(long inodeId) {
        CompletableFuture<Attributes> mine = new CompletableFuture<>();
        CompletableFuture<Attributes> shared = restoring.putIfAbsent(inodeId, mine);
        if (shared != null) {
            return join(shared);
        }
        try {
            mine.complete(waitForRestore(inodeId));
        } catch (RuntimeException e) {
            mine.completeExceptionally(e);
        } finally {
            restoring.remove(inodeId, mine);
        }
        return join(mine);
    }

    private static Attributes join(CompletableFuture<Attributes> restore) {
        try {
            return restore.join();
        } catch (java.util.concurrent.CompletionException e) {
            throw e.getCause() instanceof RuntimeException runtime ? runtime : e;
        }
    }

    private Attributes waitForRestore(long inodeId) {
        RestoreProgress progress = restoreInOrder(inodeId);
        if (progress != null) {
            progress.await(Long.MAX_VALUE); // no restored prefix reaches it: returns once the file is resident
        }
        return client.getAttr(inodeId);
    }

    /**
     * Asks for a released file's restore (joining one already queued) without waiting for it:
     * the returned progress tells a handle's reads when their range is back; null if the file is
     * resident by now. Fails with ARCHIVE_UNREADABLE when the file's copy is lost.
     */
    RestoreProgress restoreInOrder(long inodeId) {
        RestoreProgress progress = new RestoreProgress(inodeId);
        progress.learn(request(inodeId, HsmMessages.RESTORE, 0));
        if (progress.failure != null) {
            throw progress.failure;
        }
        return progress.resident ? null : progress;
    }

    /**
     * A released file's restore as one handle's reads see it. The mover writes the file back from
     * its start, a checked part at a time, and reports after each flush how many bytes from the
     * start are back ({@link Action#doneBytes}); a read waits until its range lies within them, so
     * the first bytes of a large file come long before its last. Polled with queries (no log
     * entries), one at a time for the handle's concurrent reads.
     */
    final class RestoreProgress {
        private static final long POLL_GAP_NANOS = 2_000_000;
        private final long inodeId;
        private volatile long restoredBytes;
        private volatile boolean resident;
        private volatile PlinthException failure;
        private boolean polled;
        private long polledAtNanos;

        private RestoreProgress(long inodeId) {
            this.inodeId = inodeId;
        }

        /**
         * Waits until the file's first {@code end} bytes are back, at most hsm.restore-wait-millis;
         * true once the whole file is resident (the caller can read it as any other file). With
         * {@code Long.MAX_VALUE}, waits for the whole restore.
         */
        boolean await(long end) {
            long deadline = client.clock().nanoTime() + restoreWaitMillis * 1_000_000;
            long pause = 1;
            while (true) {
                if (resident) {
                    return true;
                }
                if (failure != null) {
                    throw failure;
                }
                if (restoredBytes >= end) {
                    return false;
                }
                poll();
                if (resident || failure != null || restoredBytes >= end) {
                    continue;
                }
                if (client.clock().nanoTime() - deadline > 0) {
                    String what = end == Long.MAX_VALUE ? "inode " + InodeId.format(inodeId) + " was"
                            : "bytes up to " + end + " of inode " + InodeId.format(inodeId) + " were";
                    throw new PlinthException(ErrorCode.RESTORE_PENDING, what + " not restored within " + restoreWaitMillis
                            + " ms (hsm.restore-wait-millis): is a mover running (plinth hsm queue)?");
                }
                try {
                    Thread.sleep(pause);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new PlinthException(ErrorCode.INTERRUPTED, "waiting for the restore of inode " + InodeId.format(inodeId));
                }
                pause = Math.min(50, pause * 2);
            }
        }

        private synchronized void poll() {
            long now = client.clock().nanoTime();
            if (polled && now - polledAtNanos < POLL_GAP_NANOS) {
                return; // another reader just asked
            }
            polled = true;
            polledAtNanos = now;
            learn(state(inodeId));
        }

        private void learn(HsmState state) {
            if ((state.states() & HsmMessages.RELEASED) == 0) {
                resident = true;
            } else if (state.action() == null || (state.states() & HsmMessages.LOST) != 0) {
                failure = new PlinthException(ErrorCode.ARCHIVE_UNREADABLE, "restore of inode " + InodeId.format(inodeId) + " failed"
                        + (state.lastError() == null ? "" : ": " + state.lastError()));
            } else if (state.action().kind() == HsmMessages.RESTORE) {
                restoredBytes = Math.max(restoredBytes, state.action().doneBytes());
            }
        }
    }
}
