package dev.plinth.meta;

import static java.util.Objects.requireNonNull;

import dev.plinth.common.Credentials;
import dev.plinth.common.ErrorCode;
import dev.plinth.common.InodeId;
import dev.plinth.common.PlinthException;
import dev.plinth.wire.MdtReplicas;
import dev.plinth.wire.messages.CrossMdtMessages.FinishRemoteIntent;
import dev.plinth.wire.messages.CrossMdtMessages.IntentKind;
import dev.plinth.wire.messages.CrossMdtMessages.ListRemoteIntents;
import dev.plinth.wire.messages.CrossMdtMessages.MakeRemoteDirectory;
import dev.plinth.wire.messages.CrossMdtMessages.PrepareRemoteMkdir;
import dev.plinth.wire.messages.CrossMdtMessages.PrepareRemoteRmdir;
import dev.plinth.wire.messages.CrossMdtMessages.RemoteIntent;
import dev.plinth.wire.messages.CrossMdtMessages.RemoteIntentList;
import dev.plinth.wire.messages.CrossMdtMessages.RemoveRemoteDirectory;
import dev.plinth.wire.messages.HandshakeMessages;
import dev.plinth.wire.messages.MetaMessages;
import dev.plinth.wire.messages.MetaMessages.AttributesReply;
import dev.plinth.wire.messages.MetaMessages.Mutation;
import dev.plinth.wire.messages.MetaMessages.OpHeader;
import dev.plinth.wire.messages.MetaMessages.Query;
import dev.plinth.wire.messages.MgmtMessages.ClusterMap;
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
    private final MdtReplicas otherMdts;
    private final ClusterMapSource clusterMap;
    private final ThreadPoolExecutor executor;
    private final Map<Long, CompletableFuture<Record>> inFlight = new ConcurrentHashMap<>();

    RemoteEntryCoordinator(int self, Function<Mutation, CompletableFuture<Record>> log, Function<Query, Record> readLocal,
                           java.util.function.LongPredicate intentOpen, MdtReplicas otherMdts, ClusterMapSource clusterMap) {
        this.intentOpen = requireNonNull(intentOpen, "intentOpen is null");
        this.self = self;
        this.log = requireNonNull(log, "log is null");
        this.readLocal = requireNonNull(readLocal, "readLocal is null");
        this.otherMdts = requireNonNull(otherMdts, "otherMdts is null");
        this.clusterMap = requireNonNull(clusterMap, "clusterMap is null");
        // the flows block on other MDTs; a few threads, a bounded queue
        this.executor = new ThreadPoolExecutor(4, 4, 60, TimeUnit.SECONDS, new ArrayBlockingQueue<>(1024),
                Thread.ofPlatform().name("meta-intents-", 0).daemon().factory());
    }

    /** Whether {@code mkdir} asks for a directory on another MDT than this one (its parent's). */
    boolean remote(MetaMessages.Mkdir mkdir) {
        return mkdir.mdt() != MetaMessages.Mkdir.WITH_PARENT && mkdir.mdt() != self;
    }

    /** Whether {@code rmdir}'s name is, as this replica sees it now, a directory another MDT holds. */
    boolean remote(MetaMessages.Rmdir rmdir) {
        ClusterMap map = clusterMap.current();
        if (map == null || map.mdts().size() < 2) {
            return false; // one MDT: no name here names a directory elsewhere
        }
        try {
            AttributesReply found = (AttributesReply) readLocal.apply(new MetaMessages.Lookup(rmdir.header(), rmdir.parentId(), rmdir.name()));
            return found.redirected() && InodeId.mdtIndex(found.attributes().inodeId()) != self;
        } catch (PlinthException e) {
            return false; // the usual rmdir answers it
        }
    }

    CompletableFuture<Record> mkdir(MetaMessages.Mkdir request) {
        ClusterMap map = clusterMap.current();
        if (map == null || map.mdt(request.mdt()) == null) {
            // the map may be a poll behind an MDT that registered a moment ago: asked again (off this thread) before refusing
            return clusterMap.refreshedLater().thenCompose(fresh -> fresh.mdt(request.mdt()) == null
                    ? CompletableFuture.failedFuture(new PlinthException(ErrorCode.INVALID_ARGUMENT, "there is no MDT " + request.mdt()))
                    : prepareMkdir(request));
        }
        return prepareMkdir(request);
    }

    private CompletableFuture<Record> prepareMkdir(MetaMessages.Mkdir request) {
        return log.apply(new PrepareRemoteMkdir(request.header(), request.parentId(), request.name(), request.mode(), request.mdt()))
                .thenCompose(intent -> drive((RemoteIntent) intent));
    }

    CompletableFuture<Record> rmdir(MetaMessages.Rmdir request) {
        return log.apply(new PrepareRemoteRmdir(request.header(), request.parentId(), request.name()))
                .handle((intent, failure) -> {
                    if (failure == null) {
                        return drive((RemoteIntent) intent);
                    }
                    if (unwrap(failure) instanceof PlinthException e && e.code() == ErrorCode.CHANGED) {
                        return log.apply(request); // the name is on this MDT after all
                    }
                    return CompletableFuture.<Record>failedFuture(unwrap(failure));
                }).thenCompose(next -> next);
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
                LOG.info("MDT {}: carrying on open intent {} ({} of '{}' in {}, MDT {})", self, intent.intentId(), intent.kind(),
                        intent.name(), InodeId.format(intent.parentId()), intent.mdt());
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
        Record result;
        try {
            result = switch (intent.kind()) {
                case MKDIR -> askOther(intent.mdt(), new MakeRemoteDirectory(INTERNAL, self, intent.intentId(), intent.parentId(),
                        intent.mode(), intent.uid(), intent.gid(), intent.layout()));
                case RMDIR -> askOther(intent.mdt(), new RemoveRemoteDirectory(INTERNAL, intent.inodeId(), intent.requiredOwnerUid()));
            };
        } catch (PlinthException e) {
            if (!transient_(e.code())) {
                finish(intent, false, 0); // refused for good: the name stays as it was
            }
            throw e;
        }
        long inodeId = result instanceof AttributesReply made ? made.attributes().inodeId() : intent.inodeId();
        finish(intent, true, inodeId);
        return intent.kind() == IntentKind.MKDIR ? result : HandshakeMessages.EMPTY;
    }

    /**
     * What a retried request learns of an intent finished before (its reply was lost): what its
     * name holds now. A directory made answers with its attributes; a removal that went through
     * answers done.
     */
    private Record outcome(RemoteIntent intent) {
        AttributesReply now;
        try {
            now = (AttributesReply) readLocal.apply(new MetaMessages.Lookup(INTERNAL, intent.parentId(), intent.name()));
        } catch (PlinthException e) {
            if (e.code() == ErrorCode.NOT_FOUND && intent.kind() == IntentKind.RMDIR) {
                return HandshakeMessages.EMPTY;
            }
            throw new PlinthException(ErrorCode.IO_ERROR, "the " + intent.kind() + " of '" + intent.name() + "' on MDT " + intent.mdt()
                    + " was abandoned");
        }
        if (intent.kind() == IntentKind.MKDIR && now.redirected() && InodeId.mdtIndex(now.attributes().inodeId()) == intent.mdt()) {
            return askOther(intent.mdt(), new MetaMessages.GetAttr(INTERNAL, now.attributes().inodeId()));
        }
        throw new PlinthException(intent.kind() == IntentKind.MKDIR ? ErrorCode.ALREADY_EXISTS : ErrorCode.DIRECTORY_NOT_EMPTY,
                "the " + intent.kind() + " of '" + intent.name() + "' on MDT " + intent.mdt() + " did not go through");
    }

    private void finish(RemoteIntent intent, boolean commit, long inodeId) {
        try {
            log.apply(new FinishRemoteIntent(INTERNAL, intent.intentId(), commit, inodeId)).join();
        } catch (CompletionException e) {
            throw unwrap(e);
        }
    }

    /** Asks MDT {@code mdt}, waiting out its unavailability for a while. */
    private <R extends Record> R askOther(int mdt, Record request) {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(OTHER_MDT_WAIT_MILLIS);
        while (true) {
            try {
                return otherMdts.request(mdt, request);
            } catch (PlinthException e) {
                if (!transient_(e.code()) || System.nanoTime() > deadline) {
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

    /** Errors after which the other MDT may answer later: the intent stays open. */
    private static boolean transient_(ErrorCode code) {
        return code == ErrorCode.UNAVAILABLE || code == ErrorCode.TIMED_OUT || code == ErrorCode.NOT_LEADER || code == ErrorCode.BUSY
                || code == ErrorCode.NOT_READY;
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
