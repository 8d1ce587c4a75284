package dev.plinth.client;

import dev.plinth.common.Crc32cBlocks;
import dev.plinth.common.ErrorCode;
import dev.plinth.common.Layout;
import dev.plinth.common.PlinthException;
import dev.plinth.common.StripeMath;
import dev.plinth.common.StripeMath.Piece;
import dev.plinth.common.ec.ErasureCode;
import dev.plinth.wire.RpcClient;
import dev.plinth.wire.RpcResponse;
import dev.plinth.wire.messages.MetaMessages;
import dev.plinth.wire.messages.MgmtMessages.ChainInfo;
import dev.plinth.wire.messages.MgmtMessages.TargetInfo;
import dev.plinth.wire.messages.MgmtMessages.TargetState;
import dev.plinth.wire.messages.StorageMessages.ChunkId;
import dev.plinth.wire.messages.StorageMessages.ReadChunk;
import dev.plinth.wire.messages.StorageMessages.ReadChunkResult;
import dev.plinth.wire.messages.StorageMessages.TruncateObject;
import dev.plinth.wire.messages.StorageMessages.WriteChunk;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.Unpooled;
import java.nio.ByteBuffer;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Erasure-coded stripes (design note 89): a file's bytes are striped over the layout's first
 * {@code k} targets as Lustre stripes them over {@code k} objects of one replica each (the data
 * cells), and every row of {@code k} cells of stripe size {@code S} has {@code m} parity cells,
 * at the same object offsets, on the other {@code m} targets. Any {@code k} cells of a row give
 * back the others ({@link ErasureCode}: Reed-Solomon over ISA-L's Cauchy matrix).
 *
 * <p>Reads of a healthy file touch only data cells. A cell that cannot be read (its target down
 * or offline, a checksum mismatch) is decoded from {@code k} others of its row.
 *
 * <p>Writes are whole rows where they can be: a handle holds the rows it is filling (at most
 * {@link #HELD_ROWS}) and encodes a row once every data byte of it is written; a row sent
 * before (a flush, a sync, a read of it, a row pushed out) is read-modify-write: the data cells
 * the writes did not cover are read over the written range, parity is computed again over that
 * range, and every cell of the row is written. Writes of one chunk group (the rows that share a
 * chunk index) go one at a time.
 *
 * <p>Cell tags make torn writes visible: every write of a row gives all {@code k + m} cells of
 * its chunk group one new tag, and a decoder only combines cells that carry the same tag, so a
 * crash in the middle of a row write can never make a decoded cell out of new and old cells.
 * Before a write re-tags a group whose cells disagree (a write torn earlier), it makes the
 * group's parity again from its data (heals it). This assumes one writing client per file at a
 * time, as HDFS's erasure-coded files do.
 *
 * <p>A write goes on without cells whose targets the cluster map has taken offline, up to
 * {@code m} of them: the file's layout first names them stale ({@link MetaMessages.MarkCellsStale},
 * answered before the first write that leaves them out), and from then on every handle opened on
 * the file leaves them out of its writes and decodes them on reads, because they may hold bytes
 * older than their rows. The upkeep rebuilds them once their targets are back
 * ({@link #mendStaleCells}). While a failing cell's target is still online in the map (a restart,
 * a pause shorter than the node timeout), writes wait and retry as replicated writes wait for
 * their chain.
 */
final class ErasureCodedStripes implements StripeIo {
    private static final org.slf4j.Logger log = org.slf4j.LoggerFactory.getLogger(ErasureCodedStripes.class);
    /** Rows a handle holds while they fill, before it sends the oldest as a partial row. */
    static final int HELD_ROWS = 2;
    private static final int CHECKSUM_RETRIES = 2;
    private static final int KNOWN_TAGS_MAX = 4096;
    private static final AtomicLong TAGS = new AtomicLong(new SecureRandom().nextLong());

    private final PlinthClient client;
    /** The file's inode id, which its metadata changes name. */
    private final long fileId;
    /** The id that names the file's chunks (its own, or a migration copy's). */
    private final long inodeId;
    private final Layout layout;
    /** Cells left out of writes and decoded on reads (a bit per cell): the layout's, and those this handle marked since. */
    private volatile long stale;
    private final int k;
    private final int m;
    private final int cellBytes;
    private final int chunkBytes;
    /** The data cells as a plain striped layout: where a file byte lives. */
    private final Layout dataLayout;
    private final ErasureCode code;

    /** Rows being filled, oldest first. Guarded by {@code this}. */
    private final LinkedHashMap<Long, HeldRow> held = new LinkedHashMap<>();
    /** The last operation of each chunk group, which the next one waits for. Guarded by {@code this}. */
    private final Map<Long, CompletableFuture<Void>> groupTails = new HashMap<>();
    /** Rows that reads decoded lately, for the pieces of them read next; emptied by every write. */
    private final DecodedRows decoded = new DecodedRows();

    /** Chunk groups whose cells this handle knows to carry one tag (it wrote them all). Guarded by {@code this}. */
    private final Map<Long, Long> knownTags = new HashMap<>();

    ErasureCodedStripes(PlinthClient client, long fileId, Layout layout) {
        this.client = client;
        this.fileId = fileId;
        this.inodeId = layout.chunkOwner(fileId);
        this.layout = layout;
        this.stale = layout.staleCells();
        this.k = layout.dataCells();
        this.m = layout.parityCells();
        this.cellBytes = layout.stripeSizeBytes();
        this.chunkBytes = layout.chunkSizeBytes();
        if (layout.chainIds().size() != k + m || chunkBytes % cellBytes != 0) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "erasure-coded layout " + k + "+" + m + " with " + layout.chainIds().size()
                    + " targets, stripe size " + cellBytes + " and chunk size " + chunkBytes);
        }
        this.dataLayout = new Layout(k, cellBytes, chunkBytes, layout.pool(), 1, layout.chainIds().subList(0, k));
        this.code = ErasureCode.of(k, m);
    }

    private long rowBytes() {
        return (long) k * cellBytes;
    }

    private long chunkGroup(long row) {
        return row * cellBytes / chunkBytes;
    }

    /** Where row {@code row}'s cells start in their chunks. */
    private int chunkOffset(long row) {
        return (int) (row * cellBytes % chunkBytes);
    }

    private static long nextTag() {
        long tag;
        do {
            tag = TAGS.incrementAndGet();
        } while (tag == 0);
        return tag;
    }

    // ---- writes

    /** A row being filled: its data cells as written so far, and which bytes of each were written. */
    private final class HeldRow {
        final long row;
        final ByteBuf[] cells = new ByteBuf[k];
        final Ranges[] written = new Ranges[k];
        final CompletableFuture<Void> sent = new CompletableFuture<>();

        HeldRow(long row) {
            this.row = row;
        }

        void put(int cell, int offset, ByteBuffer bytes) {
            if (cells[cell] == null) {
                cells[cell] = PooledByteBufAllocator.DEFAULT.directBuffer(cellBytes, cellBytes);
                cells[cell].writerIndex(cellBytes);
                written[cell] = new Ranges();
            }
            int length = bytes.remaining();
            cells[cell].setBytes(offset, bytes);
            written[cell].add(offset, offset + length);
        }

        boolean full() {
            for (int i = 0; i < k; i++) {
                if (written[i] == null || !written[i].covers(0, cellBytes)) {
                    return false;
                }
            }
            return true;
        }

        void release() {
            for (ByteBuf cell : cells) {
                if (cell != null) {
                    cell.release();
                }
            }
        }
    }

    @Override
    public CompletableFuture<Void> write(long offset, ByteBuffer source, int length) {
        decoded.clear();
        int position = source.position();
        List<CompletableFuture<Void>> rows = new ArrayList<>();
        List<HeldRow> toSend = new ArrayList<>();
        synchronized (this) {
            for (Piece piece : StripeMath.pieces(dataLayout, offset, length)) {
                long objectOffset = piece.chunkIndex() * chunkBytes + piece.chunkOffset();
                long row = objectOffset / cellBytes;
                HeldRow target = held.computeIfAbsent(row, HeldRow::new);
                ByteBuffer bytes = source.duplicate();
                bytes.position(position + (int) (piece.fileOffset() - offset)).limit(position + (int) (piece.fileOffset() - offset) + piece.length());
                target.put(piece.objectIndex(), (int) (objectOffset % cellBytes), bytes);
                if (!rows.contains(target.sent)) {
                    rows.add(target.sent);
                }
                if (target.full()) {
                    held.remove(row);
                    toSend.add(target);
                }
            }
            while (held.size() > HELD_ROWS) {
                HeldRow oldest = held.values().iterator().next();
                held.remove(oldest.row);
                toSend.add(oldest);
            }
        }
        for (HeldRow row : toSend) {
            send(row);
        }
        return rows.size() == 1 ? rows.getFirst() : CompletableFuture.allOf(rows.toArray(CompletableFuture[]::new));
    }

    @Override
    public void flush() {
        List<HeldRow> rows;
        synchronized (this) {
            rows = new ArrayList<>(held.values());
            held.clear();
        }
        for (HeldRow row : rows) {
            send(row);
        }
    }

    /** Sends a row after the operations of its chunk group sent before it, with its share of the write budget. */
    private void send(HeldRow row) {
        int permits = client.writeBudget().acquire((int) Math.min(Integer.MAX_VALUE / 2, (long) (k + m) * cellBytes));
        CompletableFuture<Void> done = inGroupOrder(chunkGroup(row.row), () -> writeRow(row));
        done.whenComplete((ignored, failure) -> {
            client.writeBudget().release(permits);
            row.release();
            if (failure == null) {
                row.sent.complete(null);
            } else {
                row.sent.completeExceptionally(RpcClient.unwrap(failure));
            }
        });
    }

    /** Runs {@code operation} on the coding threads once the group's earlier operations are over. */
    private synchronized CompletableFuture<Void> inGroupOrder(long group, Runnable operation) {
        CompletableFuture<Void> before = groupTails.getOrDefault(group, CompletableFuture.completedFuture(null));
        CompletableFuture<Void> next = before.handle((ignored, failure) -> null)
                .thenRunAsync(operation, client.codingExecutor());
        groupTails.put(group, next);
        next.whenComplete((ignored, failure) -> {
            synchronized (this) {
                groupTails.remove(group, next);
            }
        });
        return next;
    }

    /**
     * Writes one row (blocking, on a coding thread): over the whole 64 KiB blocks that the written
     * bytes touch, every written data cell and every parity cell, and a new tag on every cell of
     * the chunk group; retried as a whole while the failure is one that passes (a target
     * restarting). Whole blocks, so that a target never merges a write with bytes it holds: a
     * damaged block is replaced, never vouched for by a new checksum.
     */
    private void writeRow(HeldRow row) {
        int lo = cellBytes;
        int hi = 0;
        for (Ranges ranges : row.written) {
            if (ranges != null && !ranges.isEmpty()) {
                lo = Math.min(lo, ranges.first());
                hi = Math.max(hi, ranges.last());
            }
        }
        if (hi <= lo) {
            return;
        }
        int block = Crc32cBlocks.BLOCK_BYTES;
        int from = lo / block * block;
        int to = Math.min(cellBytes, (hi + block - 1) / block * block);
        Retry.call(client.retryMillis(), () -> {
            try {
                writeRowOnce(row, from, to);
            } catch (PlinthException e) {
                if (e.code().retryable()) {
                    goOnWithoutOfflineCells();
                }
                throw e;
            }
            return null;
        }, client::refreshClusterMapSoon);
    }

    private void writeRowOnce(HeldRow row, int lo, int hi) {
        long group = chunkGroup(row.row);
        // a row that fills its chunks whole (one row per chunk) replaces everything its group holds: nothing to check first
        if (cellBytes != chunkBytes || lo != 0 || hi != cellBytes || !row.full()) {
            makeConsistent(group);
        }
        int length = hi - lo;
        // data cells the writes did not cover over [lo, hi): their bytes as stored, under what was written
        List<Integer> partial = new ArrayList<>();
        for (int i = 0; i < k; i++) {
            if (row.written[i] == null || !row.written[i].covers(lo, hi)) {
                partial.add(i);
            }
        }
        ByteBuffer[] stored = partial.isEmpty() ? new ByteBuffer[0] : readCells(row.row, lo, hi, partial.stream().mapToInt(i -> i).toArray());
        ByteBuffer[] data = new ByteBuffer[k];
        for (int i = 0; i < k; i++) {
            int index = partial.indexOf(i);
            if (index < 0) {
                data[i] = row.cells[i].nioBuffer(lo, length); // written whole over the range: its bytes as held, no copy
                continue;
            }
            ByteBuffer cell = stored[index];
            if (row.written[i] != null) {
                for (int[] range : row.written[i].list()) {
                    int start = Math.max(lo, range[0]);
                    int end = Math.min(hi, range[1]);
                    if (end > start) {
                        row.cells[i].getBytes(start, cell.duplicate().position(start - lo).limit(end - lo));
                    }
                }
            }
            data[i] = cell;
        }
        ByteBuf[] parityBuffers = new ByteBuf[m];
        ByteBuffer[] parity = new ByteBuffer[m];
        try {
            for (int p = 0; p < m; p++) {
                parityBuffers[p] = PooledByteBufAllocator.DEFAULT.directBuffer(length, length).writerIndex(length);
                parity[p] = parityBuffers[p].nioBuffer(0, length);
            }
            code.encode(data, parity, length);
            long tag = nextTag();
            forgetTag(group); // until every cell has the new one
            long leftOut = stale;
            List<CompletableFuture<RpcResponse<Record>>> writes = new ArrayList<>(k + m);
            int base = chunkOffset(row.row);
            for (int i = 0; i < k; i++) {
                boolean written = row.written[i] != null && !row.written[i].isEmpty();
                if (!hasCell(leftOut, i)) {
                    writes.add(written ? writeCell(i, group, base + lo, Unpooled.wrappedBuffer(data[i]), tag)
                            : writeCell(i, group, 0, Unpooled.EMPTY_BUFFER, tag)); // the tag only
                }
            }
            for (int p = 0; p < m; p++) {
                if (!hasCell(leftOut, k + p)) {
                    writes.add(writeCell(k + p, group, base + lo, parityBuffers[p].retainedSlice(), tag));
                }
            }
            try {
                ReplicatedChains.awaitAll(writes);
            } catch (PlinthException e) {
                if (e.code() != ErrorCode.CHECKSUM_MISMATCH) {
                    throw e;
                }
                // a target refused to keep part of a damaged block under this write: the cells now disagree, and the next try
                // rebuilds the damaged one from the others before it writes again
                throw new PlinthException(ErrorCode.UNAVAILABLE, "a cell of inode " + inodeId + " chunk group " + group + " is damaged: "
                        + e.detail(), e);
            } catch (RuntimeException e) { // a chain without a member to write to, for one
                throw new PlinthException(ErrorCode.UNAVAILABLE, "inode " + inodeId + " chunk group " + group + ": " + e, e);
            }
            rememberTag(group, tag);
        } finally {
            for (ByteBuf buffer : parityBuffers) {
                if (buffer != null) {
                    buffer.release();
                }
            }
        }
    }

    private static boolean hasCell(long cells, int cell) {
        return (cells >>> cell & 1) != 0;
    }

    /**
     * After a row write failed in a way that passes: cells whose targets the cluster map has
     * offline are marked stale, where the file can do without them (at most {@code m} stale in
     * all), so that the next try goes on without them. A target that is only slow or restarting
     * is still online in the map, and the write waits for it.
     */
    private void goOnWithoutOfflineCells() {
        long away = offlineCells(~stale & ((1L << (k + m)) - 1));
        if (away != 0 && Long.bitCount(stale | away) <= m) {
            markStale(away);
        }
    }

    /** Of {@code cells}, those whose target the cluster map (fetched again) has offline. */
    private long offlineCells(long cells) {
        var map = client.refreshClusterMap();
        long offline = 0;
        for (int cell = 0; cell < k + m; cell++) {
            if (!hasCell(cells, cell)) {
                continue;
            }
            ChainInfo chain = map.chain(layout.chainIds().get(cell));
            boolean online = chain != null && chain.targetIds().stream().allMatch(target -> {
                TargetInfo info = map.target(target);
                return info != null && info.state() == TargetState.ONLINE;
            });
            offline |= online ? 0 : 1L << cell;
        }
        return offline;
    }

    /** Names cells {@code cells} stale in the file's layout, then leaves them out of this handle's writes and reads. */
    private void markStale(long cells) {
        synchronized (this) {
            if ((stale | cells) == stale) {
                return;
            }
        }
        client.meta(new MetaMessages.MarkCellsStale(client.header(), fileId, cells));
        synchronized (this) {
            stale |= cells;
            knownTags.clear(); // the tags of the cells left are what counts now
        }
        decoded.clear();
        log.warn("inode {}: writing without cells {} while their targets are offline; the upkeep rebuilds them when they are back", fileId,
                layout.withStaleCells(stale).staleCellList());
    }

    private synchronized void rememberTag(long group, long tag) {
        if (knownTags.size() >= KNOWN_TAGS_MAX) {
            knownTags.clear();
        }
        knownTags.put(group, tag);
    }

    private synchronized void forgetTag(long group) {
        knownTags.remove(group);
    }

    /**
     * Makes sure every cell of a chunk group carries one tag before a write gives them a new one:
     * known from this handle's own last write, or asked of the targets. Where they disagree, a
     * write was torn here (a crash, a target lost mid-write), and tagging over it would vouch for
     * cells that do not match: the cells most of the group agrees on are kept and the others
     * rebuilt from them, or, where fewer than k agree, the parity is made again from the data.
     */
    private void makeConsistent(long group) {
        synchronized (this) {
            if (knownTags.containsKey(group)) {
                return;
            }
        }
        long leftOut = stale;
        long[] tags = new long[k + m];
        int[] lengths = new int[k + m];
        Map<Long, List<Integer>> byTag = new HashMap<>();
        CellBytes[] read = new CellBytes[k + m];
        PlinthException[] failures = new PlinthException[k + m];
        fetch(read, failures, group, 0, 0, liveCells(leftOut)); // every reply is taken, so none is left unreleased
        for (int cell : liveCells(leftOut)) {
            if (read[cell] != null) {
                tags[cell] = read[cell].tag();
                lengths[cell] = read[cell].chunkLength();
                read[cell].close();
            }
        }
        for (int cell : liveCells(leftOut)) {
            if (failures[cell] != null) {
                throw failures[cell];
            }
            byTag.computeIfAbsent(tags[cell], tag -> new ArrayList<>()).add(cell);
        }
        if (byTag.size() == 1) {
            rememberTag(group, byTag.keySet().iterator().next());
            return;
        }
        List<Integer> agreeing = byTag.values().stream().max(java.util.Comparator.comparingInt(List::size)).orElseThrow();
        int length = 0;
        for (int cell = 0; cell < k + m; cell++) {
            length = Math.max(length, lengths[cell]);
        }
        if (agreeing.size() >= k) {
            List<Integer> others = new ArrayList<>();
            for (int cell = 0; cell < k + m; cell++) {
                if (!agreeing.contains(cell) && !hasCell(leftOut, cell)) {
                    others.add(cell);
                }
            }
            log.info("inode {} chunk group {}: cells {} disagree with the other {} (an interrupted write): rebuilding them", inodeId, group,
                    others, agreeing.size());
            rebuild(group, agreeing, tags[agreeing.getFirst()], others, length);
        } else {
            log.info("inode {} chunk group {}: fewer than {} cells agree (an interrupted write): making its parity from its data", inodeId,
                    group, k);
            remakeParity(group, length);
        }
    }

    /**
     * Rebuilds cells {@code lost} of a chunk group over [0, length) from cells {@code good}, which
     * carry tag {@code goodTag}, and gives every cell one new tag.
     */
    private void rebuild(long group, List<Integer> good, long goodTag, List<Integer> lost, int length) {
        CellBytes[] cells = new CellBytes[k + m];
        PlinthException[] failures = new PlinthException[k + m];
        try {
            fetch(cells, failures, group, 0, length, good.stream().mapToInt(Integer::intValue).toArray());
            List<Integer> present = new ArrayList<>();
            for (int cell : good) {
                if (cells[cell] != null && cells[cell].tag() == goodTag && present.size() < k) {
                    present.add(cell);
                }
            }
            if (present.size() < k) {
                throw new PlinthException(ErrorCode.UNAVAILABLE, "inode " + inodeId + " chunk group " + group + ": only " + present.size()
                        + " cells to rebuild from, " + k + " needed");
            }
            int[] wanted = lost.stream().mapToInt(Integer::intValue).toArray();
            rewrite(group, wanted, decode(cells, present, wanted, length), length);
        } finally {
            for (CellBytes cell : cells) {
                if (cell != null) {
                    cell.close();
                }
            }
        }
    }

    /** Makes a chunk group's parity over [0, length) from its data cells, which must all be readable, and tags every cell anew. */
    private void remakeParity(long group, int length) {
        CellBytes[] cells = new CellBytes[k + m];
        PlinthException[] failures = new PlinthException[k + m];
        try {
            int[] dataCells = java.util.stream.IntStream.range(0, k).toArray();
            fetch(cells, failures, group, 0, length, dataCells);
            ByteBuffer[] data = new ByteBuffer[k];
            for (int i = 0; i < k; i++) {
                if (cells[i] == null) {
                    PlinthException cause = failures[i];
                    if (cause.code().retryable()) {
                        throw cause;
                    }
                    throw new PlinthException(ErrorCode.IO_ERROR, "inode " + inodeId + " chunk group " + group
                            + " was left inconsistent by an interrupted write and data cell " + i + " of it cannot be read: " + cause.detail(), cause);
                }
                data[i] = cells[i].copy(length);
            }
            ByteBuffer[] parity = new ByteBuffer[m];
            int[] parityCells = new int[m];
            for (int p = 0; p < m; p++) {
                parity[p] = ByteBuffer.allocateDirect(Math.max(1, length)).limit(length);
                parityCells[p] = k + p;
            }
            code.encode(data, parity, length);
            rewrite(group, parityCells, parity, length);
        } finally {
            for (CellBytes cell : cells) {
                if (cell != null) {
                    cell.close();
                }
            }
        }
    }

    /** Replaces cells {@code which} of a group with {@code contents} ({@code length} bytes each), and tags every cell of it anew. */
    private void rewrite(long group, int[] which, ByteBuffer[] contents, int length) {
        long tag = nextTag();
        List<CompletableFuture<RpcResponse<Record>>> cuts = new ArrayList<>();
        for (int cell : which) {
            cuts.add(cutCell(cell, group, 0)); // to nothing: a cut inside a damaged block would be refused
        }
        ReplicatedChains.awaitAll(cuts);
        List<CompletableFuture<RpcResponse<Record>>> writes = new ArrayList<>(k + m);
        long leftOut = stale;
        for (int cell = 0; cell < k + m; cell++) {
            int index = -1;
            for (int w = 0; w < which.length; w++) {
                index = which[w] == cell ? w : index;
            }
            if (index < 0 && hasCell(leftOut, cell)) {
                continue; // a stale cell takes no tag it has not been rebuilt under
            }
            writes.add(index >= 0 && length > 0 ? writeCell(cell, group, 0, Unpooled.wrappedBuffer(contents[index]), tag)
                    : writeCell(cell, group, 0, Unpooled.EMPTY_BUFFER, tag));
        }
        ReplicatedChains.awaitAll(writes);
        rememberTag(group, tag);
    }

    /** Cuts cell {@code cell}'s chunk of a group to {@code length} bytes. */
    private CompletableFuture<RpcResponse<Record>> cutCell(int cell, long group, int length) {
        try {
            ChainInfo chain = client.chain(layout.chainIds().get(cell));
            int target = chain.writeTargets().getFirst();
            return client.storage(target).callAsync(WriteChunk.cutFromClient(target, new ChunkId(inodeId, cell, group), length, chain.chainId(),
                    chain.version()), Unpooled.EMPTY_BUFFER, Duration.ofMillis(client.timeoutMillis()));
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    /** Writes {@code data} (released here) at {@code chunkOffset} of cell {@code cell}'s chunk of the group, tagging the chunk. */
    private CompletableFuture<RpcResponse<Record>> writeCell(int cell, long group, int chunkOffset, ByteBuf data, long tag) {
        try {
            ChainInfo chain = client.chain(layout.chainIds().get(cell));
            int target = chain.writeTargets().getFirst();
            List<Integer> crcs = data.readableBytes() == 0 ? List.of()
                    : Arrays.stream(Crc32cBlocks.segmentCrcs(data.nioBuffer(), chunkOffset)).boxed().toList();
            WriteChunk request = WriteChunk.cellFromClient(target, new ChunkId(inodeId, cell, group), chunkOffset, crcs, chain.chainId(),
                    chain.version(), tag);
            return client.storage(target).callAsync(request, data, Duration.ofMillis(client.timeoutMillis()));
        } catch (RuntimeException e) {
            data.release();
            return CompletableFuture.failedFuture(e);
        }
    }

    /** Waits for a future; its failure is thrown as it was raised (a PlinthException keeps its code, so retries see it). */
    private static <T> T join(CompletableFuture<T> future) {
        try {
            return PlinthClient.await(future);
        } catch (java.util.concurrent.CompletionException e) {
            throw RpcClient.unwrap(e);
        }
    }

    // ---- reads

    /** Bytes read from one cell (verified; shorter than asked where the chunk ends), with the chunk's tag. */
    record CellBytes(ByteBuf bytes, long tag, int chunkLength) implements AutoCloseable {
        /** A copy of the first {@code length} bytes in a direct buffer, zeros past what the chunk held. */
        ByteBuffer copy(int length) {
            ByteBuffer copy = ByteBuffer.allocateDirect(Math.max(1, length));
            int count = Math.min(length, bytes.readableBytes());
            bytes.getBytes(bytes.readerIndex(), copy.duplicate().limit(count));
            return copy.limit(length);
        }

        @Override
        public void close() {
            bytes.release();
        }
    }

    /**
     * Reads [chunkOffset, chunkOffset + length) of cell {@code cell}'s chunk of a group, once
     * (a checksum mismatch is read again, as a racing write can cause one): a target that is away
     * fails at once, for the caller to decode around it.
     */
    private CompletableFuture<CellBytes> readCell(int cell, long group, int chunkOffset, int length) {
        return readCell(cell, group, chunkOffset, length, 0);
    }

    private CompletableFuture<CellBytes> readCell(int cell, long group, int chunkOffset, int length, int attempt) {
        ReadChunk request;
        CompletableFuture<RpcResponse<ReadChunkResult>> call;
        try {
            if (hasCell(stale, cell)) {
                throw new PlinthException(ErrorCode.UNAVAILABLE, "cell " + cell + " is stale (written around while its target was away)");
            }
            if (length > 0 && cell < dev.plinth.common.FaultPoints.value(dev.plinth.common.FaultPoints.CLIENT_EC_UNREADABLE_CELLS, 0)) {
                throw new PlinthException(ErrorCode.UNAVAILABLE, "cell " + cell + " is unreadable (injected: "
                        + dev.plinth.common.FaultPoints.CLIENT_EC_UNREADABLE_CELLS + ")");
            }
            ChainInfo chain = client.chain(layout.chainIds().get(cell));
            int target = chain.targetIds().getFirst();
            TargetInfo info = client.clusterMap().target(target);
            if (info == null || info.state() != TargetState.ONLINE) {
                throw new PlinthException(ErrorCode.UNAVAILABLE, "target " + target + " is " + (info == null ? "unknown" : "offline"));
            }
            request = new ReadChunk(target, new ChunkId(inodeId, cell, group), chunkOffset, length, chain.chainId());
            call = client.storage(target).callAsync(request, null, Duration.ofMillis(client.timeoutMillis()));
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
        Piece piece = new Piece(0, cell, group, chunkOffset, length);
        return call.handle((response, failure) -> {
            if (failure == null) {
                try (response) {
                    return CompletableFuture.completedFuture(new CellBytes(ReplicatedChains.verifiedSlice(response.message(), response.data(), piece),
                            response.message().cellTag(), response.message().chunkLength()));
                } catch (PlinthException e) {
                    failure = e;
                }
            }
            RuntimeException error = RpcClient.unwrap(failure);
            if (error instanceof PlinthException plinth && plinth.code() == ErrorCode.CHECKSUM_MISMATCH && attempt < CHECKSUM_RETRIES) {
                return readCell(cell, group, chunkOffset, length, attempt + 1);
            }
            return CompletableFuture.<CellBytes>failedFuture(error);
        }).thenCompose(future -> future);
    }

    /** Fetches [offset, offset + length) from the data cells; a cell that cannot be read is decoded from its row. */
    @Override
    public CompletableFuture<Extent> read(long offset, int length) {
        List<Piece> pieces = StripeMath.pieces(dataLayout, offset, length);
        Extent extent = new Extent(offset, length, pieces);
        List<CompletableFuture<Void>> reads = new ArrayList<>(pieces.size());
        for (int i = 0; i < pieces.size(); i++) {
            Piece piece = pieces.get(i);
            int index = i;
            ByteBuffer[] decodedRow = decoded.doneFor(rowRange(piece));
            if (decodedRow != null) { // this handle decoded the row a moment ago: its cells are here
                extent.set(index, Unpooled.wrappedBuffer(decodedRow[piece.objectIndex()].duplicate()));
                continue;
            }
            reads.add(readCell(piece.objectIndex(), piece.chunkIndex(), piece.chunkOffset(), piece.length()).handle((read, failure) -> {
                if (failure == null) {
                    extent.set(index, read.bytes());
                    return CompletableFuture.<Void>completedFuture(null);
                }
                return decodedCells(rowRange(piece)).thenAccept(cells -> extent.set(index,
                        Unpooled.wrappedBuffer(cells[piece.objectIndex()].duplicate())));
            }).thenCompose(future -> future));
        }
        return CompletableFuture.allOf(reads.toArray(CompletableFuture[]::new)).handle((ignored, failure) -> {
            if (failure != null) {
                extent.release();
                throw RpcClient.unwrap(failure);
            }
            return extent;
        });
    }

    /** Where a piece lies: its row, and its range within the row's cells. */
    private RowRange rowRange(Piece piece) {
        long objectOffset = piece.chunkIndex() * chunkBytes + piece.chunkOffset();
        int lo = (int) (objectOffset % cellBytes);
        return new RowRange(objectOffset / cellBytes, lo, lo + piece.length());
    }

    /**
     * The data cells of a row over a range, where one of them could not be read: decoded
     * together, once, on the coding threads (retried while failures pass), for every piece of
     * the row being read. A sequential reader meets each unreadable cell of a row in turn, and
     * read-ahead asks for them at the same time.
     */
    private CompletableFuture<ByteBuffer[]> decodedCells(RowRange range) {
        return decoded.get(range, () -> CompletableFuture.supplyAsync(() -> Retry.call(client.retryMillis(),
                () -> readCells(range.row(), range.lo(), range.hi(), java.util.stream.IntStream.range(0, k).toArray()),
                client::refreshClusterMapSoon), client.codingExecutor()));
    }

    /**
     * The bytes [lo, hi) of data cells {@code wanted} of a row, as stored: read where they can
     * be, decoded from {@code k} cells of one tag where not. Blocking.
     */
    private ByteBuffer[] readCells(long row, int lo, int hi, int[] wanted) {
        long group = chunkGroup(row);
        int base = chunkOffset(row);
        int length = hi - lo;
        CellBytes[] cells = new CellBytes[k + m];
        PlinthException[] failures = new PlinthException[k + m];
        try {
            fetch(cells, failures, group, base + lo, length, wanted);
            ByteBuffer[] result = new ByteBuffer[wanted.length];
            List<Integer> lost = new ArrayList<>();
            for (int w = 0; w < wanted.length; w++) {
                if (cells[wanted[w]] != null) {
                    result[w] = cells[wanted[w]].copy(length);
                } else {
                    lost.add(w);
                }
            }
            if (lost.isEmpty()) {
                return result;
            }
            // k cells of one write (one tag) are enough: data cells first, then parity, more only where some fail or disagree
            List<Integer> present = List.of();
            int next = 0;
            while (true) {
                Map<Long, List<Integer>> byTag = new HashMap<>();
                for (int cell = 0; cell < k + m; cell++) {
                    if (cells[cell] != null) {
                        byTag.computeIfAbsent(cells[cell].tag(), tag -> new ArrayList<>()).add(cell);
                    }
                }
                present = byTag.values().stream().max(java.util.Comparator.comparingInt(List::size)).orElse(List.of());
                int needed = k - present.size();
                List<Integer> batch = new ArrayList<>();
                for (; next < k + m && batch.size() < needed; next++) {
                    if (cells[next] == null && failures[next] == null) {
                        batch.add(next);
                    }
                }
                if (needed <= 0 || batch.isEmpty()) {
                    break;
                }
                fetch(cells, failures, group, base + lo, length, batch.stream().mapToInt(Integer::intValue).toArray());
            }
            if (present.size() < k) {
                PlinthException cause = Arrays.stream(failures).filter(java.util.Objects::nonNull).findFirst().orElse(null);
                boolean passing = cause != null && cause.code().retryable() && Arrays.stream(failures).filter(java.util.Objects::nonNull)
                        .count() > m;
                throw new PlinthException(passing ? ErrorCode.UNAVAILABLE : ErrorCode.IO_ERROR, "row " + row + " of inode " + inodeId
                        + ": only " + present.size() + " of its " + (k + m) + " cells agree and can be read, " + k + " are needed"
                        + (cause == null ? "" : " (" + cause.getMessage() + ")"), cause);
            }
            ByteBuffer[] outputs = decode(cells, present, lost.stream().mapToInt(w -> wanted[w]).toArray(), length);
            for (int o = 0; o < lost.size(); o++) {
                result[lost.get(o)] = outputs[o];
            }
            return result;
        } finally {
            for (CellBytes cell : cells) {
                if (cell != null) {
                    cell.close();
                }
            }
        }
    }

    /** Decodes cells {@code wanted} over [0, length) from the first {@code k} of cells {@code from} (read into {@code cells}, of one tag). */
    private ByteBuffer[] decode(CellBytes[] cells, List<Integer> from, int[] wanted, int length) {
        int[] inputsAt = from.subList(0, k).stream().mapToInt(Integer::intValue).toArray();
        ByteBuffer[] inputs = new ByteBuffer[k];
        for (int j = 0; j < k; j++) {
            inputs[j] = cells[inputsAt[j]].copy(length);
        }
        ByteBuffer[] outputs = new ByteBuffer[wanted.length];
        for (int o = 0; o < outputs.length; o++) {
            outputs[o] = ByteBuffer.allocateDirect(Math.max(1, length)).limit(length);
        }
        code.decode(inputsAt, inputs, wanted, outputs, length);
        return outputs;
    }

    /** Reads cells {@code which} in parallel into {@code cells}, or their failures into {@code failures}. */
    private void fetch(CellBytes[] cells, PlinthException[] failures, long group, int chunkOffset, int length, int[] which) {
        List<CompletableFuture<CellBytes>> reads = new ArrayList<>(which.length);
        for (int cell : which) {
            reads.add(readCell(cell, group, chunkOffset, length));
        }
        for (int i = 0; i < which.length; i++) {
            try {
                cells[which[i]] = join(reads.get(i));
            } catch (PlinthException e) {
                failures[which[i]] = e;
            } catch (RuntimeException e) {
                failures[which[i]] = new PlinthException(ErrorCode.UNAVAILABLE, e.toString(), e);
            }
        }
    }

    // ---- checking parity (plinth fsck --parity)

    /** What a parity check found in one file: problems in words, and how many chunk groups it checked and repaired. */
    record ParityCheck(long groups, List<String> problems, long repaired) {}

    /**
     * Checks every chunk group of a file of {@code sizeBytes}: all cells readable, all of one
     * tag, and the parity what the data encodes to. With {@code repair}, a group with a problem
     * is looked at again a second later (a write in progress looks the same for a moment) and then
     * mended: cells that disagree with K or more others, or cannot be read, are rebuilt from those;
     * parity that does not match data agreeing on one tag is made again from the data.
     * {@code settleMillis} is that second: 0 where the file is known to be quiet (a rebuild).
     * {@code groupRead} hears the bytes each group's check read (all its cells).
     */
    ParityCheck checkParity(long sizeBytes, boolean repair, long settleMillis, java.util.function.LongConsumer groupRead) {
        long parityLength = parityLength(sizeBytes);
        long groups = groups(sizeBytes);
        List<String> problems = new ArrayList<>();
        long repaired = 0;
        for (long group = 0; group < groups; group++) {
            String problem = checkGroup(group);
            groupRead.accept((long) (k + m) * Math.min(chunkBytes, parityLength - group * chunkBytes));
            if (problem == null) {
                continue;
            }
            if (repair && settleMillis > 0) {
                try {
                    Thread.sleep(settleMillis);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new PlinthException(ErrorCode.INTERRUPTED, "interrupted");
                }
                problem = checkGroup(group);
            }
            if (repair && problem != null) {
                try {
                    forgetTag(group);
                    mend(group);
                    repaired++;
                    problem += " (repaired)";
                } catch (PlinthException e) {
                    problem += " (not repaired: " + e.getMessage() + ")";
                }
            }
            if (problem != null) {
                problems.add("chunk group " + group + ": " + problem);
            }
        }
        return new ParityCheck(groups, problems, repaired);
    }

    /** What is wrong with a chunk group, or null. */
    private String checkGroup(long group) {
        CellBytes[] cells = new CellBytes[k + m];
        PlinthException[] failures = new PlinthException[k + m];
        long leftOut = stale;
        try {
            fetch(cells, failures, group, 0, chunkBytes, liveCells(leftOut));
            List<String> problems = new ArrayList<>();
            for (int cell = 0; cell < k + m; cell++) {
                if (failures[cell] != null) {
                    problems.add("cell " + cell + " cannot be read (" + failures[cell].getMessage() + ")");
                }
            }
            java.util.Set<Long> tags = new java.util.HashSet<>();
            int length = 0;
            for (CellBytes cell : cells) {
                if (cell != null) {
                    tags.add(cell.tag());
                    length = Math.max(length, cell.chunkLength());
                }
            }
            if (tags.size() > 1) {
                problems.add("its cells carry " + tags.size() + " different tags (a write was interrupted)");
            }
            if (problems.isEmpty() && length > 0 && leftOut == 0) { // with cells stale, agreeing tags are what can be checked
                ByteBuffer[] data = new ByteBuffer[k];
                for (int i = 0; i < k; i++) {
                    data[i] = cells[i].copy(length);
                }
                ByteBuffer[] parity = new ByteBuffer[m];
                for (int p = 0; p < m; p++) {
                    parity[p] = ByteBuffer.allocateDirect(length);
                }
                code.encode(data, parity, length);
                for (int p = 0; p < m; p++) {
                    if (!parity[p].equals(cells[k + p].copy(length))) {
                        problems.add("parity cell " + (k + p) + " does not match its data");
                    }
                }
            }
            return problems.isEmpty() ? null : String.join("; ", problems);
        } finally {
            for (CellBytes cell : cells) {
                if (cell != null) {
                    cell.close();
                }
            }
        }
    }

    /**
     * Mends a chunk group: cells that cannot be read or disagree with K or more others are
     * rebuilt from those; then, where parity still does not match (or fewer than K agree), parity
     * is made again from the data.
     */
    private void mend(long group) {
        CellBytes[] cells = new CellBytes[k + m];
        PlinthException[] failures = new PlinthException[k + m];
        List<Integer> agreeing;
        long tag;
        int length = 0;
        long leftOut = stale;
        try {
            fetch(cells, failures, group, 0, chunkBytes, liveCells(leftOut));
            Map<Long, List<Integer>> byTag = new HashMap<>();
            for (int cell = 0; cell < k + m; cell++) {
                if (cells[cell] != null) {
                    byTag.computeIfAbsent(cells[cell].tag(), t -> new ArrayList<>()).add(cell);
                    length = Math.max(length, cells[cell].chunkLength());
                }
            }
            agreeing = byTag.values().stream().max(java.util.Comparator.comparingInt(List::size)).orElse(List.of());
            tag = agreeing.isEmpty() ? 0 : cells[agreeing.getFirst()].tag();
        } finally {
            for (CellBytes cell : cells) {
                if (cell != null) {
                    cell.close();
                }
            }
        }
        if (agreeing.size() >= k) {
            List<Integer> bad = new ArrayList<>();
            for (int cell = 0; cell < k + m; cell++) {
                if (!agreeing.contains(cell) && !hasCell(leftOut, cell)) {
                    bad.add(cell);
                }
            }
            if (!bad.isEmpty()) {
                rebuild(group, agreeing, tag, bad, length);
            }
            if (checkGroup(group) == null) {
                return;
            }
        }
        remakeParity(group, length);
    }

    /** The cells not in {@code leftOut}, in order. */
    private int[] liveCells(long leftOut) {
        return java.util.stream.IntStream.range(0, k + m).filter(cell -> !hasCell(leftOut, cell)).toArray();
    }

    /**
     * Rebuilds the stale cells of a file of {@code sizeBytes} (stored size) from the others,
     * chunk group by chunk group, whatever they hold, and cuts their objects past the file's end;
     * returns the cells rebuilt (a bit each). The caller then clears them with
     * {@link MetaMessages.ClearStaleCells}, which holds only if the file did not change meanwhile.
     * Only the stale cells are written, each under the tag its group's other cells carry: a writer
     * that opens the file meanwhile leaves them out, so the two never write the same cell, and a
     * group it rewrites meanwhile disagrees with the rebuilt cell, which the next rebuild mends.
     * Blocking.
     */
    long mendStaleCells(long sizeBytes) {
        long mending = stale;
        if (mending == 0) {
            return 0;
        }
        long groups = groups(sizeBytes);
        List<Integer> cells = layout.withStaleCells(mending).staleCellList();
        Retry.call(client.retryMillis(), () -> {
            List<CompletableFuture<RpcResponse<Record>>> cuts = new ArrayList<>();
            for (int cell : cells) {
                int target = client.chain(layout.chainIds().get(cell)).writeTargets().getFirst();
                cuts.add(client.storage(target).callAsync(new TruncateObject(target, inodeId, cell, groups * chunkBytes, chunkBytes), null,
                        Duration.ofMillis(client.timeoutMillis())));
            }
            ReplicatedChains.awaitAll(cuts);
            return null;
        }, client::refreshClusterMapSoon);
        for (long group = 0; group < groups; group++) {
            long chunkGroup = group;
            Retry.call(client.retryMillis(), () -> {
                mendGroup(chunkGroup, cells);
                return null;
            }, client::refreshClusterMapSoon);
        }
        return mending;
    }

    /** Decodes cells {@code stale} of a chunk group from {@code k} others of one tag and writes them under that tag. */
    private void mendGroup(long group, List<Integer> staleCells) {
        int[] live = liveCells(stale);
        CellBytes[] cells = new CellBytes[k + m];
        PlinthException[] failures = new PlinthException[k + m];
        try {
            fetch(cells, failures, group, 0, chunkBytes, live);
            Map<Long, List<Integer>> byTag = new HashMap<>();
            int length = 0;
            for (int cell : live) {
                if (cells[cell] != null) {
                    byTag.computeIfAbsent(cells[cell].tag(), t -> new ArrayList<>()).add(cell);
                    length = Math.max(length, cells[cell].chunkLength());
                }
            }
            List<Integer> agreeing = byTag.values().stream().max(java.util.Comparator.comparingInt(List::size)).orElse(List.of());
            if (agreeing.size() < k) {
                PlinthException cause = Arrays.stream(failures).filter(java.util.Objects::nonNull).findFirst().orElse(null);
                // fewer than k readable: a target away, tried again; fewer than k agreeing: a torn write, for the parity check to mend
                throw new PlinthException(cause != null && cause.code().retryable() ? ErrorCode.UNAVAILABLE : ErrorCode.IO_ERROR, "inode "
                        + fileId + " chunk group " + group + ": only " + agreeing.size() + " cells agree to rebuild its stale cells from, "
                        + k + " needed", cause);
            }
            long tag = cells[agreeing.getFirst()].tag();
            int[] wanted = staleCells.stream().mapToInt(Integer::intValue).toArray();
            ByteBuffer[] outputs = decode(cells, agreeing, wanted, length);
            List<CompletableFuture<RpcResponse<Record>>> cuts = new ArrayList<>();
            for (int cell : wanted) {
                cuts.add(cutCell(cell, group, 0)); // to nothing first: a cut inside a damaged block would be refused
            }
            ReplicatedChains.awaitAll(cuts);
            List<CompletableFuture<RpcResponse<Record>>> writes = new ArrayList<>();
            for (int o = 0; o < wanted.length; o++) {
                writes.add(writeCell(wanted[o], group, 0, length > 0 ? Unpooled.wrappedBuffer(outputs[o]) : Unpooled.EMPTY_BUFFER, tag));
            }
            ReplicatedChains.awaitAll(writes);
        } finally {
            for (CellBytes cell : cells) {
                if (cell != null) {
                    cell.close();
                }
            }
        }
    }

    /** How far a parity cell's object reaches for a file of {@code sizeBytes} (stored size): a cell per whole row, and the last row's part. */
    private long parityLength(long sizeBytes) {
        long rowBytes = rowBytes();
        return sizeBytes / rowBytes * cellBytes + Math.min(cellBytes, sizeBytes % rowBytes);
    }

    /** The chunk groups a file of {@code sizeBytes} (stored size) has. */
    private long groups(long sizeBytes) {
        return (parityLength(sizeBytes) + chunkBytes - 1) / chunkBytes;
    }

    // ---- truncate and sync

    /**
     * Cuts the file to {@code newSize}: the part of its last row past the new end is written as
     * zeros first (so the row's parity matches what is left), then every cell object is cut to
     * its share. Growing needs nothing: a hole is zeros, and so is its parity.
     */
    @Override
    public void truncate(long oldSize, long newSize) {
        decoded.clear();
        flush();
        awaitGroups();
        long rowBytes = rowBytes();
        if (newSize < oldSize && newSize % rowBytes != 0) {
            long zerosEnd = Math.min(oldSize, (newSize / rowBytes + 1) * rowBytes);
            ByteBuffer zeros = ByteBuffer.allocate((int) (zerosEnd - newSize));
            CompletableFuture<Void> written = write(newSize, zeros, zeros.remaining());
            flush();
            join(written);
        }
        long parityLength = parityLength(newSize);
        // every cell keeps its chunk of the last group, cut to its share, so the group's cells keep one tag (a chunk that is
        // gone reads as untagged)
        long keptGroups = groups(newSize);
        Retry.call(client.retryMillis(), () -> {
            List<CompletableFuture<RpcResponse<Record>>> calls = new ArrayList<>();
            Duration timeout = Duration.ofMillis(client.timeoutMillis());
            long leftOut = stale; // cut when they are rebuilt
            for (int cell : liveCells(leftOut)) {
                int target = client.chain(layout.chainIds().get(cell)).writeTargets().getFirst();
                calls.add(client.storage(target).callAsync(new TruncateObject(target, inodeId, cell, keptGroups * chunkBytes, chunkBytes), null,
                        timeout));
            }
            ReplicatedChains.awaitAll(calls);
            calls.clear();
            for (int cell = 0; keptGroups > 0 && cell < k + m; cell++) {
                if (hasCell(leftOut, cell)) {
                    continue;
                }
                long objectLength = cell < k ? StripeMath.objectLength(dataLayout, newSize, cell) : parityLength;
                long lastGroupStart = (keptGroups - 1) * chunkBytes;
                if (objectLength < keptGroups * chunkBytes) {
                    calls.add(cutCell(cell, keptGroups - 1, (int) Math.max(0, objectLength - lastGroupStart)));
                }
            }
            ReplicatedChains.awaitAll(calls);
            return null;
        }, client::refreshClusterMapSoon);
    }

    /** Waits until every row operation sent so far is over. */
    private void awaitGroups() {
        List<CompletableFuture<Void>> tails;
        synchronized (this) {
            tails = new ArrayList<>(groupTails.values());
        }
        for (CompletableFuture<Void> tail : tails) {
            try {
                join(tail);
            } catch (RuntimeException e) {
                // reported through the write that sent the row
            }
        }
    }

    @Override
    public void sync() {
        flush();
        awaitGroups();
        int[] live = liveCells(stale); // a stale cell's target holds nothing this handle wrote
        ReplicatedChains.syncTargets(client, inodeId, Arrays.stream(live).mapToObj(layout.chainIds()::get).toList());
    }

    /** Sorted, merged, disjoint ranges [from, to) of a cell that a handle wrote. */
    static final class Ranges {
        private final List<int[]> ranges = new ArrayList<>();

        void add(int from, int to) {
            int[] merged = {from, to};
            List<int[]> kept = new ArrayList<>(ranges.size() + 1);
            for (int[] range : ranges) {
                if (range[1] < merged[0] || range[0] > merged[1]) {
                    kept.add(range);
                } else {
                    merged[0] = Math.min(merged[0], range[0]);
                    merged[1] = Math.max(merged[1], range[1]);
                }
            }
            kept.add(merged);
            kept.sort(java.util.Comparator.comparingInt(range -> range[0]));
            ranges.clear();
            ranges.addAll(kept);
        }

        boolean covers(int from, int to) {
            for (int[] range : ranges) {
                if (range[0] <= from && range[1] >= to) {
                    return true;
                }
            }
            return false;
        }

        boolean isEmpty() {
            return ranges.isEmpty();
        }

        int first() {
            return ranges.getFirst()[0];
        }

        int last() {
            return ranges.getLast()[1];
        }

        List<int[]> list() {
            return ranges;
        }
    }

    /** A range of the cells of a row. */
    private record RowRange(long row, int lo, int hi) {}

    /**
     * The last few rows a degraded read decoded, as the futures of all their data cells: pieces
     * of one row share one decode, and a piece asked for after it finds its bytes here. Bounded
     * (the oldest goes first); a write or truncate through the handle empties it.
     */
    private static final class DecodedRows {
        private static final int MAX = 4;
        private final LinkedHashMap<RowRange, CompletableFuture<ByteBuffer[]>> rows = new LinkedHashMap<>();

        synchronized CompletableFuture<ByteBuffer[]> get(RowRange range, java.util.function.Supplier<CompletableFuture<ByteBuffer[]>> decode) {
            CompletableFuture<ByteBuffer[]> row = rows.get(range);
            if (row == null || row.isCompletedExceptionally()) {
                row = decode.get();
                rows.put(range, row);
                while (rows.size() > MAX) {
                    rows.remove(rows.keySet().iterator().next());
                }
            }
            return row;
        }

        /** The row's cells if this handle decoded it and the decode is over. */
        synchronized ByteBuffer[] doneFor(RowRange range) {
            CompletableFuture<ByteBuffer[]> row = rows.get(range);
            return row != null && row.isDone() && !row.isCompletedExceptionally() ? row.join() : null;
        }

        synchronized void clear() {
            rows.clear();
        }
    }
}
