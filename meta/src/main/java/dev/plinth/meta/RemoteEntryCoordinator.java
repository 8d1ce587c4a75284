package dev.plinth.meta;

import static java.util.Objects.requireNonNull;

import dev.plinth.common.Credentials;
import dev.plinth.common.ErrorCode;
import dev.plinth.common.FileType;
import dev.plinth.common.InodeId;
import dev.plinth.common.Permissions;
import dev.plinth.common.PlinthException;
import dev.plinth.wire.MdtReplicas;
import dev.plinth.wire.messages.CrossMdtMessages.AdjustRemoteLinks;
import dev.plinth.wire.messages.CrossMdtMessages.AncestorList;
import dev.plinth.wire.messages.CrossMdtMessages.EnterRenamed;
import dev.plinth.wire.messages.CrossMdtMessages.FinishRemoteIntent;
import dev.plinth.wire.messages.CrossMdtMessages.ForgetAppliedIntent;
import dev.plinth.wire.messages.CrossMdtMessages.IntentKind;
import dev.plinth.wire.messages.CrossMdtMessages.ListAncestors;
import dev.plinth.wire.messages.CrossMdtMessages.ListRemoteIntents;
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
import dev.plinth.wire.messages.MetaMessages;
import dev.plinth.wire.messages.MetaMessages.Attributes;
import dev.plinth.wire.messages.MetaMessages.AttributesReply;
import dev.plinth.wire.messages.MetaMessages.Mutation;
import dev.plinth.wire.messages.MetaMessages.OpHeader;
import dev.plinth.wire.messages.MetaMessages.Query;
import dev.plinth.wire.messages.MgmtMessages.ClusterMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Drives the intents of this MDT's leader (design note 93): a directory made on another MDT than
 * its parent's, and its removal. Each intent goes: prepared in this MDT's log (the name reserved
 * or the entry marked, after the usual checks), then the other MDT makes or removes the
 * directory (idempotent per intent), then the intent is finished in this log, committing the
 * name change or, where the other MDT refused for good, abandoning it. This MDT's entry decides:
 * a crash anywhere leaves an open intent that {@link #recover} carries forward when the leader
 * runs again. One intent is driven by one flow at a time on a leader; a deposed leader's flow
 * cannot finish it, because its log writes fail.
 */
final class RemoteEntryCoordinator implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(RemoteEntryCoordinator.class);
    /** How long a flow keeps asking an unavailable MDT before it answers its caller UNAVAILABLE (the intent stays open). */
    private static final long OTHER_MDT_WAIT_MILLIS = 20_000;
    private static final OpHeader INTERNAL = new OpHeader(0, 0, Credentials.ROOT, 0);

    private final int self;
    private final Function<Mutation, CompletableFuture<Record>> log;
    private final Function<Query, Record> readLocal;
    private final java.util.function.LongPredicate intentOpen;
    /** The term in which this replica leads its MDT (-1: it does not), stamped on every part sent to another MDT. */
    private final java.util.function.LongSupplier leaderTerm;
    private final MdtReplicas otherMdts;
    private final ClusterMapSource clusterMap;
    private final ThreadPoolExecutor executor;
    private final Map<Long, CompletableFuture<Record>> inFlight = new ConcurrentHashMap<>();
    private final long startedEpochNanos = System.currentTimeMillis() * 1_000_000;
    /** Intents this leader finished, by kind and outcome (committed: [kind][1], abandoned: [kind][0]), for the metrics. */
    private final java.util.concurrent.atomic.AtomicLongArray finished = new java.util.concurrent.atomic.AtomicLongArray(IntentKind.values().length * 2);

    /** Intents finished here since start: committed or abandoned, of {@code kind}. */
    long finished(IntentKind kind, boolean committed) {
        return finished.get(kind.ordinal() * 2 + (committed ? 1 : 0));
    }

    /** Open intents this MDT coordinates (up to a listing's worth) and the age of the oldest in seconds (0: none). */
    long[] openIntents() {
        List<RemoteIntent> open = ((RemoteIntentList) readLocal.apply(new ListRemoteIntents(INTERNAL))).intents();
        long oldest = open.stream().mapToLong(RemoteIntent::createdNanos).min().orElse(0);
        return new long[] {open.size(), oldest == 0 ? 0 : Math.max(0, (System.currentTimeMillis() * 1_000_000 - oldest) / 1_000_000_000)};
    }

    RemoteEntryCoordinator(int self, Function<Mutation, CompletableFuture<Record>> log, Function<Query, Record> readLocal,
                           java.util.function.LongPredicate intentOpen, java.util.function.LongSupplier leaderTerm, MdtReplicas otherMdts,
                           ClusterMapSource clusterMap) {
        this.intentOpen = requireNonNull(intentOpen, "intentOpen is null");
        this.leaderTerm = requireNonNull(leaderTerm, "leaderTerm is null");
        this.self = self;
        this.log = requireNonNull(log, "log is null");
        this.readLocal = requireNonNull(readLocal, "readLocal is null");
        this.otherMdts = requireNonNull(otherMdts, "otherMdts is null");
        this.clusterMap = requireNonNull(clusterMap, "clusterMap is null");
        // the flows block on other MDTs; a few threads, a bounded queue
        this.executor = new ThreadPoolExecutor(4, 4, 60, TimeUnit.SECONDS, new ArrayBlockingQueue<>(1024),
                Thread.ofPlatform().name("meta-intents-", 0).daemon().factory());
    }

    /**
     * {@code mutation} made through an intent where it spans MDTs; null where this MDT alone
     * makes it (as this replica sees the namespace now: a prepare checks again, and answers
     * CHANGED, after which the change is made here the usual way).
     */
    CompletableFuture<Record> route(Mutation mutation) {
        if (mutation instanceof MetaMessages.Mkdir mkdir) {
            return mkdir.mdt() == MetaMessages.Mkdir.WITH_PARENT || mkdir.mdt() == self ? null : mkdir(mkdir);
        }
        if (mutation instanceof MetaMessages.Link link) {
            return InodeId.mdtIndex(link.inodeId()) == self ? null
                    : prepared(new PrepareRemoteLink(link.header(), link.inodeId(), link.parentId(), link.name()), link);
        }
        ClusterMap map = clusterMap.current();
        if (map == null || map.mdts().size() < 2) {
            return null; // one MDT: every name here names an inode here
        }
        return switch (mutation) {
            case MetaMessages.Rmdir rmdir when remoteEntry(lookup(rmdir.header(), rmdir.parentId(), rmdir.name())) ->
                    prepared(new PrepareRemoteRemoval(rmdir.header(), rmdir.parentId(), rmdir.name(), true), rmdir);
            case MetaMessages.Unlink unlink when remoteEntry(lookup(unlink.header(), unlink.parentId(), unlink.name())) ->
                    prepared(new PrepareRemoteRemoval(unlink.header(), unlink.parentId(), unlink.name(), false), unlink);
            case MetaMessages.Rename rename when crossesMdts(rename) -> prepared(new PrepareRemoteRename(rename.header(),
                    rename.sourceParentId(), rename.sourceName(), rename.targetParentId(), rename.targetName(), rename.noReplace()), rename);
            default -> null;
        };
    }

    private CompletableFuture<Record> mkdir(MetaMessages.Mkdir request) {
        PrepareRemoteMkdir prepare = new PrepareRemoteMkdir(request.header(), request.parentId(), request.name(), request.mode(), request.mdt());
        ClusterMap map = clusterMap.current();
        if (map == null || map.mdt(request.mdt()) == null) {
            // the map may be a poll behind an MDT that registered a moment ago: asked again (off this thread) before refusing
            return clusterMap.refreshedLater().thenCompose(fresh -> fresh.mdt(request.mdt()) == null
                    ? CompletableFuture.failedFuture(new PlinthException(ErrorCode.INVALID_ARGUMENT, "there is no MDT " + request.mdt()))
                    : prepared(prepare, request));
        }
        return prepared(prepare, request);
    }

    /**
     * Logs {@code prepare} and drives the intent it records; where it answers CHANGED, logs
     * {@code usual} instead. A prepare waits while a backup holds intents ({@link #hold}).
     */
    private CompletableFuture<Record> prepared(Mutation prepare, Mutation usual) {
        CompletableFuture<Record> logged;
        try {
            logged = CompletableFuture.runAsync(this::enterPrepare, executor)
                    .thenCompose(ignored -> log.apply(prepare).whenComplete((result, failure) -> exitPrepare()));
        } catch (RejectedExecutionException e) {
            return CompletableFuture.failedFuture(new PlinthException(ErrorCode.BUSY, "too many changes between MDTs in progress"));
        }
        return logged.handle((intent, failure) -> {
            if (failure == null) {
                return drive((RemoteIntent) intent);
            }
            if (unwrap(failure) instanceof PlinthException e && e.code() == ErrorCode.CHANGED) {
                return log.apply(usual); // it is this MDT's alone after all
            }
            return CompletableFuture.<Record>failedFuture(unwrap(failure));
        }).thenCompose(next -> next);
    }

    /** What a lookup of {@code name} answers here now (null where it fails: the usual change answers that). */
    private AttributesReply lookup(OpHeader header, long parentId, String name) {
        try {
            return (AttributesReply) readLocal.apply(new MetaMessages.Lookup(header, parentId, name));
        } catch (PlinthException e) {
            return null;
        }
    }

    private boolean remoteEntry(AttributesReply found) {
        return found != null && found.redirected() && InodeId.mdtIndex(found.attributes().inodeId()) != self;
    }

    /**
     * Whether a rename needs other MDTs (a namespace with several): its destination is another
     * MDT's, its entry names an inode another MDT holds, or it moves a directory to another
     * parent (the check that it does not move into itself may have to look on other MDTs, and
     * must not race another such move: it takes the rename lock).
     */
    private boolean crossesMdts(MetaMessages.Rename rename) {
        if (InodeId.mdtIndex(rename.targetParentId()) != self) {
            return true;
        }
        AttributesReply source = lookup(rename.header(), rename.sourceParentId(), rename.sourceName());
        if (remoteEntry(source)) {
            return true;
        }
        // every move of a directory to another parent: it takes the rename lock, so that no two moves race into a loop
        return source != null && source.attributes().isDirectory() && rename.sourceParentId() != rename.targetParentId();
    }

    // ---- holding intents for a backup

    private final Object gate = new Object();
    /** Until when a backup holds new prepares (System.nanoTime; 0: not held). */
    private long heldUntilNanos;
    /** Prepares submitted and not yet applied. */
    private int preparing;

    private void enterPrepare() {
        synchronized (gate) {
            while (heldUntilNanos != 0) {
                long left = heldUntilNanos - System.nanoTime();
                if (left <= 0) {
                    heldUntilNanos = 0; // the backup that held it went away: its lease is over
                    break;
                }
                try {
                    gate.wait(Math.max(1, left / 1_000_000));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new PlinthException(ErrorCode.UNAVAILABLE, "metadata service is stopping");
                }
            }
            preparing++;
        }
    }

    private void exitPrepare() {
        synchronized (gate) {
            preparing--;
            gate.notifyAll();
        }
    }

    /**
     * Takes no new change across MDTs for {@code leaseMillis} (or until {@link #release}) and
     * waits until none that this MDT coordinates is open: copies of every MDT taken while all are
     * held agree on every name that crosses them. Fails with BUSY, letting go, if intents stay
     * open (another MDT away) for 30 s.
     */
    void hold(long leaseMillis) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        synchronized (gate) {
            heldUntilNanos = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(Math.max(1000, Math.min(leaseMillis, 600_000)));
        }
        while (true) {
            int open;
            synchronized (gate) {
                open = preparing;
            }
            open += ((RemoteIntentList) readLocal.apply(new ListRemoteIntents(INTERNAL))).intents().size();
            if (open == 0) {
                return;
            }
            if (System.nanoTime() > deadline) {
                release();
                throw new PlinthException(ErrorCode.BUSY, "MDT " + self + " has " + open + " changes across MDTs that do not finish (is another MDT away?)");
            }
            recover();
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                release();
                throw new PlinthException(ErrorCode.UNAVAILABLE, "metadata service is stopping");
            }
        }
    }

    void release() {
        synchronized (gate) {
            heldUntilNanos = 0;
            gate.notifyAll();
        }
    }

    /** Carries every open intent forward (the leader's housekeeping; at start, those a crash left). */
    void recover() {
        RemoteIntentList open;
        try {
            open = (RemoteIntentList) readLocal.apply(new ListRemoteIntents(INTERNAL));
        } catch (RuntimeException e) {
            LOG.debug("listing open intents failed: {}", e.toString());
            return;
        }
        for (RemoteIntent intent : open.intents()) {
            if (!inFlight.containsKey(intent.intentId())) {
                drive(intent).whenComplete((result, failure) -> {
                    if (failure != null) {
                        LOG.warn("MDT {}: intent {} still open: {}", self, intent.intentId(), unwrap(failure).toString());
                    }
                });
            }
        }
    }

    /** The one flow of {@code intent} on this leader: the running one, or a new one. */
    private CompletableFuture<Record> drive(RemoteIntent intent) {
        CompletableFuture<Record> created = new CompletableFuture<>();
        CompletableFuture<Record> running = inFlight.putIfAbsent(intent.intentId(), created);
        if (running != null) {
            return running;
        }
        if (intent.createdNanos() < startedEpochNanos) { // by recovery, or by the client's retry of the request
            LOG.info("MDT {}: carrying on intent {} ({} of '{}' in {}, MDT {}), prepared before this process started", self,
                    intent.intentId(), intent.kind(), intent.name(), InodeId.format(intent.parentId()), intent.mdt());
        }
        try {
            executor.execute(() -> {
                try {
                    created.complete(run(intent));
                } catch (RuntimeException e) {
                    created.completeExceptionally(e);
                } finally {
                    inFlight.remove(intent.intentId(), created);
                }
            });
        } catch (RejectedExecutionException e) {
            inFlight.remove(intent.intentId(), created);
            created.completeExceptionally(new PlinthException(ErrorCode.BUSY, "too many changes between MDTs in progress"));
        }
        return created;
    }

    private Record run(RemoteIntent intent) {
        if (!intentOpen.test(intent.intentId())) {
            return outcome(intent);
        }
        long term = leaderTerm.getAsLong(); // what the other MDTs fence this flow by, should a successor take the intent over
        if (term < 0) {
            throw new PlinthException(ErrorCode.NOT_LEADER, "MDT " + self + ": this replica no longer leads");
        }
        Record result;
        try {
            result = switch (intent.kind()) {
                case MKDIR -> ask(intent.mdt(), new MakeRemoteDirectory(INTERNAL, self, intent.intentId(), intent.parentId(),
                        intent.mode(), intent.caller().uid(), intent.gid(), intent.layout(), term));
                case RMDIR -> ask(intent.mdt(), new RemoveRemoteDirectory(INTERNAL, intent.inodeId(), intent.requiredOwnerUid(), self, term));
                case LINK -> ask(intent.mdt(), new AdjustRemoteLinks(INTERNAL, self, intent.intentId(), intent.inodeId(), 1, -1, term));
                case UNLINK -> ask(intent.mdt(), new AdjustRemoteLinks(INTERNAL, self, intent.intentId(), intent.inodeId(), -1,
                        intent.requiredOwnerUid(), term));
                case RENAME -> rename(intent, term);
            };
        } catch (PlinthException e) {
            if (!e.code().retryable()) { // a retryable error leaves the intent open: the other MDT may answer later
                finish(intent, false, 0, null); // refused for good: the names stay as they were
                releaseRenameLock(intent);
            }
            throw e;
        }
        if (result instanceof AttributesReply changed) {
            finish(intent, true, changed.attributes().inodeId(), changed.attributes().type());
        } else {
            finish(intent, true, intent.inodeId(), intent.type());
        }
        releaseRenameLock(intent);
        int applied = switch (intent.kind()) {
            case MKDIR, LINK, UNLINK -> intent.mdt();
            case RENAME -> InodeId.mdtIndex(intent.targetParentId());
            case RMDIR -> -1;
        };
        if (applied >= 0) {
            forget(applied, intent, term);
        }
        return intent.kind() == IntentKind.MKDIR || intent.kind() == IntentKind.LINK ? result : HandshakeMessages.EMPTY;
    }

    /**
     * A rename's parts on other MDTs: the checks that need the moved inode (the sticky rule, write
     * permission on a directory whose ".." changes, not into itself), its arrival at the
     * destination, and its new ".." where a third MDT holds it.
     */
    private Record rename(RemoteIntent intent, long term) {
        boolean directory = intent.type() == FileType.DIRECTORY;
        boolean newParent = intent.parentId() != intent.targetParentId();
        if (intent.requiredOwnerUid() >= 0 || directory && newParent) {
            Attributes moved = this.<AttributesReply>ask(intent.mdt(), new MetaMessages.GetAttr(INTERNAL, intent.inodeId())).attributes();
            if (intent.requiredOwnerUid() >= 0 && moved.uid() != intent.requiredOwnerUid()) {
                throw new PlinthException(ErrorCode.OPERATION_NOT_PERMITTED, "sticky directory");
            }
            if (directory && newParent && !Permissions.allowed(intent.caller(), moved.mode(), moved.uid(), moved.gid(), true, Permissions.WRITE)) {
                throw new PlinthException(ErrorCode.PERMISSION_DENIED, "uid " + intent.caller().uid() + " on the directory moved");
            }
        }
        if (directory && newParent) {
            takeRenameLock(intent); // held until the intent is finished (run lets go)
            requireNotInto(intent.inodeId(), intent.targetParentId());
        }
        int destination = InodeId.mdtIndex(intent.targetParentId());
        ask(destination, new EnterRenamed(INTERNAL, self, intent.intentId(), intent.caller(), intent.targetParentId(), intent.targetName(),
                intent.inodeId(), intent.type(), intent.noReplace(), term));
        if (directory && newParent && intent.mdt() != destination) {
            ask(intent.mdt(), new SetRemoteParent(INTERNAL, intent.inodeId(), intent.targetParentId(), self, term));
        }
        return HandshakeMessages.EMPTY;
    }

    /** How long the rename lock is held at most, should its holder's MDT go away mid-move. */
    private static final long RENAME_LOCK_LEASE_MILLIS = 30_000;

    private static boolean movesDirectory(RemoteIntent intent) {
        return intent.kind() == IntentKind.RENAME && intent.type() == FileType.DIRECTORY && intent.parentId() != intent.targetParentId();
    }

    private String renameLockHolder(RemoteIntent intent) {
        return "MDT " + self + " intent " + intent.intentId();
    }

    /**
     * Takes MDT 0's rename lock for {@code intent}: {@link #ask} waits while another move holds it
     * (BUSY), as long as it waits for an MDT.
     */
    private void takeRenameLock(RemoteIntent intent) {
        ask(0, new dev.plinth.wire.messages.CrossMdtMessages.RenameLock(INTERNAL, renameLockHolder(intent), true, RENAME_LOCK_LEASE_MILLIS));
    }

    private void releaseRenameLock(RemoteIntent intent) {
        if (!movesDirectory(intent)) {
            return;
        }
        try {
            ask(0, new dev.plinth.wire.messages.CrossMdtMessages.RenameLock(INTERNAL, renameLockHolder(intent), false, 0), 0);
        } catch (RuntimeException e) {
            LOG.debug("the rename lock goes with its lease: {}", e.toString());
        }
    }

    /** Fails with EINVAL where {@code destinationId} is directory {@code directoryId} or below it, walking up across MDTs. */
    private void requireNotInto(long directoryId, long destinationId) {
        long current = destinationId;
        for (int hops = 0; hops < 4096; hops++) {
            List<Long> chain = this.<AncestorList>ask(InodeId.mdtIndex(current), new ListAncestors(INTERNAL, current)).inodeIds();
            if (chain.contains(directoryId)) {
                throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "cannot move a directory into itself");
            }
            long last = chain.getLast();
            if (last == InodeId.ROOT) {
                return;
            }
            current = last;
            if (chain.size() == 1) {
                throw new PlinthException(ErrorCode.INTERNAL, "the parent chain of " + InodeId.format(last) + " is broken");
            }
        }
        throw new PlinthException(ErrorCode.INTERNAL, "directory tree too deep");
    }

    /**
     * What a retried request learns of an intent finished before (its reply was lost): what the
     * names hold now. A directory made or a link added answers with the inode's attributes; a
     * name that went answers done.
     */
    private Record outcome(RemoteIntent intent) {
        AttributesReply now = lookup(INTERNAL, intent.parentId(), intent.name());
        switch (intent.kind()) {
            case MKDIR, LINK -> {
                if (now != null && now.redirected() && InodeId.mdtIndex(now.attributes().inodeId()) == intent.mdt()) {
                    return ask(intent.mdt(), new MetaMessages.GetAttr(INTERNAL, now.attributes().inodeId()));
                }
            }
            case RMDIR, UNLINK, RENAME -> {
                if (now == null || now.attributes().inodeId() != intent.inodeId()) {
                    return HandshakeMessages.EMPTY;
                }
            }
        }
        throw new PlinthException(ErrorCode.CHANGED, "the " + intent.kind() + " of '" + intent.name() + "' did not go through; try again");
    }

    private void finish(RemoteIntent intent, boolean commit, long inodeId, FileType type) {
        dev.plinth.common.FaultPoints.delay(dev.plinth.common.FaultPoints.META_INTENT_STEP_DELAY_MILLIS);
        try {
            log.apply(new FinishRemoteIntent(INTERNAL, intent.intentId(), commit, inodeId, type)).join();
        } catch (CompletionException e) {
            throw unwrap(e);
        }
        finished.incrementAndGet(intent.kind().ordinal() * 2 + (commit ? 1 : 0));
    }

    /** Tells MDT {@code mdt} that its record of having applied its part of {@code intent} may go (once; it stays if this fails). */
    private void forget(int mdt, RemoteIntent intent, long term) {
        try {
            ask(mdt, new ForgetAppliedIntent(INTERNAL, self, intent.intentId(), term), 0);
        } catch (RuntimeException e) {
            LOG.debug("MDT {} keeps its record of intent {}: {}", mdt, intent.intentId(), e.toString());
        }
    }

    /** Asks MDT {@code mdt} (this one through its own log), waiting out its unavailability for a while. */
    private <R extends Record> R ask(int mdt, Record request) {
        return ask(mdt, request, OTHER_MDT_WAIT_MILLIS);
    }

    @SuppressWarnings("unchecked")
    private <R extends Record> R ask(int mdt, Record request, long waitMillis) {
        dev.plinth.common.FaultPoints.delay(dev.plinth.common.FaultPoints.META_INTENT_STEP_DELAY_MILLIS);
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(waitMillis);
        while (true) {
            try {
                if (mdt != self) {
                    return otherMdts.request(mdt, request);
                }
                if (request instanceof Query query) {
                    return (R) readLocal.apply(query);
                }
                try {
                    return (R) log.apply((Mutation) request).join();
                } catch (CompletionException e) {
                    throw unwrap(e);
                }
            } catch (PlinthException e) {
                if (!e.code().retryable() || System.nanoTime() > deadline) {
                    throw e;
                }
            }
            try {
                Thread.sleep(200);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new PlinthException(ErrorCode.UNAVAILABLE, "metadata service is stopping");
            }
        }
    }

    private static RuntimeException unwrap(Throwable failure) {
        Throwable cause = failure instanceof CompletionException && failure.getCause() != null ? failure.getCause() : failure;
        return cause instanceof RuntimeException runtime ? runtime : new PlinthException(ErrorCode.INTERNAL, cause.toString(), cause);
    }

    @Override
    public void close() {
        executor.shutdownNow();
    }
}
