package dev.plinth.client;

import dev.plinth.common.ErrorCode;
import dev.plinth.common.Layout;
import dev.plinth.common.PlinthException;
import dev.plinth.common.StripeMath.Piece;
import io.netty.buffer.Unpooled;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * Compressed blocks (design note 92) over the layout's own way of storing bytes (replicated
 * chains or erasure-coded stripes, the {@code stored} StripeIo): the file past its Data-on-MDT
 * part is cut into blocks of {@link #BLOCK_BYTES}, and block {@code i} is stored in slot
 * {@code i}, the 64 KiB of stored offsets {@code [mdtBytes + i * 64K, mdtBytes + (i + 1) * 64K)},
 * as a {@link #HEADER_BYTES}-byte header and then its payload: compressed, or as written where
 * compression does not save at least {@link #SAVING_MIN} bytes, or nothing for a block of zeros.
 * The rest of the slot is never written: the target's chunk file keeps a hole there, so the disk
 * holds about what the payloads take, and the network carries only payloads on writes.
 *
 * <p>A slot is never shared by two blocks, so a random read decompresses only the blocks it
 * touches, and an overwrite rewrites only the blocks it touches (read-modify-write of the first
 * and last where the write covers them in part). A slot whose header is zeros was never
 * written: a hole, which reads as zeros; every written slot has the header's magic, so no data
 * can be taken for a header (the header is outside the block's bytes). A block's header also
 * says how many of its bytes were written ({@code logical length}); bytes after them read as
 * zeros, which is what a file extended past them (truncate, a write further on) must read.
 *
 * <p>A handle holds the blocks it is filling in part (at most {@link #HELD_BLOCKS_MAX}) until a
 * write completes them or {@link #flush} sends them, so a stream of small writes compresses each
 * block once; blocks sent and not yet acknowledged stay here too, so that the next write of a
 * block starts from its newest content and a read sees it. Like erasure-coded stripes, this
 * assumes one writing client per file at a time: two clients writing different bytes of one
 * block at once may each rewrite the block without the other's bytes.
 */
final class CompressedBlocks implements StripeIo {
    static final int SLOT_BYTES = Layout.COMPRESSED_SLOT_BYTES;
    static final int HEADER_BYTES = Layout.COMPRESSED_HEADER_BYTES;
    /** Bytes of the file per block: a slot less its header. */
    static final int BLOCK_BYTES = Layout.COMPRESSED_BLOCK_BYTES;
    /** What a compressed payload must save to be kept: one file-system block, the disk's unit. */
    static final int SAVING_MIN = 4096;
    static final int HELD_BLOCKS_MAX = 32;
    /** "PLZ1" */
    private static final int MAGIC = 0x504c5a31;

    private final StripeIo stored;
    private final Layout layout;
    private final long base;
    private final BlockCodec codec;
    /**
     * Blocks held or in flight, by index. Guarded by itself, never while waiting: an
     * acknowledgement removes its block on a network thread, which must never wait for a handle
     * (the handle may be waiting for that thread). The rest of the state is the handle's, under
     * this object's lock.
     */
    private final Map<Long, Block> blocks = new HashMap<>();
    private int held;

    /**
     * Where fetched slots are decoded: not the network thread that received them, which serves
     * every target of a node's connection and would decode a reader's units one after another.
     */
    private final java.util.concurrent.Executor decoder;

    CompressedBlocks(StripeIo stored, Layout layout, java.util.concurrent.Executor decoder) {
        this.stored = stored;
        this.decoder = decoder;
        this.layout = layout;
        this.base = layout.mdtBytes();
        this.codec = BlockCodec.of(layout);
    }

    /** One block's newest content while it is held or in flight. */
    private static final class Block {
        final long index;
        final byte[] bytes = new byte[BLOCK_BYTES];
        /** Bytes of the block written (zeros after them). */
        int length;
        boolean held;
        /** Completes when the content held now is acknowledged; null when nothing waits. */
        CompletableFuture<Void> acknowledged;
        /** The last send of this block, which a new send waits for: two sends of one slot never race. */
        CompletableFuture<Void> inflight;
        int generation;

        Block(long index) {
            this.index = index;
        }

        CompletableFuture<Void> acknowledged() {
            if (acknowledged == null) {
                acknowledged = new CompletableFuture<>();
            }
            return acknowledged;
        }
    }

    /** The stored offset of block {@code index}'s slot. */
    private long slotOffset(long index) {
        return base + index * SLOT_BYTES;
    }

    @Override
    public synchronized CompletableFuture<Void> write(long offset, ByteBuffer source, int length) {
        List<CompletableFuture<Void>> waits = new ArrayList<>();
        List<Block> complete = new ArrayList<>();
        int position = source.position();
        long end = offset + length;
        for (long at = offset; at < end; ) {
            long index = (at - base) / BLOCK_BYTES;
            long blockStart = base + index * BLOCK_BYTES;
            int from = (int) (at - blockStart);
            int to = (int) Math.min(BLOCK_BYTES, end - blockStart);
            Block block = block(index, from == 0 && to == BLOCK_BYTES);
            source.get(position + (int) (at - offset), block.bytes, from, to - from);
            block.length = Math.max(block.length, to);
            waits.add(block.acknowledged());
            if (to == BLOCK_BYTES) {
                complete.add(block);
            } else if (!block.held) {
                synchronized (blocks) {
                    block.held = true;
                }
                held++;
            }
            at = blockStart + to;
        }
        sendAll(complete);
        if (held > HELD_BLOCKS_MAX) {
            sendHeld();
        }
        return waits.size() == 1 ? waits.getFirst() : CompletableFuture.allOf(waits.toArray(CompletableFuture[]::new));
    }

    /** Block {@code index} as held or in flight here, else as stored (unless {@code whole}: the write replaces all of it). */
    private Block block(long index, boolean whole) {
        Block block;
        synchronized (blocks) {
            block = blocks.get(index);
            if (block != null) {
                block.generation++; // an acknowledgement of its last send no longer removes it: this write changes it
            }
        }
        if (block == null) {
            block = new Block(index);
            if (!whole) {
                Extent slot = PlinthClient.await(stored.read(slotOffset(index), SLOT_BYTES));
                try {
                    block.length = decode(index, slot, slotOffset(index), block.bytes, 0);
                } finally {
                    slot.release();
                }
            }
            synchronized (blocks) {
                blocks.put(index, block);
            }
        }
        return block;
    }

    /**
     * Sends blocks, in order; a write of many blocks has them compressed on the common pool first
     * (the codec is most of a write's CPU; sending copies each payload before it returns).
     */
    private void sendAll(List<Block> ready) {
        if (ready.size() < 2) {
            ready.forEach(this::send);
            return;
        }
        byte[][] slots = new byte[ready.size()][];
        java.util.stream.IntStream.range(0, ready.size()).parallel().forEach(i -> slots[i] = encode(ready.get(i).bytes, ready.get(i).length));
        for (int i = 0; i < slots.length; i++) {
            send(ready.get(i), slots[i]);
        }
    }

    private void send(Block block) {
        send(block, null);
    }

    /**
     * Sends a block's content as it is now ({@code encoded}: it, encoded already, or null); its
     * waiters complete when the stored layout acknowledges it.
     */
    private void send(Block block, byte[] encoded) {
        if (block.held) {
            synchronized (blocks) {
                block.held = false;
            }
            held--;
        }
        if (block.inflight != null && !block.inflight.isDone()) {
            stored.flush();
            awaitSend(block);
        }
        byte[] slot = encoded != null ? encoded : encode(block.bytes, block.length);
        int generation;
        synchronized (blocks) {
            generation = ++block.generation;
        }
        CompletableFuture<Void> waiters = block.acknowledged;
        block.acknowledged = null;
        CompletableFuture<Void> sent = stored.write(slotOffset(block.index), ByteBuffer.wrap(slot), slot.length);
        block.inflight = sent;
        sent.whenComplete((ignored, failure) -> {
            synchronized (blocks) {
                if (block.generation == generation && !block.held && blocks.get(block.index) == block) {
                    blocks.remove(block.index);
                }
            }
            if (waiters != null) {
                if (failure == null) {
                    waiters.complete(null);
                } else {
                    waiters.completeExceptionally(failure);
                }
            }
        });
    }

    /** Waits for a block's last send, if any; its failure is its waiters' (the writes that sent it), not the caller's. */
    private static void awaitSend(Block block) {
        if (block.inflight != null) {
            try {
                PlinthClient.await(block.inflight);
            } catch (RuntimeException e) {
                // reported to the writes that sent it
            }
        }
    }

    private void sendHeld() {
        List<Block> all;
        synchronized (blocks) {
            all = List.copyOf(blocks.values());
        }
        for (Block block : all) {
            if (block.held) {
                send(block);
            }
        }
    }

    @Override
    public synchronized void flush() {
        sendHeld();
        stored.flush();
    }

    /** Where a block is encoded before it is copied out at its stored length. */
    private static final ThreadLocal<byte[]> SCRATCH = ThreadLocal.withInitial(() -> new byte[SLOT_BYTES]);

    /** Header, then the block's first {@code length} bytes compressed, or as they are where that saves too little, or nothing for zeros. */
    byte[] encode(byte[] block, int length) {
        int end = length;
        while (end > 0 && block[end - 1] == 0) { // trailing zeros read back as zeros anyway
            end--;
        }
        byte[] slot = SCRATCH.get();
        byte id;
        int payload;
        if (end == 0) {
            id = BlockCodec.ZEROS;
            payload = 0;
        } else {
            payload = end > SAVING_MIN ? codec.compress(block, end, slot, HEADER_BYTES, end - SAVING_MIN) : -1;
            if (payload > 0) {
                id = codec.id();
            } else {
                id = BlockCodec.RAW;
                payload = end;
                System.arraycopy(block, 0, slot, HEADER_BYTES, end);
            }
        }
        ByteBuffer header = ByteBuffer.wrap(slot, 0, HEADER_BYTES);
        header.putInt(MAGIC).put(id).put((byte) 0).putShort((short) 0).putInt(payload).putInt(length);
        return java.util.Arrays.copyOf(slot, HEADER_BYTES + payload);
    }

    /**
     * Decodes a slot's header and payload ({@code slot} from index 0) into
     * {@code target[targetOffset, targetOffset + BLOCK_BYTES)}, which must be zeros (a payload may
     * end before the block); returns the block's length (0 for a hole).
     */
    private static int decode(long index, byte[] slot, byte[] target, int targetOffset) {
        ByteBuffer header = ByteBuffer.wrap(slot, 0, HEADER_BYTES);
        int magic = header.getInt();
        byte id = header.get();
        header.position(8);
        int payload = header.getInt();
        int length = header.getInt();
        if (magic == 0 && id == 0 && payload == 0 && length == 0) {
            return 0; // never written
        }
        if (magic != MAGIC || payload < 0 || payload > BLOCK_BYTES || length < 0 || length > BLOCK_BYTES) {
            throw new PlinthException(ErrorCode.CHECKSUM_MISMATCH, "compressed block " + index + " has no valid header");
        }
        switch (id) {
            case BlockCodec.ZEROS -> {
                return length;
            }
            case BlockCodec.RAW -> {
                if (payload > length) {
                    throw new PlinthException(ErrorCode.CHECKSUM_MISMATCH, "block " + index + " stores " + payload + " bytes of " + length);
                }
                System.arraycopy(slot, HEADER_BYTES, target, targetOffset, payload);
                return length;
            }
            default -> {
                int given = BlockCodec.byId(id).decompress(slot, HEADER_BYTES, payload, target, targetOffset, BLOCK_BYTES);
                if (given > length) {
                    throw new PlinthException(ErrorCode.CHECKSUM_MISMATCH, "block " + index + " decompresses to " + given + " bytes of " + length);
                }
                // zstd may use the output's room past what it gives as scratch space (its literals buffer): zeros again
                java.util.Arrays.fill(target, targetOffset + given, targetOffset + BLOCK_BYTES, (byte) 0);
                return length;
            }
        }
    }

    /** Where a fetched slot's header and payload are gathered to be decoded. */
    private static final ThreadLocal<byte[]> FETCHED = ThreadLocal.withInitial(() -> new byte[SLOT_BYTES]);

    /**
     * Decodes the slot at stored offset {@code slotStart} of a fetched extent into
     * {@code target[targetOffset, targetOffset + BLOCK_BYTES)} (zeros there). Only its header and
     * payload leave the received buffers: the rest of the slot is a hole, and copying its zeros
     * cost a read as much as decoding did.
     */
    private static int decode(long index, Extent slots, long slotStart, byte[] target, int targetOffset) {
        byte[] fetched = FETCHED.get();
        slots.deliver(slotStart, HEADER_BYTES, new PlinthFile.CopyInto(ByteBuffer.wrap(fetched, 0, HEADER_BYTES)));
        int payload = ByteBuffer.wrap(fetched).getInt(8);
        if (payload > 0 && payload <= BLOCK_BYTES) { // else decode refuses the header, or there is nothing more
            slots.deliver(slotStart + HEADER_BYTES, payload, new PlinthFile.CopyInto(ByteBuffer.wrap(fetched, HEADER_BYTES, payload)));
        }
        return decode(index, fetched, target, targetOffset);
    }

    @Override
    public synchronized CompletableFuture<Extent> read(long offset, int length) {
        Extent result = new Extent(offset, length, List.of(new Piece(offset, 0, 0, 0, length)));
        if (length == 0) {
            return CompletableFuture.completedFuture(result);
        }
        long first = (offset - base) / BLOCK_BYTES;
        long last = (offset + length - 1 - base) / BLOCK_BYTES;
        byte[] out = new byte[length];
        Map<Long, byte[]> newest = new HashMap<>(); // blocks held or in flight: their content here is newer than the targets'
        synchronized (blocks) {
            for (long index = first; index <= last; index++) {
                Block block = blocks.get(index);
                if (block != null) {
                    newest.put(index, block.bytes.clone());
                }
            }
        }
        long storedStart = slotOffset(first);
        int storedLength = Math.toIntExact((last - first + 1) * SLOT_BYTES);
        return stored.read(storedStart, storedLength).thenApplyAsync(slots -> {
            try {
                byte[] block = null;
                for (long index = first; index <= last; index++) {
                    byte[] content = newest.get(index);
                    long blockStart = base + index * BLOCK_BYTES;
                    long slotStart = slotOffset(index);
                    if (content == null && blockStart >= offset && blockStart + BLOCK_BYTES <= offset + length) {
                        decode(index, slots, slotStart, out, (int) (blockStart - offset)); // a whole block of the read: no copy
                        continue;
                    }
                    if (content == null) {
                        block = block == null ? new byte[BLOCK_BYTES] : block;
                        java.util.Arrays.fill(block, (byte) 0);
                        decode(index, slots, slotStart, block, 0);
                        content = block;
                    }
                    long from = Math.max(offset, blockStart);
                    long to = Math.min(offset + length, blockStart + BLOCK_BYTES);
                    System.arraycopy(content, (int) (from - blockStart), out, (int) (from - offset), (int) (to - from));
                }
                result.set(0, Unpooled.wrappedBuffer(out));
                return result;
            } finally {
                slots.release();
            }
        }, decoder);
    }

    /**
     * Cuts the block the new end falls in (its bytes past the end become zeros, so that a file
     * extended later reads zeros there), then the slots past it.
     */
    @Override
    public synchronized void truncate(long oldSize, long newSize) {
        flush();
        List<Block> all;
        synchronized (blocks) {
            all = List.copyOf(blocks.values());
        }
        for (Block block : all) {
            awaitSend(block);
        }
        synchronized (blocks) {
            blocks.clear();
        }
        if (newSize < oldSize && newSize > base) {
            long index = (newSize - base) / BLOCK_BYTES;
            int keep = (int) (newSize - base - index * BLOCK_BYTES);
            if (keep > 0) {
                Block block = block(index, false);
                if (block.length > keep) {
                    java.util.Arrays.fill(block.bytes, keep, BLOCK_BYTES, (byte) 0);
                    block.length = keep;
                    send(block);
                    stored.flush(); // an erasure-coded layout holds a row it is filling until told
                    PlinthClient.await(block.inflight);
                }
                synchronized (blocks) {
                    blocks.remove(index);
                }
            }
        }
        stored.truncate(layout.storedSize(oldSize), layout.storedSize(newSize));
    }

    @Override
    public void sync() {
        stored.sync();
    }

    @Override
    public SyncInFlight startSync() {
        return stored.startSync();
    }
}
