package dev.plinth.meta;

import static java.util.Objects.requireNonNull;

import io.prometheus.metrics.core.metrics.CounterWithCallback;
import io.prometheus.metrics.core.metrics.GaugeWithCallback;
import io.prometheus.metrics.model.registry.PrometheusRegistry;

import dev.plinth.common.Config;
import dev.plinth.raft.RaftReplica;
import dev.plinth.wire.messages.BackupMessages;
import dev.plinth.wire.messages.FsckMessages;
import dev.plinth.wire.messages.MdtGroupMessages;
import dev.plinth.common.Credentials;
import dev.plinth.common.ErrorCode;
import dev.plinth.common.InodeId;
import dev.plinth.common.Layout;
import dev.plinth.common.PlinthException;
import dev.plinth.common.Settings;
import dev.plinth.wire.HostPort;
import dev.plinth.wire.Protocol;
import dev.plinth.wire.Reply;
import dev.plinth.wire.RequestContext;
import dev.plinth.wire.RpcConnections;
import dev.plinth.wire.RpcDispatcher;
import dev.plinth.wire.messages.MetaMessages;
import dev.plinth.wire.messages.MetaMessages.AttributesReply;
import dev.plinth.wire.messages.MetaMessages.Mutation;
import dev.plinth.wire.messages.MetaMessages.OpHeader;
import dev.plinth.wire.messages.MetaMessages.Query;
import dev.plinth.wire.messages.MetaMessages.RemovedFile;
import dev.plinth.wire.messages.MgmtMessages.ChainInfo;
import dev.plinth.wire.messages.MgmtMessages.ClusterMap;
import dev.plinth.wire.messages.MgmtMessages.NodeInfo;
import dev.plinth.wire.messages.MgmtMessages.TargetInfo;
import dev.plinth.wire.messages.StorageMessages.RemoveFile;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.reflect.RecordComponent;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The metadata role of one MDT: serves the namespace API over RPC. Before a change goes into
 * the log, the leader stamps it with its clock and places new files on chains, so that applying
 * the entry is deterministic on every replica. Changes that arrive together share one log entry:
 * a batcher thread takes whatever is queued (up to 256 changes) as one entry, with a few entries
 * in flight, so under concurrency the per-entry cost of the log is paid once per batch while a
 * lone change waits for nobody. Also runs the leader's housekeeping: expiring client sessions,
 * and freeing the chunks of removed files on storage (the cleaner).
 */
public final class MetaService implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(MetaService.class);
    private static final int CLEANER_QUEUE_MAX = 10_000;
    private static final int CHANGE_QUEUE_MAX = 16_384;
    private static final int ENTRIES_IN_FLIGHT_MAX = 4;

    /** A stamped, placed change waiting for its log entry. */
    private record PendingChange(MetaCodec.EncodedChange encoded, Class<? extends Record> responseType, CompletableFuture<Record> result) {}

    private final RaftReplica raft;
    private final MetaStateMachine stateMachine;
    private final ClusterMapSource clusterMap;
    private final RpcConnections connections;
    private final long leaseMillis;
    /** What changes are stamped with (mtime, ctime, session leases) and removed files' keep time is read against. */
    private final dev.plinth.common.Clock clock;
    /** Free space kept on the metadata disk for what frees space (meta.reserve-bytes). */
    private final long reserveBytes;
    private final dev.plinth.common.DiskSpace diskSpace;
    private final Placement placement = new Placement();
    private final ThreadPoolExecutor readExecutor;
    private final ScheduledExecutorService housekeeping;
    private final MdtBackups backups;
    private final BlockingQueue<Removal> removedFiles = new ArrayBlockingQueue<>(CLEANER_QUEUE_MAX);
    private final Thread cleaner;
    private final BlockingQueue<PendingChange> changes = new ArrayBlockingQueue<>(CHANGE_QUEUE_MAX);
    private final java.util.concurrent.Semaphore entriesInFlight = new java.util.concurrent.Semaphore(ENTRIES_IN_FLIGHT_MAX);
    private final Thread batcher;
    private final RemoteEntryCoordinator remoteEntries;
    private volatile boolean closed;
    /** Queries running inline on callers' threads: {@link #close} waits for them, as for the read pool, before the store goes. */
    private final java.util.concurrent.atomic.AtomicInteger inlineReads = new java.util.concurrent.atomic.AtomicInteger();

    public MetaService(RaftReplica raft, MetaStateMachine stateMachine, ClusterMapSource clusterMap, RpcConnections connections,
                       Config config, dev.plinth.common.Clock clock) {
        this.clock = requireNonNull(clock, "clock is null");
        this.raft = requireNonNull(raft, "raft is null");
        this.stateMachine = requireNonNull(stateMachine, "stateMachine is null");
        this.clusterMap = requireNonNull(clusterMap, "clusterMap is null");
        this.connections = requireNonNull(connections, "connections is null");
        this.leaseMillis = config.get(Settings.META_SESSION_LEASE_MILLIS);
        this.reserveBytes = config.get(Settings.META_RESERVE_BYTES);
        this.diskSpace = new dev.plinth.common.DiskSpace(stateMachine.storeDirectory());
        int threads = config.get(Settings.META_IO_THREADS);
        this.readExecutor = new ThreadPoolExecutor(threads, threads, 60, TimeUnit.SECONDS, new ArrayBlockingQueue<>(4096),
                Thread.ofPlatform().name("meta-read-", 0).daemon().factory());
        this.backups = new MdtBackups(stateMachine);
        this.housekeeping = Executors.newSingleThreadScheduledExecutor(Thread.ofPlatform().name("meta-housekeeping").daemon().factory());
        this.cleaner = Thread.ofPlatform().name("meta-cleaner").daemon().unstarted(this::cleanLoop);
        this.batcher = Thread.ofPlatform().name("meta-batcher").daemon().unstarted(this::batchLoop);
        this.remoteEntries = new RemoteEntryCoordinator(stateMachine.mdtIndex(), this::log, stateMachine::queryRecord,
                stateMachine::intentOpen, raft::leaderTerm, new dev.plinth.wire.MdtReplicas(connections, clusterMap::current, null, config), clusterMap);
        stateMachine.onRemovedFiles(files -> files.forEach(file -> {
            if (!removedFiles.offer(new Removal(file, clock.nanoTime()))) {
                LOG.debug("cleaner queue full; file {} waits for the next scan", InodeId.format(file.inodeId()));
            }
        }));
    }

    /** Registers this MDT's gauges: Raft role and indexes, inodes, queue depths. */
    public void registerMetrics(PrometheusRegistry registry) {
        String mdt = Integer.toString(stateMachine.mdtIndex());
        gauge(registry, "plinth_meta_raft_leader", "1 where this replica leads its MDT's Raft group.", () -> raft.isLeader() ? 1 : 0, mdt);
        gauge(registry, "plinth_meta_raft_commit_index", "Highest committed index of the MDT's Raft log.", raft::commitIndex, mdt);
        gauge(registry, "plinth_meta_raft_applied_index", "Highest index the MDT's state machine has applied.", stateMachine::appliedIndex, mdt);
        gauge(registry, "plinth_meta_inodes", "Inodes in the MDT.", stateMachine::inodeCount, mdt);
        gauge(registry, "plinth_meta_data_bytes", "Bytes of files' Data-on-MDT parts stored in the MDT.", stateMachine::mdtDataBytes, mdt);
        gauge(registry, "plinth_meta_cache_bytes", "Estimated memory the MDT replica's record cache holds (meta.cache-bytes at most).",
                stateMachine::cacheBytes, mdt);
        CounterWithCallback.builder().name("plinth_meta_cache_lookups").help("Query reads of the MDT replica's record cache, "
                + "by result: hit (answered from memory) or miss (read from RocksDB).").labelNames("mdt", "result")
                .callback(callback -> {
                    callback.call(stateMachine.cacheHits(), mdt, "hit");
                    callback.call(stateMachine.cacheMisses(), mdt, "miss");
                }).register(registry);
        gauge(registry, "plinth_hsm_queue_actions", "HSM actions (archive, restore, remove) queued or running on the MDT.",
                stateMachine::hsmQueuedActions, mdt);
        GaugeWithCallback.builder().name("plinth_meta_intents_open").help("Changes across MDTs this MDT coordinates that are open "
                + "(prepared, waiting for another MDT's part), by what the value is: count, or oldest_seconds (their oldest's age). "
                + "Open for more than a few seconds: another MDT is away; its leader finishes them when it is back.")
                .labelNames("mdt", "value").callback(callback -> {
                    if (raft.isSingleReplica() || raft.isLeader()) {
                        long[] open = remoteEntries.openIntents();
                        callback.call(open[0], mdt, "count");
                        callback.call(open[1], mdt, "oldest_seconds");
                    }
                }).register(registry);
        CounterWithCallback.builder().name("plinth_meta_intents").help("Changes across MDTs this MDT's leader finished since it "
                + "started, by kind (mkdir, rmdir, link, unlink, rename) and outcome (committed; abandoned: another MDT refused its part).")
                .labelNames("mdt", "kind", "outcome").callback(callback -> {
                    for (dev.plinth.wire.messages.CrossMdtMessages.IntentKind kind : dev.plinth.wire.messages.CrossMdtMessages.IntentKind.values()) {
                        String name = kind.name().toLowerCase(java.util.Locale.ROOT);
                        callback.call(remoteEntries.finished(kind, true), mdt, name, "committed");
                        callback.call(remoteEntries.finished(kind, false), mdt, name, "abandoned");
                    }
                }).register(registry);
        gauge(registry, "plinth_meta_change_queue_changes", "Metadata changes waiting to be logged.", changes::size, mdt);
        gauge(registry, "plinth_meta_removed_files_queue_files", "Removed files whose chunks wait to be freed.", removedFiles::size, mdt);
    }

    private static void gauge(PrometheusRegistry registry, String name, String help, java.util.function.LongSupplier value, String mdt) {
        GaugeWithCallback.builder().name(name).help(help).labelNames("mdt").callback(callback -> callback.call(value.getAsLong(), mdt))
                .register(registry);
    }

    public void start() {
        offerPendingRemovals(CLEANER_QUEUE_MAX / 2);
        batcher.start();
        cleaner.start();
        long period = Math.max(100, leaseMillis / 2);
        housekeeping.scheduleWithFixedDelay(this::expireSessions, period, period, TimeUnit.MILLISECONDS);
        housekeeping.scheduleWithFixedDelay(() -> offerPendingRemovals(1000), 30, 30, TimeUnit.SECONDS);
        housekeeping.scheduleWithFixedDelay(() -> backups.removeAbandoned(System.currentTimeMillis()), 0, 10, TimeUnit.MINUTES);
        housekeeping.scheduleWithFixedDelay(this::recoverIntents, 1, 5, TimeUnit.SECONDS);
    }

    /** The leader carries open cross-MDT intents forward (those a crash or an unavailable MDT left). */
    private void recoverIntents() {
        if (raft.isSingleReplica() || raft.isLeaderReady()) {
            remoteEntries.recover();
        }
    }

    /** Does now what the periodic scan does every 30 s: queues again every removed file the namespace still lists. */
    public void rescanRemovedFiles() {
        offerPendingRemovals(CLEANER_QUEUE_MAX / 2);
    }

    /** Queues removed files the namespace still lists (found at start, or not queued when the queue was full), as seen now. */
    private void offerPendingRemovals(int max) {
        long now = clock.nanoTime();
        stateMachine.pendingRemovedFiles(max).forEach(file -> removedFiles.offer(new Removal(file, now)));
    }

    /** A removed file, and when this replica learned of it: its chunks are freed {@link MetaMessages#REMOVED_FILE_KEPT_MILLIS} later. */
    private record Removal(RemovedFile file, long seenNanos) {
        boolean due(long nowNanos) {
            return nowNanos - seenNanos >= TimeUnit.MILLISECONDS.toNanos(MetaMessages.REMOVED_FILE_KEPT_MILLIS);
        }
    }

    public void register(RpcDispatcher dispatcher) {
        for (Class<?> type : Query.class.getPermittedSubclasses()) {
            registerQuery(dispatcher, type.asSubclass(Record.class));
        }
        for (Class<?> type : Mutation.class.getPermittedSubclasses()) {
            registerMutation(dispatcher, type.asSubclass(Record.class));
        }
        dispatcher.register(BackupMessages.StartMdtBackup.class, (context, request, data) ->
                adminTask(request.header(), backups::start).thenApply(Reply::of));
        dispatcher.register(BackupMessages.ReadBackupFile.class, (context, request, data) -> adminTask(request.header(),
                () -> new BackupMessages.BackupBytes(backups.read(request.backupId(), request.name(), request.offset(), request.length())))
                .thenApply(Reply::of));
        dispatcher.register(BackupMessages.EndMdtBackup.class, (context, request, data) -> adminTask(request.header(), () -> {
            backups.end(request.backupId());
            return new dev.plinth.wire.messages.HandshakeMessages.Empty();
        }).thenApply(Reply::of));
        dispatcher.register(BackupMessages.HoldIntents.class, (context, request, data) -> adminTask(request.header(), () -> {
            if (request.hold()) {
                remoteEntries.hold(request.leaseMillis());
            } else {
                remoteEntries.release();
            }
            return new dev.plinth.wire.messages.HandshakeMessages.Empty();
        }).thenApply(Reply::of));
        dispatcher.register(MdtGroupMessages.ChangeMdtReplicas.class, (context, request, data) -> {
            if (request.header().credentials().uid() != 0) {
                return CompletableFuture.failedFuture(new PlinthException(ErrorCode.PERMISSION_DENIED, "changing an MDT's replicas is for root"));
            }
            PlinthException notLeading = notLeading();
            if (notLeading != null) {
                return CompletableFuture.failedFuture(notLeading);
            }
            LOG.info("MDT {}: adding replica {}, removing replica {}", stateMachine.mdtIndex(), request.add(), request.remove());
            return raft.changePeers(request.add(), request.remove())
                    .thenApply(peers -> Reply.of(new MdtGroupMessages.MdtReplicaList(stateMachine.mdtIndex(), peers)));
        });
        dispatcher.register(FsckMessages.CheckNamespace.class, (context, request, data) ->
                adminTask(request.header(), stateMachine::checkNamespace).thenApply(Reply::of));
        dispatcher.register(FsckMessages.ListFileChains.class, (context, request, data) -> adminTask(request.header(),
                () -> stateMachine.fileChains(request.afterInodeId(), request.limit(), request.removed())).thenApply(Reply::of));
    }

    /** A backup or fsck step, for root only, on the leader (a backup's copy is where it began), off the network thread. */
    private <R extends Record> CompletableFuture<R> adminTask(OpHeader header, java.util.function.Supplier<R> task) {
        if (header.credentials().uid() != 0) {
            return CompletableFuture.failedFuture(new PlinthException(ErrorCode.PERMISSION_DENIED, "backups and fsck are for root"));
        }
        PlinthException notLeading = notLeading();
        if (notLeading != null) {
            return CompletableFuture.failedFuture(notLeading);
        }
        try {
            return CompletableFuture.supplyAsync(task, readExecutor);
        } catch (RejectedExecutionException e) {
            return CompletableFuture.failedFuture(new PlinthException(ErrorCode.BUSY, "metadata read queue is full"));
        }
    }

    private <Q extends Record> void registerQuery(RpcDispatcher dispatcher, Class<Q> type) {
        dispatcher.register(type, (context, request, data) -> query((Query) request, readsInline(context, (Query) request))
                .thenApply(Reply::of));
    }

    /**
     * Whether a query may read RocksDB on the thread that calls (a direct in-JVM call) rather than
     * in the read pool. A platform thread may block. A virtual thread may run the point queries: a
     * few gets of a store that lives in the page cache pin its carrier for microseconds, while the
     * hand-off to the pool and back is two thread wake-ups (in paired runs of 5,000 small S3 GETs,
     * 0.13-0.25 ms of server CPU per GET inline against 0.16-0.40 through the pool; design note 56).
     * Directory and xattr listings scan, for a page of entries, and keep going to the pool, so that
     * a carrier is never held for long.
     */
    private static boolean readsInline(RequestContext context, Query query) {
        if (context.onCallerThread()) {
            return true;
        }
        boolean scans = query instanceof MetaMessages.ReadDir || query instanceof MetaMessages.ReadDirPlus
                || query instanceof MetaMessages.ListXattr;
        return !scans && Thread.currentThread().isVirtual();
    }

    private <Q extends Record> void registerMutation(RpcDispatcher dispatcher, Class<Q> type) {
        dispatcher.register(type, (context, request, data) -> mutate((Mutation) request).thenApply(Reply::of));
    }

    /** Runs a query on this MDT and returns its response record. */
    public CompletableFuture<Record> query(Query query) {
        return query(query, false);
    }

    /**
     * As above; {@code inline}: the calling thread may run the read ({@link #readsInline}), so a
     * single replica reads RocksDB on it instead of handing the read to the read pool (a hand-off
     * costs more than the read).
     */
    private CompletableFuture<Record> query(Query query, boolean inline) {
        PlinthException notLeading = notLeading();
        if (notLeading != null) {
            return CompletableFuture.failedFuture(notLeading);
        }
        Class<? extends Record> responseType = Protocol.responseClass(Protocol.typeOf((Record) query));
        if (query instanceof MetaMessages.StatFs) {
            return CompletableFuture.completedFuture(statFs());
        }
        if (query instanceof MetaMessages.ForcedLayouts) {
            return CompletableFuture.supplyAsync(() -> unplaceable((MetaMessages.ForcedLayoutList) stateMachine.queryRecord(query)), readExecutor);
        }
        if (raft.isSingleReplica() && inline) {
            inlineReads.incrementAndGet();
            try {
                return closed ? CompletableFuture.failedFuture(new PlinthException(ErrorCode.UNAVAILABLE, "metadata service is stopping"))
                        : CompletableFuture.completedFuture(responseType.cast(stateMachine.queryRecord(query)));
            } catch (RuntimeException e) {
                return CompletableFuture.failedFuture(e);
            } finally {
                inlineReads.decrementAndGet();
            }
        } else if (raft.isSingleReplica()) {
            try {
                return CompletableFuture.supplyAsync(() -> responseType.cast(stateMachine.queryRecord(query)), readExecutor);
            } catch (RejectedExecutionException e) {
                return CompletableFuture.failedFuture(new PlinthException(ErrorCode.BUSY, "metadata read queue is full"));
            }
        }
        return raft.read(MetaCodec.encodeRequest((Record) query)).thenApply(bytes -> MetaCodec.decodeResult(responseType, bytes));
    }

    /**
     * NOT_LEADER where this replica is one of several and does not lead with a current state, so
     * the caller tries another: queries too, which the leader alone answers (linearizable through
     * its lease, design note 86) rather than a follower that may not have applied the latest change.
     */
    private PlinthException notLeading() {
        if (raft.isSingleReplica() || raft.isLeaderReady()) {
            return null;
        }
        String leader = raft.leaderAddress();
        return new PlinthException(ErrorCode.NOT_LEADER, "MDT " + stateMachine.mdtIndex() + " replica " + raft.selfAddress()
                + " does not lead" + (leader == null ? " (election under way)" : "; Raft leader " + leader));
    }

    /**
     * Stamps, places and logs a change; returns its response record once applied. A change that
     * spans MDTs goes through an intent instead (design note 93).
     */
    public CompletableFuture<Record> mutate(Mutation mutation) {
        CompletableFuture<Record> acrossMdts = remoteEntries.route(mutation);
        if (acrossMdts != null) {
            PlinthException notLeading = notLeading();
            return notLeading != null ? CompletableFuture.failedFuture(notLeading) : acrossMdts;
        }
        return log(mutation);
    }

    /** As {@link #mutate}, for a change of this MDT alone. */
    private CompletableFuture<Record> log(Mutation mutation) {
        PlinthException notLeading = notLeading();
        if (notLeading != null) {
            return CompletableFuture.failedFuture(notLeading);
        }
        try {
            requireRoomFor(mutation);
        } catch (PlinthException e) {
            return CompletableFuture.failedFuture(e);
        }
        Mutation stamped = withHeader(mutation, mutation.header().withTime(nowNanos()));
        try {
            return submit(place(stamped, clusterMap.current()));
        } catch (PlinthException e) {
            if (e.code() != ErrorCode.INVALID_ARGUMENT && e.code() != ErrorCode.UNAVAILABLE || !(mutation instanceof MetaMessages.Create
                    || mutation instanceof MetaMessages.PutWhole || mutation instanceof MetaMessages.SetLayout)) {
                return CompletableFuture.failedFuture(e);
            }
        }
        // The current map could not place it: a pool, target or node made a moment ago may not be in a map polled before.
        // Placed again on a map fetched now, off this thread (it may be the event loop that must deliver mgmt's answer).
        return clusterMap.refreshedLater().thenCompose(fresh -> submit(place(stamped, fresh)));
    }

    /** Logs a stamped, placed change; returns its response record once applied. */
    private CompletableFuture<Record> submit(Mutation prepared) {
        Class<? extends Record> responseType = Protocol.responseClass(Protocol.typeOf((Record) prepared));
        CompletableFuture<Record> result = new CompletableFuture<>();
        // encoded here, on the caller's thread: the batcher is one thread, and it needs each change's size
        MetaCodec.EncodedChange encoded;
        try {
            encoded = MetaCodec.EncodedChange.of((Record) prepared);
        } catch (PlinthException e) {
            return CompletableFuture.failedFuture(e);
        }
        if (closed || !changes.offer(new PendingChange(encoded, responseType, result))) {
            return CompletableFuture.failedFuture(new PlinthException(closed ? ErrorCode.UNAVAILABLE : ErrorCode.BUSY,
                    "metadata change queue is " + (closed ? "closed" : "full")));
        }
        return result;
    }

    /**
     * Refuses a change that adds to the namespace while the metadata disk has less than its
     * reserve free (meta.reserve-bytes): what is left is for the changes that free space and the
     * ones reads need, so a full server keeps serving reads and deletes and can always commit them.
     */
    private void requireRoomFor(Mutation mutation) {
        boolean adds = switch (mutation) {
            case MetaMessages.Create ignored -> true;
            case MetaMessages.Mkdir ignored -> true;
            case dev.plinth.wire.messages.CrossMdtMessages.PrepareRemoteMkdir ignored -> true;
            case dev.plinth.wire.messages.CrossMdtMessages.MakeRemoteDirectory ignored -> true;
            case dev.plinth.wire.messages.CrossMdtMessages.PrepareRemoteLink ignored -> true;
            case MetaMessages.Symlink ignored -> true;
            case MetaMessages.MakeNode ignored -> true;
            case MetaMessages.Link ignored -> true;
            case MetaMessages.SetXattr ignored -> true;
            case MetaMessages.WriteInline ignored -> true;
            case MetaMessages.PutWhole ignored -> true;
            case MetaMessages.Publish ignored -> true;
            case MetaMessages.SetLayout ignored -> true;
            default -> false;
        };
        if (adds && reserveBytes > 0) {
            long free = diskSpace.freeBytes();
            if (free < reserveBytes) {
                throw new PlinthException(ErrorCode.NO_SPACE, "the metadata disk has " + free + " bytes free, less than its reserve of "
                        + reserveBytes + " (meta.reserve-bytes): only reads, deletes, renames and closes are taken until space is freed");
            }
        }
    }

    /** Takes what is queued as one log entry, keeping at most a few entries in flight. */
    private void batchLoop() {
        List<PendingChange> batch = new ArrayList<>(MetaStateMachine.BATCH_CHANGES_MAX);
        while (!closed) {
            try {
                PendingChange first = changes.poll(1, TimeUnit.SECONDS);
                if (first == null) {
                    continue;
                }
                entriesInFlight.acquire();
                batch.add(first);
                // up to the change count and the byte bound: a change with a MiB of Data-on-MDT bytes is as large as a
                // thousand others, and 256 of them would be a log entry past what the codec takes
                int bytes = first.encoded().bytes();
                for (PendingChange next; batch.size() < MetaStateMachine.BATCH_CHANGES_MAX && (next = changes.peek()) != null
                        && bytes + next.encoded().bytes() <= MetaCodec.BATCH_BYTES_MAX; ) {
                    batch.add(changes.poll()); // the only taker: what peek saw is what poll takes
                    bytes += next.encoded().bytes();
                }
            } catch (InterruptedException e) {
                break;
            }
            List<PendingChange> submitted = List.copyOf(batch);
            batch.clear();
            CompletableFuture<byte[]> written;
            try {
                written = raft.write(MetaCodec.encodeBatch(submitted.stream().map(PendingChange::encoded).toList()));
            } catch (RuntimeException e) {
                written = CompletableFuture.failedFuture(e);
            }
            written.whenComplete((bytes, failure) -> {
                entriesInFlight.release();
                if (failure != null) {
                    Throwable cause = failure instanceof java.util.concurrent.CompletionException && failure.getCause() != null
                            ? failure.getCause() : failure;
                    RuntimeException error = cause instanceof RuntimeException runtime
                            ? runtime : new PlinthException(ErrorCode.UNAVAILABLE, "metadata log: " + cause, cause);
                    submitted.forEach(change -> change.result().completeExceptionally(error));
                    return;
                }
                List<byte[]> results = MetaCodec.decodeResults(bytes);
                for (int i = 0; i < submitted.size(); i++) {
                    PendingChange change = submitted.get(i);
                    try {
                        change.result().complete(MetaCodec.decodeResult(change.responseType(), results.get(i)));
                    } catch (RuntimeException e) {
                        change.result().completeExceptionally(e);
                    }
                }
            });
        }
        PlinthException stopped = new PlinthException(ErrorCode.UNAVAILABLE, "metadata service stopped");
        batch.forEach(change -> change.result().completeExceptionally(stopped));
        List<PendingChange> left = new ArrayList<>();
        changes.drainTo(left);
        left.forEach(change -> change.result().completeExceptionally(stopped));
    }

    /** A change with its new file's chains chosen (or a layout checked against the cluster) on {@code map}. */
    private Mutation place(Mutation mutation, ClusterMap map) {
        if (mutation instanceof MetaMessages.Create create) {
            return new MetaMessages.Create(create.header(), create.parentId(), create.name(), create.mode(), create.exclusive(),
                    placeNewFile(create.layout(), create.parentId(), create.header(), map), create.openForWrite(), create.unnamed());
        }
        if (mutation instanceof MetaMessages.PutWhole put) {
            return new MetaMessages.PutWhole(put.header(), put.parentId(), put.name(), put.mode(),
                    placeNewFile(put.layout(), put.parentId(), put.header(), map), put.bytes(), put.mtimeNanos(), put.xattrs(), put.noReplace(),
                    put.onlyReplacing());
        }
        if (mutation instanceof MetaMessages.SetLayout setLayout && setLayout.layout() != null) {
            Layout layout = setLayout.layout().validate();
            AttributesReply target = queryNow(new MetaMessages.GetAttr(setLayout.header(), setLayout.inodeId()));
            if (!setLayout.force()) {
                placement.requirePlaceable(layout, map);
            }
            if (!target.attributes().isDirectory()) {
                layout = placement.place(layout.template(), map);
            }
            return new MetaMessages.SetLayout(setLayout.header(), setLayout.inodeId(), layout, setLayout.force(), setLayout.path());
        }
        return mutation;
    }

    /** The layout of a new file in {@code directoryId}: the one asked for, else the directory's, with chains chosen. */
    private Layout placeNewFile(Layout asked, long directoryId, OpHeader header, ClusterMap map) {
        Layout template = asked != null ? asked.validate() : effectiveLayout(directoryId, header);
        return placement.place(template.template(), map);
    }

    private Layout effectiveLayout(long directoryId, OpHeader header) {
        Layout layout = queryNow(new MetaMessages.GetAttr(header, directoryId)).attributes().layout();
        if (layout == null) {
            layout = stateMachine.mdtIndex() == InodeId.mdtIndex(InodeId.ROOT)
                    ? queryNow(new MetaMessages.GetAttr(header, InodeId.ROOT)).attributes().layout() : stateMachine.defaultLayout();
        }
        return layout;
    }

    private AttributesReply queryNow(Query query) {
        return (AttributesReply) stateMachine.queryRecord(query);
    }

    /** Of the layouts set with force, those the cluster cannot place now, each with the reason. */
    private MetaMessages.ForcedLayoutList unplaceable(MetaMessages.ForcedLayoutList forced) {
        ClusterMap map = clusterMap.current();
        List<MetaMessages.ForcedLayout> unplaceable = new java.util.ArrayList<>();
        for (MetaMessages.ForcedLayout layout : forced.layouts()) {
            try {
                placement.requirePlaceable(layout.layout(), map);
                String shared = Placement.sharedNodes(layout.layout(), map);
                if (shared != null) {
                    unplaceable.add(new MetaMessages.ForcedLayout(layout.inodeId(), layout.path(), layout.layout(), shared, true));
                }
            } catch (PlinthException e) {
                unplaceable.add(new MetaMessages.ForcedLayout(layout.inodeId(), layout.path(), layout.layout(), e.detail()));
            }
        }
        return new MetaMessages.ForcedLayoutList(unplaceable);
    }

    private MetaMessages.StatFsReply statFs() {
        ClusterMap map = clusterMap.current();
        long used = map.targets().stream().mapToLong(TargetInfo::usedBytes).sum();
        long free = dev.plinth.wire.messages.MgmtMessages.freeBytes(map.targets());
        long capacity = used + free + stateMachine.mdtDataBytes(); // small files' bytes live here, not on targets
        return new MetaMessages.StatFsReply(capacity, free, stateMachine.inodeCount(), 4096);
    }

    /** Now as changes are stamped: nanoseconds since the epoch, from this service's clock. */
    private long nowNanos() {
        return clock.epochNanos();
    }

    /** The same mutation with another header (every mutation's first component is its header). */
    private static Mutation withHeader(Mutation mutation, OpHeader header) {
        return RESTAMPERS.get(mutation.getClass()).restamp(mutation, header);
    }

    /**
     * Rebuilds one mutation type with a new header through method handles found once per type:
     * looking up the record's components and constructor by reflection on every change made
     * class-library symbol lookups and new method handles a visible cost of each small S3 PUT.
     */
    private record Restamper(MethodHandle constructor, MethodHandle[] accessors) {
        static Restamper of(Class<?> type) {
            RecordComponent[] components = type.getRecordComponents();
            Class<?>[] types = new Class<?>[components.length];
            MethodHandle[] accessors = new MethodHandle[components.length];
            MethodHandles.Lookup lookup = MethodHandles.publicLookup();
            try {
                for (int i = 0; i < components.length; i++) {
                    types[i] = components[i].getType();
                    accessors[i] = lookup.unreflect(components[i].getAccessor()).asType(MethodType.methodType(Object.class, Object.class));
                }
                MethodHandle constructor = lookup.findConstructor(type, MethodType.methodType(void.class, types));
                return new Restamper(constructor.asType(constructor.type().generic()).asSpreader(Object[].class, types.length), accessors);
            } catch (ReflectiveOperationException e) {
                throw new IllegalStateException("cannot restamp " + type.getSimpleName(), e);
            }
        }

        Mutation restamp(Mutation mutation, OpHeader header) {
            Object[] values = new Object[accessors.length];
            try {
                values[0] = header;
                for (int i = 1; i < accessors.length; i++) {
                    values[i] = (Object) accessors[i].invokeExact((Object) mutation);
                }
                return (Mutation) (Object) constructor.invokeExact(values);
            } catch (Throwable e) {
                throw new IllegalStateException("cannot restamp " + mutation.getClass().getSimpleName(), e);
            }
        }
    }

    private static final ClassValue<Restamper> RESTAMPERS = new ClassValue<>() {
        @Override
        protected Restamper computeValue(Class<?> type) {
            return Restamper.of(type);
        }
    };

    private void expireSessions() {
        if (!raft.isSingleReplica() && !raft.isLeaderReady()) {
            return; // the leader expires sessions; its clock stamps the change
        }
        try {
            mutate(new MetaMessages.ExpireSessions(new OpHeader(0, 0, Credentials.ROOT, 0))).get(30, TimeUnit.SECONDS);
        } catch (Exception e) {
            LOG.warn("session expiry failed: {}", e.toString());
        }
    }

    /**
     * Frees the chunks of removed files, many at a time, each once it has been removed for
     * {@link MetaMessages#REMOVED_FILE_KEPT_MILLIS} (the queue is in the order they were seen): the
     * chunk removals go out in parallel and the files that are gone from storage are purged from
     * the namespace with one change. A file whose removal failed stays recorded and is retried by
     * the periodic scan.
     */
    private void cleanLoop() {
        List<RemovedFile> files = new ArrayList<>(MetaStateMachine.BATCH_CHANGES_MAX);
        while (!closed) {
            try {
                Removal first = removedFiles.poll(1, TimeUnit.SECONDS);
                if (first == null) {
                    continue;
                }
                while (!first.due(clock.nanoTime())) {
                    Thread.sleep(100);
                }
                files.add(first.file());
                Removal next;
                while (files.size() < MetaStateMachine.BATCH_CHANGES_MAX && (next = removedFiles.peek()) != null && next.due(clock.nanoTime())) {
                    files.add(removedFiles.remove().file()); // this thread alone takes from the queue
                }
            } catch (InterruptedException e) {
                return;
            }
            // Only what the namespace still lists as removed, and only on the leader: a file can be queued twice (the periodic
            // scan finds its key again before the purge), and once the purge is applied a released file may be restored into
            // the same chunk directories, which a stale second removal must not free. The key goes only through this thread's
            // purge, and a restore starts only once it is gone (design note 80).
            boolean leads = raft.isLeader();
            files.removeIf(file -> !leads || !stateMachine.removalPending(file.inodeId()));
            List<CompletableFuture<Long>> removals = files.stream().map(this::removeChunks).toList();
            files.clear();
            List<Long> purged = new ArrayList<>();
            for (CompletableFuture<Long> removal : removals) {
                try {
                    purged.add(removal.join());
                } catch (RuntimeException e) {
                    if (!closed) {
                        LOG.warn("freeing chunks of a removed file failed, will retry: {}", e.toString());
                    }
                }
            }
            if (purged.isEmpty()) {
                continue;
            }
            try {
                mutate(new MetaMessages.PurgeRemoved(new OpHeader(0, 0, Credentials.ROOT, 0), purged)).get(30, TimeUnit.SECONDS);
            } catch (Exception e) {
                if (!closed) {
                    LOG.warn("purging {} removed files failed, will retry: {}", purged.size(), e.toString());
                }
            }
        }
    }

    /** Removes a file's chunk directory on every target of its chains; completes with its inode id. */
    private CompletableFuture<Long> removeChunks(RemovedFile file) {
        ClusterMap map = clusterMap.current();
        List<CompletableFuture<?>> pending = new ArrayList<>();
        for (int chainId : new java.util.LinkedHashSet<>(file.layout().chainIds())) {
            ChainInfo chain = map.chain(chainId);
            if (chain == null) {
                continue;
            }
            for (int targetId : chain.writeTargets()) { // an offline member drops them when it resyncs
                TargetInfo target = map.target(targetId);
                NodeInfo node = target == null ? null : map.node(target.nodeId());
                if (node == null) {
                    continue;
                }
                try {
                    pending.add(connections.get(HostPort.parse(node.rpcAddress()))
                            .callAsync(new RemoveFile(targetId, file.layout().chunkOwner(file.inodeId())), null, java.time.Duration.ofSeconds(30))
                            .thenAccept(response -> ((dev.plinth.wire.RpcResponse<?>) response).close()));
                } catch (RuntimeException e) {
                    pending.add(CompletableFuture.failedFuture(e));
                }
            }
        }
        return CompletableFuture.allOf(pending.toArray(CompletableFuture[]::new)).thenApply(ignored -> file.inodeId());
    }

    @Override
    public void close() {
        closed = true;
        housekeeping.shutdownNow();
        remoteEntries.close();
        batcher.interrupt();
        cleaner.interrupt();
        readExecutor.shutdown();
        try {
            batcher.join(5000);
            cleaner.join(5000);
            readExecutor.awaitTermination(5, TimeUnit.SECONDS);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
            while (inlineReads.get() > 0 && System.nanoTime() < deadline) {
                Thread.sleep(1);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
