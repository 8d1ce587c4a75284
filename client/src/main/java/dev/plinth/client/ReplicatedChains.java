package dev.plinth.client;

import dev.plinth.common.Crc32cBlocks;
import dev.plinth.common.ErrorCode;
import dev.plinth.common.Layout;
import dev.plinth.common.PlinthException;
import dev.plinth.common.StripeMath;
import dev.plinth.common.StripeMath.Piece;
import dev.plinth.wire.RpcClient;
import dev.plinth.wire.RpcResponse;
import dev.plinth.wire.messages.MgmtMessages.ChainInfo;
import dev.plinth.wire.messages.StorageMessages.ChunkId;
import dev.plinth.wire.messages.StorageMessages.ReadChunk;
import dev.plinth.wire.messages.StorageMessages.ReadChunkResult;
import dev.plinth.wire.messages.StorageMessages.RepairChunk;
import dev.plinth.wire.messages.StorageMessages.SyncFile;
import dev.plinth.wire.messages.StorageMessages.TruncateObject;
import dev.plinth.wire.messages.StorageMessages.WriteChunk;
import dev.plinth.wire.messages.StorageMessages.WriteChunkResult;
import io.netty.buffer.ByteBuf;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;

/**
 * Replicated chains, Lustre's striping over them (StripeMath): a file's bytes are pieces of
 * chunks of its stripe objects, object {@code i} on chain {@code layout.chainIds[i]}. A write goes
 * to the head of its chain, which passes it down (chain replication); a read goes to any serving
 * member, members taking turns by chunk, or to the tail where a member holds a write its chain
 * has not committed; every block's CRC32C travels with it and is checked here. On the same
 * machine as a one-replica target, reads may come straight from its files (short-circuit).
 */
final class ReplicatedChains implements StripeIo {
    private static final int CHECKSUM_RETRIES = 3;

    private final PlinthClient client;
    private final long inodeId;
    private final Layout layout;

    ReplicatedChains(PlinthClient client, long inodeId, Layout layout) {
        this.client = client;
        this.inodeId = inodeId;
        this.layout = layout;
    }

    /**
     * Copies each piece into a buffer of its own with its CRCs, takes its share of the write
     * budget, and sends it to the head of its chain; completes when every piece is acknowledged.
     */
    @Override
    public CompletableFuture<Void> write(long offset, ByteBuffer source, int length) {
        int position = source.position();
        List<Piece> pieces = StripeMath.pieces(layout, offset, length);
        List<CompletableFuture<Void>> sent = new ArrayList<>(pieces.size());
        long deadlineNanos = Retry.deadlineNanos(client.retryMillis());
        for (Piece piece : pieces) {
            ByteBuf data = client.writeBuffers().allocate(piece.length());
            ByteBuffer slice = source.duplicate();
            slice.position(position + (int) (piece.fileOffset() - offset)).limit(position + (int) (piece.fileOffset() - offset) + piece.length());
            data.writeBytes(slice);
            List<Integer> crcs = Arrays.stream(Crc32cBlocks.segmentCrcs(data.nioBuffer(), piece.chunkOffset())).boxed().toList();
            int permits = client.writeBudget().acquire(piece.length());
            PieceWrite request = new PieceWrite(layout.chainIds().get(piece.objectIndex()),
                    new ChunkId(inodeId, piece.objectIndex(), piece.chunkIndex()), piece.chunkOffset(), crcs);
            CompletableFuture<Void> done = new CompletableFuture<>();
            done.whenComplete((ignored, failure) -> client.writeBudget().release(permits));
            sendWrite(request, data, done, deadlineNanos);
            sent.add(done);
        }
        return sent.size() == 1 ? sent.getFirst() : CompletableFuture.allOf(sent.toArray(CompletableFuture[]::new));
    }

    /** One piece of a write, to whichever target heads its chain when it is sent. */
    private record PieceWrite(int chainId, ChunkId chunk, int chunkOffset, List<Integer> segmentCrcs) {}

    /**
     * Sends one piece to the head of its chain, retrying transient failures until the deadline
     * (a chain that lost a member answers again once mgmt has taken the member out: each retry
     * asks for the current chain table); releases {@code data} at the end.
     */
    private void sendWrite(PieceWrite piece, ByteBuf data, CompletableFuture<Void> done, long deadlineNanos) {
        CompletableFuture<RpcResponse<WriteChunkResult>> call;
        try {
            ChainInfo chain = client.chain(piece.chainId());
            List<Integer> members = chain.writeTargets();
            WriteChunk request = WriteChunk.fromClient(members.getFirst(), piece.chunk(), piece.chunkOffset(), piece.segmentCrcs(),
                    chain.chainId(), chain.version());
            // a duplicate per try: sending moves a buffer's reader index where the socket takes it in parts, and a
            // retry must send every byte again (it sent a tail, which the target rightly called corrupted)
            call = client.storage(request.targetId()).callAsync(request, data.retainedDuplicate(), Duration.ofMillis(client.timeoutMillis()));
        } catch (RuntimeException e) {
            call = CompletableFuture.failedFuture(e);
        }
        call.whenComplete((response, failure) -> {
            if (failure == null) {
                response.close();
                data.release();
                done.complete(null);
                return;
            }
            RuntimeException error = RpcClient.unwrap(failure);
            if (error instanceof PlinthException plinth && plinth.code().retryable() && System.nanoTime() < deadlineNanos) {
                Executor later = CompletableFuture.delayedExecutor(50, TimeUnit.MILLISECONDS);
                later.execute(() -> {
                    client.refreshClusterMapSoon();
                    sendWrite(piece, data, done, deadlineNanos);
                });
                return;
            }
            data.release();
            done.completeExceptionally(error instanceof PlinthException plinth ? plinth
                    : new PlinthException(ErrorCode.IO_ERROR, error.toString(), error));
        });
    }

    /** Waits for every call, closing every response, and throws the first failure; returns the replies in order. */
    static <T extends Record> List<T> awaitAll(List<CompletableFuture<RpcResponse<T>>> calls) {
        RuntimeException first = null;
        List<T> replies = new ArrayList<>(calls.size());
        for (CompletableFuture<RpcResponse<T>> call : calls) {
            try (RpcResponse<T> response = RpcClient.await(call)) {
                replies.add(response.message());
            } catch (RuntimeException e) {
                first = first == null ? e : first;
            }
        }
        if (first != null) {
            throw first;
        }
        return replies;
    }

    @Override
    public void sync() {
        syncTargets(client, inodeId, layout.chainIds());
    }

    @Override
    public SyncInFlight startSync() {
        List<CompletableFuture<RpcResponse<Record>>> syncs;
        try {
            syncs = sendSyncs(client, inodeId, layout.chainIds());
        } catch (PlinthException e) {
            if (!e.code().retryable()) {
                throw e;
            }
            return this::sync;
        }
        return () -> {
            try {
                awaitAll(syncs);
            } catch (PlinthException e) {
                if (!e.code().retryable()) {
                    throw e;
                }
                sync(); // from the start, with the retries a sync makes
            }
        };
    }

    /**
     * Makes the chunks of {@code inodeId} durable (fsync) on every target that takes writes of
     * the layout's chains now: one replicated stripe object per chain, or one cell object per
     * one-member chain of an erasure-coded layout alike.
     */
    static void syncTargets(PlinthClient client, long inodeId, List<Integer> chainIds) {
        Retry.call(client.retryMillis(), () -> {
            awaitAll(sendSyncs(client, inodeId, chainIds));
            return null;
        }, client::refreshClusterMapSoon);
    }

    /** Sends {@code SyncFile} to every target that takes writes of {@code chainIds}, once each. */
    private static List<CompletableFuture<RpcResponse<Record>>> sendSyncs(PlinthClient client, long inodeId, List<Integer> chainIds) {
        Set<Integer> targets = new LinkedHashSet<>();
        for (int chainId : chainIds) {
            targets.addAll(client.chain(chainId).writeTargets());
        }
        List<CompletableFuture<RpcResponse<Record>>> syncs = new ArrayList<>();
        for (int targetId : targets) {
            syncs.add(client.storage(targetId).callAsync(new SyncFile(targetId, inodeId), null, Duration.ofMillis(client.timeoutMillis())));
        }
        return syncs;
    }

    /** Cuts sent to chain heads before the next ones wait for their answers. */
    private static final int CUTS_IN_FLIGHT = 64;

    /**
     * Cuts every stripe object of a file (at most {@code oldSize} long) to its share of
     * {@code newSize}. A one-replica chain's target cuts its objects at once. In a replicated
     * chain each chunk that loses bytes is cut through the chain like a write (versioned, head
     * to tail), so that every replica cuts at the same point of the chunk's history and a
     * replica that was away sees the cut as a version it missed.
     */
    @Override
    public void truncate(long oldSize, long newSize) {
        Retry.call(client.retryMillis(), () -> {
            List<CompletableFuture<RpcResponse<Record>>> calls = new ArrayList<>();
            Duration timeout = Duration.ofMillis(client.timeoutMillis());
            for (int objectIndex = 0; objectIndex < layout.stripeCount(); objectIndex++) {
                long objectLength = StripeMath.objectLength(layout, newSize, objectIndex);
                ChainInfo chain = client.chain(layout.chainIds().get(objectIndex));
                int head = chain.writeTargets().getFirst();
                if (chain.replicas() == 1) {
                    calls.add(client.storage(head).callAsync(new TruncateObject(head, inodeId, objectIndex, objectLength,
                            layout.chunkSizeBytes()), null, timeout));
                    continue;
                }
                long chunkBytes = layout.chunkSizeBytes();
                long oldObjectLength = StripeMath.objectLength(layout, Math.max(oldSize, newSize), objectIndex);
                for (long chunkIndex = objectLength / chunkBytes; chunkIndex * chunkBytes < oldObjectLength; chunkIndex++) {
                    int cutAt = (int) Math.max(0, objectLength - chunkIndex * chunkBytes);
                    calls.add(client.storage(head).callAsync(WriteChunk.cutFromClient(head, new ChunkId(inodeId, objectIndex, chunkIndex), cutAt,
                            chain.chainId(), chain.version()), io.netty.buffer.Unpooled.EMPTY_BUFFER, timeout));
                    if (calls.size() >= CUTS_IN_FLIGHT) {
                        awaitAll(calls);
                        calls.clear();
                    }
                }
            }
            awaitAll(calls);
            return null;
        }, client::refreshClusterMapSoon);
    }

    /** Fetches [offset, offset + length) from all the chunks it spans in parallel. */
    @Override
    public CompletableFuture<Extent> read(long offset, int length) {
        List<Piece> pieces = StripeMath.pieces(layout, offset, length);
        Extent extent = new Extent(offset, length, pieces);
        List<CompletableFuture<Void>> reads = new ArrayList<>(pieces.size());
        for (int i = 0; i < pieces.size(); i++) {
            reads.add(readPiece(pieces.get(i), extent, i, 0, false, Retry.deadlineNanos(client.retryMillis())));
        }
        return CompletableFuture.allOf(reads.toArray(CompletableFuture[]::new)).handle((ignored, failure) -> {
            if (failure != null) {
                extent.release();
                throw RpcClient.unwrap(failure);
            }
            return extent;
        });
    }

    /**
     * Reads one piece from a serving member of its chain: members take turns by chunk (so a
     * sequential read spreads over all replicas) and each retry moves to the next one; a member
     * holding an uncommitted write sends the read to the tail ({@code fromTail}).
     */
    private CompletableFuture<Void> readPiece(Piece piece, Extent extent, int index, int attempt, boolean fromTail, long deadlineNanos) {
        ChainInfo chain;
        try {
            chain = client.chain(layout.chainIds().get(piece.objectIndex()));
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
        List<Integer> serving = chain.targetIds();
        int targetId = fromTail ? serving.getLast()
                : serving.get((int) Math.floorMod(piece.chunkIndex() + piece.objectIndex() + inodeId + attempt, (long) serving.size()));
        LocalChunkReader local = chain.replicas() == 1 ? client.localReader() : null;
        java.nio.file.Path localRoot = local == null || attempt > 0 ? null : local.localRoot(targetId);
        if (localRoot != null) {
            return CompletableFuture.supplyAsync(() -> local.read(localRoot, inodeId, piece), client.localReadExecutor())
                    .handle((slice, failure) -> {
                        if (failure == null) {
                            extent.set(index, slice);
                            return CompletableFuture.<Void>completedFuture(null);
                        }
                        return readPiece(piece, extent, index, 1, false, deadlineNanos); // over the network, with its own retries
                    }).thenCompose(f -> f);
        }
        ReadChunk request = new ReadChunk(targetId, new ChunkId(inodeId, piece.objectIndex(), piece.chunkIndex()),
                piece.chunkOffset(), piece.length(), chain.chainId());
        CompletableFuture<RpcResponse<ReadChunkResult>> call;
        try {
            call = client.storage(targetId).callAsync(request, null, Duration.ofMillis(client.timeoutMillis()));
        } catch (RuntimeException e) {
            // a connection refused (its server restarting) is retried below as a failed call is; returned at once, it
            // failed a hard mount's read, and an O_APPEND writer through it, while a storage node restarted
            call = CompletableFuture.failedFuture(e);
        }
        return call.handle((response, failure) -> {
            if (failure == null) {
                try (response) {
                    extent.set(index, verifiedSlice(response.message(), response.data(), piece));
                    return CompletableFuture.<Void>completedFuture(null);
                } catch (PlinthException e) {
                    failure = e;
                }
            }
            RuntimeException error = RpcClient.unwrap(failure);
            // a write racing with this read can change a block after its CRC was taken: read it again, a few times;
            // an unavailable target is retried until the retry window closes (a server restarting, a failover)
            boolean retry = error instanceof PlinthException plinth
                    && ((plinth.code() == ErrorCode.CHECKSUM_MISMATCH && attempt < CHECKSUM_RETRIES)
                            || (plinth.code().retryable() && System.nanoTime() < deadlineNanos));
            if (error instanceof PlinthException plinth && plinth.code() == ErrorCode.NOT_COMMITTED && !fromTail) {
                return CompletableFuture.supplyAsync(() -> readPiece(piece, extent, index, attempt, true, deadlineNanos),
                        client.retryExecutor()).thenCompose(f -> f);
            }
            if (retry) {
                long delayMillis = serving.size() > 1 && attempt == 0 ? 0 : Math.min(1000, 20L << Math.min(attempt, 6));
                return CompletableFuture.supplyAsync(() -> {
                    if (plinthCode(error) != ErrorCode.CHECKSUM_MISMATCH) {
                        client.refreshClusterMapSoon();
                    } else if (serving.size() > 1) {
                        reportDamaged(targetId, request.chunk()); // the next try reads another replica
                    }
                    return readPiece(piece, extent, index, attempt + 1, false, deadlineNanos);
                }, CompletableFuture.delayedExecutor(delayMillis, TimeUnit.MILLISECONDS)).thenCompose(f -> f);
            }
            return CompletableFuture.<Void>failedFuture(error);
        }).thenCompose(f -> f);
    }

    /** Asks a target to check a chunk that failed its CRCs here and repair it from a replica; best effort. */
    private void reportDamaged(int targetId, ChunkId chunk) {
        try {
            client.storage(targetId).callAsync(new RepairChunk(targetId, chunk), null, Duration.ofMillis(client.timeoutMillis()))
                    .whenComplete((response, failure) -> {
                        if (response != null) {
                            response.close();
                        }
                    });
        } catch (RuntimeException e) {
            // the scrubber finds it anyway
        }
    }

    private static ErrorCode plinthCode(RuntimeException error) {
        return error instanceof PlinthException plinth ? plinth.code() : null;
    }

    /**
     * Checks every block of the reply against its stored CRC and returns a retained slice of the
     * piece's bytes that the chunk holds (shorter than the piece where the chunk ends: a hole).
     */
    static ByteBuf verifiedSlice(ReadChunkResult header, ByteBuf data, Piece piece) {
        int block = Crc32cBlocks.BLOCK_BYTES;
        int dataLength = data.readableBytes();
        int expectedLength = Math.max(0, Math.min(header.chunkLength(), header.alignedOffset() + dataLength) - header.alignedOffset());
        if (dataLength != expectedLength || header.blockCrcs().size() != Crc32cBlocks.blockCount(dataLength)) {
            throw new PlinthException(ErrorCode.PROTOCOL_ERROR, "read reply of " + dataLength + " bytes with "
                    + header.blockCrcs().size() + " checksums");
        }
        for (int i = 0; i < header.blockCrcs().size(); i++) {
            int start = data.readerIndex() + i * block;
            int count = Math.min(block, dataLength - i * block);
            if (Crc32cBlocks.crc(data.nioBuffers(start, count)) != header.blockCrcs().get(i)) { // no merging copy where the reply arrived in pieces
                throw new PlinthException(ErrorCode.CHECKSUM_MISMATCH, "block at " + (header.alignedOffset() + i * block)
                        + " of chunk " + piece.chunkIndex() + " (object " + piece.objectIndex() + ")");
            }
        }
        int skip = Math.min(dataLength, Math.max(0, piece.chunkOffset() - header.alignedOffset()));
        int available = Math.max(0, Math.min(piece.length(), dataLength - skip));
        return data.retainedSlice(data.readerIndex() + skip, available);
    }
}
