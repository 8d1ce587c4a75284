package dev.plinth.storage;

import static java.util.Objects.requireNonNull;

import dev.plinth.common.ErrorCode;
import dev.plinth.common.PlinthException;
import dev.plinth.wire.Reply;
import dev.plinth.wire.RequestContext;
import dev.plinth.wire.RpcDispatcher;
import dev.plinth.wire.messages.HandshakeMessages;
import dev.plinth.wire.messages.MgmtMessages.TargetUsage;
import dev.plinth.wire.messages.StorageMessages.ReadChunk;
import io.prometheus.metrics.core.metrics.Counter;
import io.prometheus.metrics.core.metrics.GaugeWithCallback;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import dev.plinth.wire.messages.StorageMessages.ReadChunkResult;
import dev.plinth.wire.messages.StorageMessages.RemoveFile;
import dev.plinth.wire.messages.StorageMessages.SyncFile;
import dev.plinth.wire.messages.StorageMessages.TruncateObject;
import dev.plinth.wire.messages.StorageMessages.WriteChunk;
import dev.plinth.wire.messages.StorageMessages.WriteChunkResult;
import io.netty.channel.DefaultFileRegion;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * The storage role: serves chunk I/O for the targets of this node. Disk work runs on a bounded
 * pool of platform threads (blocking file I/O would pin virtual threads' carriers); when its
 * queue is full, requests fail fast with BUSY and the client retries. Reads reply with a file
 * region, which the transport sends with sendfile; the block CRCs ride in the header.
 */
public final class StorageService implements AutoCloseable {
    private static final int QUEUE_MAX = 4096;

    private final Map<Integer, ChunkStore> targets = new ConcurrentHashMap<>();
    private final ThreadPoolExecutor ioExecutor;
    private final Counter bytes;

    public StorageService(int ioThreads) {
        this(ioThreads, dev.plinth.wire.Metrics.unexposed());
    }

    public StorageService(int ioThreads, PrometheusRegistry registry) {
        this.ioExecutor = new ThreadPoolExecutor(ioThreads, ioThreads, 60, TimeUnit.SECONDS,
                new ArrayBlockingQueue<>(QUEUE_MAX), Thread.ofPlatform().name("storage-io-", 0).daemon().factory());
        this.bytes = dev.plinth.wire.Metrics.counter(registry, "plinth_target_io_bytes", "Bytes read from and written to each target's chunks.",
                "target", "direction");
        GaugeWithCallback.builder().name("plinth_target_capacity_bytes").help("Capacity each target reports (see target.capacity).")
                .labelNames("target").callback(callback -> targets.values().forEach(target ->
                        callback.call(target.capacityBytes(), Integer.toString(target.targetId())))).register(registry);
        GaugeWithCallback.builder().name("plinth_target_used_bytes").help("Bytes each target's chunks take.")
                .labelNames("target").callback(callback -> targets.values().forEach(target ->
                        callback.call(target.usedBytes(), Integer.toString(target.targetId())))).register(registry);
        GaugeWithCallback.builder().name("plinth_storage_io_queue_requests").help("Chunk requests waiting for a storage I/O thread.")
                .callback(callback -> callback.call(ioExecutor.getQueue().size())).register(registry);
    }

    public void addTarget(ChunkStore store) {
        requireNonNull(store, "store is null");
        if (targets.putIfAbsent(store.targetId(), store) != null) {
            throw new IllegalStateException("target " + store.targetId() + " served twice");
        }
    }

    public List<ChunkStore> targets() {
        return new ArrayList<>(targets.values());
    }

    /** The bytes of a read in a buffer, for callers that cannot take a FileRegion (in-JVM channels). */
    private static io.netty.buffer.ByteBuf readIntoBuffer(ChunkStore.ReadResult read) {
        int count = (int) read.byteCount();
        io.netty.buffer.ByteBuf buffer = io.netty.buffer.PooledByteBufAllocator.DEFAULT.directBuffer(count);
        try (java.nio.channels.FileChannel channel = java.nio.channels.FileChannel.open(read.file(), java.nio.file.StandardOpenOption.READ)) {
            long position = read.alignedOffset();
            while (buffer.writableBytes() > 0) {
                int n = buffer.writeBytes(channel, position, buffer.writableBytes());
                if (n < 0) {
                    throw new java.io.EOFException("chunk file shorter than its metadata says: " + read.file());
                }
                position += n;
            }
            return buffer;
        } catch (java.io.IOException e) {
            buffer.release();
            throw new PlinthException(ErrorCode.IO_ERROR, "reading " + read.file() + ": " + e.getMessage(), e);
        } catch (RuntimeException e) {
            buffer.release();
            throw e;
        }
    }

    public List<TargetUsage> usage() {
        return targets.values().stream().map(StorageService::usageOf).toList();
    }

    public static TargetUsage usageOf(ChunkStore target) {
        return new TargetUsage(target.targetId(), target.capacityBytes(), target.usedBytes(), target.filesystemId());
    }

    private ChunkStore target(int targetId) {
        ChunkStore store = targets.get(targetId);
        if (store == null) {
            throw new PlinthException(ErrorCode.STALE_HANDLE, "target " + targetId + " is not served here");
        }
        return store;
    }

    public void register(RpcDispatcher dispatcher) {
        dispatcher.register(WriteChunk.class, (context, request, data) -> {
            data.retain();
            return onDisk(context, () -> {
                try {
                    int length = data.readableBytes();
                    long[] result = target(request.targetId()).write(request.chunk(), request.chunkOffset(), data.nioBuffer(), request.segmentCrcs());
                    bytes.labelValues(Integer.toString(request.targetId()), "write").inc(length);
                    return Reply.of(new WriteChunkResult(result[0], (int) result[1]));
                } finally {
                    data.release();
                }
            }, data::release);
        });
        dispatcher.register(ReadChunk.class, (context, request, data) -> onDisk(context, () -> {
            ChunkStore.ReadResult read = target(request.targetId()).read(request.chunk(), request.chunkOffset(), request.length());
            ReadChunkResult result = new ReadChunkResult(read.alignedOffset(), read.chunkLength(), read.chunkVersion(),
                    Arrays.stream(read.blockCrcs()).boxed().toList());
            bytes.labelValues(Integer.toString(request.targetId()), "read").inc(read.byteCount());
            if (read.byteCount() == 0) {
                return Reply.of(result);
            }
            if (!context.fileRegionsAllowed()) {
                return Reply.withData(result, readIntoBuffer(read));
            }
            return Reply.withFile(result, new DefaultFileRegion(read.file().toFile(), read.alignedOffset(), read.byteCount()));
        }, null));
        dispatcher.register(TruncateObject.class, (context, request, data) -> onDisk(context, () -> {
            target(request.targetId()).truncateObject(request.inodeId(), request.objectIndex(), request.objectLength(), request.chunkSizeBytes());
            return Reply.of(HandshakeMessages.EMPTY);
        }, null));
        dispatcher.register(RemoveFile.class, (context, request, data) -> onDisk(context, () -> {
            target(request.targetId()).removeFile(request.inodeId());
            return Reply.of(HandshakeMessages.EMPTY);
        }, null));
        dispatcher.register(SyncFile.class, (context, request, data) -> onDisk(context, () -> {
            target(request.targetId()).syncFile(request.inodeId());
            return Reply.of(HandshakeMessages.EMPTY);
        }, null));
    }

    /**
     * Runs disk work on the I/O pool. A request whose deadline passed while it waited in the
     * queue is answered TIMED_OUT without touching the disk: its caller has stopped waiting, and
     * a retried write carries the same data.
     */
    private CompletableFuture<Reply> onDisk(RequestContext context, Supplier<Reply> work, Runnable onRejected) {
        try {
            return CompletableFuture.supplyAsync(() -> {
                if (context.expired()) {
                    throw new PlinthException(ErrorCode.TIMED_OUT, "request expired in the storage queue");
                }
                return work.get();
            }, ioExecutor);
        } catch (RejectedExecutionException e) {
            if (onRejected != null) {
                onRejected.run();
            }
            return CompletableFuture.failedFuture(new PlinthException(ErrorCode.BUSY, "storage I/O queue is full"));
        }
    }

    @Override
    public void close() {
        ioExecutor.shutdown();
        try {
            ioExecutor.awaitTermination(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        targets.values().forEach(ChunkStore::close);
    }
}
