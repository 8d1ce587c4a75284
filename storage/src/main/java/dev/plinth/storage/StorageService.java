package dev.plinth.storage;

import static java.util.Objects.requireNonNull;

import dev.plinth.common.ErrorCode;
import dev.plinth.common.PlinthException;
import dev.plinth.wire.Reply;
import dev.plinth.wire.RequestContext;
import dev.plinth.wire.RpcDispatcher;
import dev.plinth.wire.messages.HandshakeMessages;
import dev.plinth.wire.messages.MgmtMessages.TargetUsage;
import dev.plinth.wire.LinkFailure;
import dev.plinth.wire.RpcClient;
import dev.plinth.wire.RpcResponse;
import dev.plinth.wire.messages.MgmtMessages.ChainInfo;
import dev.plinth.wire.messages.MgmtMessages.MemberState;
import dev.plinth.wire.messages.StorageMessages.ChunkEntry;
import dev.plinth.wire.messages.StorageMessages.ChunkList;
import dev.plinth.wire.messages.StorageMessages.ListChunks;
import dev.plinth.wire.messages.StorageMessages.ReadChunk;
import dev.plinth.wire.messages.StorageMessages.RepairChunk;
import java.time.Duration;
import io.prometheus.metrics.core.datapoints.DistributionDataPoint;
import io.prometheus.metrics.core.metrics.Counter;
import io.prometheus.metrics.core.metrics.GaugeWithCallback;
import io.prometheus.metrics.core.metrics.Histogram;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import dev.plinth.wire.messages.StorageMessages.ReadChunkResult;
import dev.plinth.wire.messages.StorageMessages.RemoveFile;
import dev.plinth.wire.messages.StorageMessages;
import dev.plinth.wire.messages.StorageMessages.SyncFile;
import dev.plinth.wire.messages.StorageMessages.TruncateObject;
import dev.plinth.wire.messages.StorageMessages.WriteChunk;
import dev.plinth.wire.messages.StorageMessages.WriteChunkResult;
import io.netty.channel.DefaultFileRegion;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * The storage role: serves chunk I/O for the targets of this node, and passes writes down their
 * chains (CRAQ): a write is applied here, then sent to the next member, and answered once the
 * last member has it. Disk work runs on a bounded
 * pool of platform threads (blocking file I/O would pin virtual threads' carriers); when its
 * queue is full, requests fail fast with BUSY and the client retries. Reads reply with a file
 * region, which the transport sends with sendfile; the block CRCs ride in the header.
 */
public final class StorageService implements AutoCloseable {
    private static final int QUEUE_MAX = 4096;
    /**
     * Threads that free removed files' chunks. Apart from the I/O pool because a removal can hold
     * a thread for seconds: where the file system discards freed blocks as it frees them (ext4
     * mounted with {@code discard}, as here), unlinking a 4 MiB chunk waits for the device, and a
     * 4 GiB file took 3 s per target. On the I/O pool, the cleaner's burst of removals after a large
     * delete queued ahead of client reads and writes: a 1 MiB S3 PUT waited up to 1.7 s (design
     * note 57). Two: removals wait on the device, more threads would not free space faster.
     */
    private static final int REMOVE_THREADS = 2;
    private static final int LIST_CHUNKS_MAX = 4096;

    private final Map<Integer, ChunkStore> targets = new ConcurrentHashMap<>();
    private final ThreadPoolExecutor ioExecutor;
    private final ThreadPoolExecutor removeExecutor = new ThreadPoolExecutor(REMOVE_THREADS, REMOVE_THREADS, 60, TimeUnit.SECONDS,
            new ArrayBlockingQueue<>(QUEUE_MAX), Thread.ofPlatform().name("storage-remove-", 0).daemon().factory());
    /** Passing writes down chains: waits on connections and windows, never on disks. */
    private final java.util.concurrent.ExecutorService forwardExecutor = java.util.concurrent.Executors.newThreadPerTaskExecutor(
            Thread.ofVirtual().name("storage-forward-", 0).factory());
    private final ClusterView cluster;
    private final UncommittedChunks replicas = new UncommittedChunks();
    private final Counter bytes;
    /** How long requests waited for an I/O or removal thread: beside the request's whole duration, queueing against disk time. */
    private final DistributionDataPoint ioQueueWait;
    private final DistributionDataPoint removeQueueWait;
    private volatile java.util.function.BiConsumer<Integer, dev.plinth.wire.messages.StorageMessages.ChunkId> damagedChunks = (t, c) -> { };

    public StorageService(int ioThreads, ClusterView cluster) {
        this(ioThreads, cluster, dev.plinth.wire.Metrics.unexposed());
    }

    public StorageService(int ioThreads, ClusterView cluster, PrometheusRegistry registry) {
        this.cluster = requireNonNull(cluster, "cluster is null");
        this.ioExecutor = new ThreadPoolExecutor(ioThreads, ioThreads, 60, TimeUnit.SECONDS,
                new ArrayBlockingQueue<>(QUEUE_MAX), Thread.ofPlatform().name("storage-io-", 0).daemon().factory());
        this.bytes = dev.plinth.wire.Metrics.counter(registry, "plinth_target_io_bytes", "Bytes read from and written to each target's chunks.",
                "target", "direction");
        GaugeWithCallback.builder().name("plinth_target_capacity_bytes").help("Capacity each target reports (see target.capacity).")
                .labelNames("target").callback(callback -> targets.values().forEach(target ->
                        callback.call(target.shownCapacityBytes(), Integer.toString(target.targetId())))).register(registry);
        GaugeWithCallback.builder().name("plinth_target_used_bytes").help("Bytes each target's chunks take on its disk (holes not counted).")
                .labelNames("target").callback(callback -> targets.values().forEach(target ->
                        callback.call(target.storedBytes(), Integer.toString(target.targetId())))).register(registry);
        io.prometheus.metrics.core.metrics.CounterWithCallback.builder().name("plinth_target_direct_io_bytes")
                .help("Bytes of plinth_target_io_bytes that went past the page cache (O_DIRECT; see storage.direct-reads and storage.direct-writes).")
                .labelNames("target", "direction").callback(callback -> targets.values().forEach(target -> {
                    callback.call(target.directBytesRead(), Integer.toString(target.targetId()), "read");
                    callback.call(target.directBytesWritten(), Integer.toString(target.targetId()), "write");
                })).register(registry);
        io.prometheus.metrics.core.metrics.CounterWithCallback.builder().name("plinth_target_fsyncs")
                .help("Chunks and directories each target forced to disk for files' fsyncs (SyncFile): each chunk changed since it "
                        + "was last forced (its data and meta files), each directory where a chunk was made or removed.")
                .labelNames("target").callback(callback -> targets.values().forEach(target ->
                        callback.call(target.fsyncs(), Integer.toString(target.targetId())))).register(registry);
        Histogram queueWait = dev.plinth.wire.Metrics.latency(registry, "plinth_storage_queue_wait_seconds",
                "Time chunk requests waited for a storage thread (queue io: reads and writes; remove: removed files' chunks); "
                        + "the rest of plinth_rpc_server_request_duration_seconds is the disk and the reply.", "queue");
        this.ioQueueWait = queueWait.labelValues("io");
        this.removeQueueWait = queueWait.labelValues("remove");
        GaugeWithCallback.builder().name("plinth_storage_io_queue_requests").help("Chunk requests waiting for a storage I/O thread.")
                .callback(callback -> callback.call(ioExecutor.getQueue().size())).register(registry);
        GaugeWithCallback.builder().name("plinth_storage_remove_queue_requests").help("Removed files' chunk deletions waiting for a removal thread.")
                .callback(callback -> callback.call(removeExecutor.getQueue().size())).register(registry);
    }

    public void addTarget(ChunkStore store) {
        requireNonNull(store, "store is null");
        if (targets.putIfAbsent(store.targetId(), store) != null) {
            throw new IllegalStateException("target " + store.targetId() + " served twice");
        }
    }

    /** Who checks and repairs a chunk a reader reported damaged (the node's scrubber). */
    void onDamagedChunk(java.util.function.BiConsumer<Integer, dev.plinth.wire.messages.StorageMessages.ChunkId> handler) {
        this.damagedChunks = requireNonNull(handler, "handler is null");
    }

    public List<ChunkStore> targets() {
        return new ArrayList<>(targets.values());
    }

    /** The targets this node serves, as it reports them to mgmt: a failed one is left out, which takes it out of its chains. */
    public List<TargetUsage> usage() {
        return targets.values().stream().filter(target -> target.failure() == null).map(this::usageOf).toList();
    }

    /**
     * A target's capacity and use, and its byte counters (the ones /metrics shows) for mgmt's
     * throughput figures. Used is what its chunks take on disk, so that df counts what compressed
     * layouts stored, not the slots they reserve; the rest of the size is what it may still take.
     */
    public TargetUsage usageOf(ChunkStore target) {
        String label = Integer.toString(target.targetId());
        return new TargetUsage(target.targetId(), target.shownCapacityBytes(), target.storedBytes(), target.filesystemId(),
                (long) bytes.labelValues(label, "read").get(), (long) bytes.labelValues(label, "write").get());
    }

    private ChunkStore target(int targetId) {
        ChunkStore store = targets.get(targetId);
        if (store == null) {
            throw new PlinthException(ErrorCode.STALE_HANDLE, "target " + targetId + " is not served here");
        }
        if (store.failure() != null) {
            // retryable: the client tries again once mgmt has taken the target out of its chains
            throw new PlinthException(ErrorCode.UNAVAILABLE, "target " + targetId + " has failed (" + store.failure() + ") and serves nothing");
        }
        return store;
    }

    public void register(RpcDispatcher dispatcher) {
        dispatcher.register(WriteChunk.class, (context, request, data) -> {
            data.retain();
            // the chain check may fetch the map from mgmt, which must not happen on a network thread
            return onDisk(context, () -> {
                ChainInfo chain = checkWrite(request);
                return new Step(chain, applyLocally(request, data));
            }, null).thenCompose(step -> forward(context, request, step.chain(), data, step.applied()))
                    .whenComplete((ignored, failure) -> data.release());
        });
        dispatcher.register(ReadChunk.class, (context, request, data) -> {
            try {
                checkRead(request);
            } catch (RuntimeException e) {
                return CompletableFuture.failedFuture(e);
            }
            return onDisk(context, () -> {
                ChunkStore.ReadResult read = target(request.targetId()).read(request.chunk(), request.chunkOffset(), request.length());
                ReadChunkResult result = new ReadChunkResult(read.alignedOffset(), read.chunkLength(), read.chunkVersion(),
                        Arrays.stream(read.blockCrcs()).boxed().toList(), read.cellTag());
                bytes.labelValues(Integer.toString(request.targetId()), "read").inc(read.byteCount());
                if (read.byteCount() == 0) {
                    return Reply.of(result);
                }
                ChunkStore target = target(request.targetId());
                io.netty.buffer.ByteBuf uncached = target.readIfUncached(read);
                if (uncached != null) {
                    return Reply.withData(result, uncached); // read past the page cache: cheaper than filling it (DirectReader)
                }
                if (!context.fileRegions()) {
                    return Reply.withData(result, target.readThroughCache(read)); // in-JVM channels carry no file regions
                }
                return Reply.withFile(result, new DefaultFileRegion(read.file().toFile(), read.alignedOffset(), read.byteCount()));
            }, null);
        });
        dispatcher.register(ListChunks.class, (context, request, data) -> onDisk(context, () -> {
            ChainInfo chain = currentChain(request.chainId(), request.chainVersion());
            if (chain.version() < request.chainVersion()) {
                throw new PlinthException(ErrorCode.CHAIN_CHANGED, "target " + request.targetId() + " knows chain " + chain.chainId()
                        + " at version " + chain.version() + ", not yet " + request.chainVersion());
            }
            int limit = Math.max(1, Math.min(request.limit(), LIST_CHUNKS_MAX));
            List<ChunkEntry> chunks = target(request.targetId()).listChunks(request.chainId(), request.startAfter(), limit + 1);
            boolean truncated = chunks.size() > limit;
            return Reply.of(new ChunkList(truncated ? List.copyOf(chunks.subList(0, limit)) : chunks, truncated));
        }, null));
        dispatcher.register(RepairChunk.class, (context, request, data) -> {
            target(request.targetId());
            damagedChunks.accept(request.targetId(), request.chunk());
            return CompletableFuture.completedFuture(Reply.of(HandshakeMessages.EMPTY));
        });
        dispatcher.register(TruncateObject.class, (context, request, data) -> onDisk(context, () -> {
            target(request.targetId()).truncateObject(request.inodeId(), request.objectIndex(), request.objectLength(), request.chunkSizeBytes());
            return Reply.of(HandshakeMessages.EMPTY);
        }, null));
        dispatcher.register(RemoveFile.class, (context, request, data) -> onDisk(context, removeExecutor, () -> {
            target(request.targetId()).removeFile(request.inodeId());
            return Reply.of(HandshakeMessages.EMPTY);
        }, null));
        dispatcher.register(StorageMessages.FileUsage.class, (context, request, data) -> onDisk(context, () ->
                Reply.of(target(request.targetId()).fileUsage(request.inodeId())), null));
        dispatcher.register(SyncFile.class, (context, request, data) -> onDisk(context, () -> {
            target(request.targetId()).syncFile(request.inodeId());
            return Reply.of(HandshakeMessages.EMPTY);
        }, null));
    }

    // ---- chain replication

    /**
     * The chain a write belongs to, if the sender's table and ours agree on it and this target
     * may take the write: a client's write enters at the head, a forwarded one anywhere behind
     * it. A table older than the sender's is fetched again first; a node whose heartbeats mgmt
     * has not answered for a node timeout takes no writes (mgmt may have given its place away).
     */
    private ChainInfo checkWrite(WriteChunk request) {
        target(request.targetId());
        ChainInfo chain = currentChain(request.chainId(), request.chainVersion());
        if (chain.version() != request.chainVersion()) {
            throw new PlinthException(ErrorCode.CHAIN_CHANGED, "chain " + chain.chainId() + " is at version " + chain.version()
                    + ", the write carries " + request.chainVersion());
        }
        int position = chain.writeTargets().indexOf(request.targetId());
        if (position < 0 || (request.chunkVersion() == 0 && position != 0)) {
            throw new PlinthException(ErrorCode.CHAIN_CHANGED, "target " + request.targetId() + " is not "
                    + (position < 0 ? "a member" : "the head") + " of chain " + chain.chainId() + " at version " + chain.version());
        }
        if (!cluster.leaseValid()) {
            throw new PlinthException(ErrorCode.UNAVAILABLE, "this node has not reached mgmt for a node timeout; it takes no writes");
        }
        return chain;
    }

    private ChainInfo currentChain(int chainId, long senderVersion) {
        ChainInfo chain = cluster.map().chain(chainId);
        if (chain == null || chain.version() < senderVersion) {
            chain = cluster.refresh().chain(chainId);
        }
        if (chain == null) {
            throw new PlinthException(ErrorCode.CHAIN_CHANGED, "no chain " + chainId + " in this node's cluster map");
        }
        return chain;
    }

    /**
     * A read may go to any serving member, but a member that holds a write its successors have
     * not acknowledged must not hand it out (it may never commit): such reads go to the tail,
     * the last serving member, which holds only committed writes.
     */
    private void checkRead(ReadChunk request) {
        ChainInfo chain = cluster.map().chain(request.chainId());
        if (chain == null) {
            return; // a chain this node has not heard of yet: answer from what is on disk
        }
        List<Integer> serving = chain.targetIds();
        if (!serving.contains(request.targetId())) {
            throw new PlinthException(ErrorCode.CHAIN_CHANGED, "target " + request.targetId() + " does not serve chain " + chain.chainId()
                    + " at version " + chain.version());
        }
        if (serving.getLast() != request.targetId() && replicas.uncommitted(request.targetId(), request.chunk())) {
            throw new PlinthException(ErrorCode.NOT_COMMITTED, request.chunk() + " on target " + request.targetId());
        }
    }

    /** Writes on their way down each chain, so that a chain change can fail them at once. */
    private final Map<Integer, Set<CompletableFuture<Reply>>> forwarding = new ConcurrentHashMap<>();

    /**
     * Chain {@code chainId} changed (a member left or came back): writes still waiting for a
     * successor under the old version fail now with CHAIN_CHANGED instead of waiting out their
     * timeout (a hung successor), and their senders resend on the new chain.
     */
    void chainChanged(int chainId, long newVersion) {
        Set<CompletableFuture<Reply>> waiting = forwarding.get(chainId);
        if (waiting != null) {
            for (CompletableFuture<Reply> result : List.copyOf(waiting)) {
                result.completeExceptionally(new PlinthException(ErrorCode.CHAIN_CHANGED, "chain " + chainId + " changed to version "
                        + newVersion + " while the write was passed on"));
            }
        }
    }

    /** Checked again with the chunk locked, right before a write lands: the map may have moved on since the request was checked. */
    private void requireCurrent(int chainId, long chainVersion) {
        ChainInfo chain = cluster.map().chain(chainId);
        if (chain == null || chain.version() != chainVersion || !cluster.leaseValid()) {
            throw new PlinthException(ErrorCode.CHAIN_CHANGED, "chain " + chainId + " moved past version " + chainVersion
                    + " while the write waited");
        }
    }

    /**
     * Runs {@code use} on {@code data} as one buffer. A frame's data may have arrived in several
     * network buffers (the decoder keeps large reads as they are); those are copied into one
     * pooled buffer here, on the I/O thread, which is the copy the decoder used to make.
     */
    private static <T> T withContiguous(io.netty.buffer.ByteBuf data, java.util.function.Function<java.nio.ByteBuffer, T> use) {
        if (data.nioBufferCount() <= 1) {
            return use.apply(data.nioBuffer());
        }
        io.netty.buffer.ByteBuf copy = io.netty.buffer.PooledByteBufAllocator.DEFAULT.directBuffer(data.readableBytes());
        try {
            copy.writeBytes(data, data.readerIndex(), data.readableBytes());
            return use.apply(copy.nioBuffer());
        } finally {
            copy.release();
        }
    }

    /** What a write did here, to pass down the chain. */
    private record Applied(long previousVersion, ChunkStore.WriteResult result) {}

    private record Step(ChainInfo chain, Applied applied) {}

    private Applied applyLocally(WriteChunk request, io.netty.buffer.ByteBuf data) {
        ChunkStore store = target(request.targetId());
        int length = data.readableBytes();
        replicas.begin(request.targetId(), request.chunk());
        try {
            Applied applied;
            ChunkStore.ChainWrite chain = new ChunkStore.ChainWrite(request.chainId(), request.chainVersion(),
                    () -> requireCurrent(request.chainId(), request.chainVersion()));
            if (request.cut()) {
                if (length != 0 || request.wholeChunk()) {
                    throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "a cut carries no data");
                }
                long[] previous = new long[1];
                ChunkStore.WriteResult result = store.cut(request.chunk(), chain, request.chunkOffset(), request.chunkVersion(),
                        request.previousVersion(), previous);
                applied = new Applied(previous[0], result);
            } else if (request.wholeChunk()) {
                ChunkStore.WriteResult result = withContiguous(data, bytes -> store.installWhole(request.chunk(), chain, bytes,
                        request.segmentCrcs(), request.chunkVersion()));
                applied = new Applied(0, result);
            } else {
                long[] previous = new long[1];
                ChunkStore.WriteResult result = withContiguous(data, bytes -> store.write(request.chunk(), chain, request.chunkOffset(),
                        bytes, request.segmentCrcs(), request.chunkVersion(), request.previousVersion(), request.cellTag(), previous));
                applied = new Applied(previous[0], result);
            }
            bytes.labelValues(Integer.toString(request.targetId()), "write").inc(length);
            return applied;
        } catch (RuntimeException e) {
            replicas.abort(request.targetId(), request.chunk()); // nothing changed here
            throw e;
        }
    }

    /**
     * Passes an applied write to the next member that takes writes, and answers once it (and so
     * the rest of the chain) has it. A syncing successor, or one that says it missed a version,
     * gets the whole chunk as this member holds it.
     */
    private CompletableFuture<Reply> forward(RequestContext context, WriteChunk request, ChainInfo chain, io.netty.buffer.ByteBuf data,
                                             Applied applied) {
        List<Integer> order = chain.writeTargets();
        int position = order.indexOf(request.targetId());
        Reply reply = Reply.of(new WriteChunkResult(applied.result().version(), applied.result().length()));
        boolean nothingCut = request.cut() && applied.result().version() == 0; // the head has no such chunk: neither has the chain
        if (position == order.size() - 1 || nothingCut) {
            replicas.end(request.targetId(), request.chunk(), true);
            return CompletableFuture.completedFuture(reply);
        }
        int successor = order.get(position + 1);
        boolean whole = request.wholeChunk() || chain.stateOf(successor) == MemberState.SYNCING;
        CompletableFuture<Reply> result = new CompletableFuture<>();
        Set<CompletableFuture<Reply>> waiting = forwarding.computeIfAbsent(chain.chainId(), ignored -> ConcurrentHashMap.newKeySet());
        waiting.add(result);
        // a duplicate: sending moves the reader index, and the request's buffer is not ours to move
        forwardExecutor.execute(() -> sendDown(context, request, chain, successor, data.retainedDuplicate(), applied, whole, reply, result));
        return result.whenComplete((ignored, failure) -> {
            waiting.remove(result);
            replicas.end(request.targetId(), request.chunk(), failure == null);
        });
    }

    private void sendDown(RequestContext context, WriteChunk request, ChainInfo chain, int successor, io.netty.buffer.ByteBuf data,
                          Applied applied, boolean whole, Reply reply, CompletableFuture<Reply> result) {
        CompletableFuture<? extends RpcResponse<Record>> call;
        try {
            Duration timeout = Duration.ofNanos(Math.max(TimeUnit.MILLISECONDS.toNanos(100), context.deadlineNanos() - System.nanoTime()));
            if (whole) {
                if (data != null) {
                    data.release();
                }
                ChunkStore.WholeChunk copy = target(request.targetId()).readWhole(request.chunk());
                if (copy == null) {
                    throw new PlinthException(ErrorCode.CHAIN_CHANGED, request.chunk() + " vanished before it was passed on");
                }
                WriteChunk down = new WriteChunk(successor, request.chunk(), 0, Arrays.stream(copy.blockCrcs()).boxed().toList(),
                        request.chainId(), request.chainVersion(), copy.version(), 0, true, false);
                call = cluster.connectionTo(successor).callAsync(down, io.netty.buffer.Unpooled.wrappedBuffer(copy.data()), timeout);
            } else {
                // a write keeps the version the head gave it all the way down: a member that already held a newer version
                // (a whole copy overtook this write) must not pass these bytes on under that newer version
                boolean fromClient = request.chunkVersion() == 0;
                WriteChunk down = new WriteChunk(successor, request.chunk(), request.chunkOffset(), request.segmentCrcs(), request.chainId(),
                        request.chainVersion(), fromClient ? applied.result().version() : request.chunkVersion(),
                        fromClient ? applied.previousVersion() : request.previousVersion(), false, request.cut(), request.cellTag());
                call = cluster.connectionTo(successor).callAsync(down, data, timeout);
            }
        } catch (RuntimeException e) {
            if (!whole) {
                data.release(); // not handed to a call
            }
            call = CompletableFuture.failedFuture(e); // answered below, as a call that failed later is
        }
        call.whenComplete((response, failure) -> {
            if (failure == null) {
                response.close();
                result.complete(reply);
                return;
            }
            RuntimeException error = RpcClient.unwrap(failure);
            if (error instanceof LinkFailure) {
                cluster.reportUnreachable(chain, request.targetId(), successor);
            }
            if (!whole && error instanceof PlinthException plinth && plinth.code() == ErrorCode.CHUNK_BEHIND) {
                forwardExecutor.execute(() -> sendDown(context, request, chain, successor, null, applied, true, reply, result));
                return;
            }
            // the successor's own answer goes back as it is (ENOSPC from a full replica must reach the writer as ENOSPC, not as
            // something to retry forever); anything else is the link failing, which the sender retries on the chain mgmt makes next
            result.completeExceptionally(error instanceof PlinthException plinth
                    ? new PlinthException(plinth.code(), "chain " + chain.chainId() + ", target " + successor + ": " + plinth.detail(), plinth)
                    : new PlinthException(ErrorCode.UNAVAILABLE, "chain " + chain.chainId() + ": target " + successor + " did not take the write: "
                            + error.getMessage(), error));
        });
    }

    /**
     * Runs disk work on the I/O pool. A request whose deadline passed while it waited in the
     * queue is answered TIMED_OUT without touching the disk: its caller has stopped waiting, and
     * a retried write carries the same data.
     */
    private <T> CompletableFuture<T> onDisk(RequestContext context, Supplier<T> work, Runnable onRejected) {
        return onDisk(context, ioExecutor, work, onRejected);
    }

    private <T> CompletableFuture<T> onDisk(RequestContext context, ThreadPoolExecutor executor, Supplier<T> work, Runnable onRejected) {
        DistributionDataPoint queueWait = executor == removeExecutor ? removeQueueWait : ioQueueWait;
        long queuedNanos = System.nanoTime();
        try {
            return CompletableFuture.supplyAsync(dev.plinth.common.log.LogContext.carry(() -> {
                queueWait.observe((System.nanoTime() - queuedNanos) / 1e9);
                if (context.expired()) {
                    throw new PlinthException(ErrorCode.TIMED_OUT, "request expired in the storage queue");
                }
                dev.plinth.common.FaultPoints.delay(dev.plinth.common.FaultPoints.STORAGE_DISK_DELAY_MILLIS);
                return work.get();
            }), executor);
        } catch (RejectedExecutionException e) {
            if (onRejected != null) {
                onRejected.run();
            }
            return CompletableFuture.failedFuture(new PlinthException(ErrorCode.BUSY, "storage I/O queue is full"));
        }
    }

    @Override
    public void close() {
        forwardExecutor.shutdownNow();
        ioExecutor.shutdown();
        removeExecutor.shutdown();
        try {
            ioExecutor.awaitTermination(10, TimeUnit.SECONDS);
            removeExecutor.awaitTermination(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        targets.values().forEach(ChunkStore::close);
    }
}
