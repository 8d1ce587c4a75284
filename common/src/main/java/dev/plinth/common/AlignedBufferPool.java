package dev.plinth.common;

import java.nio.ByteBuffer;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * At most {@code buffersMax} direct buffers of {@code bufferBytes}, aligned to {@code alignment},
 * made on first use and kept for reuse: what O_DIRECT writes need (a target's own staging
 * buffers, and a client's write-behind copies that a target in the same process writes as they
 * are). {@link #take} never waits: where every buffer is out it answers null and the caller goes
 * the unaligned way. Thread-safe.
 */
public final class AlignedBufferPool {
    private final int bufferBytes;
    private final int alignment;
    private final int buffersMax;
    private final AtomicInteger buffersMade = new AtomicInteger();
    private final ArrayBlockingQueue<ByteBuffer> free;

    public AlignedBufferPool(int bufferBytes, int alignment, int buffersMax) {
        this.bufferBytes = bufferBytes;
        this.alignment = alignment;
        this.buffersMax = buffersMax;
        this.free = new ArrayBlockingQueue<>(Math.max(1, buffersMax));
    }

    /** A free buffer (position 0, limit and capacity {@code bufferBytes}), or null where all are out. */
    public ByteBuffer take() {
        ByteBuffer buffer = free.poll();
        if (buffer != null) {
            return buffer.clear();
        }
        for (int made = buffersMade.get(); made < buffersMax; made = buffersMade.get()) {
            if (buffersMade.compareAndSet(made, made + 1)) {
                return allocate(bufferBytes, alignment);
            }
        }
        return null;
    }

    /** Hands back a buffer {@link #take} gave. */
    public void giveBack(ByteBuffer buffer) {
        free.offer(buffer);
    }

    public int bufferBytes() {
        return bufferBytes;
    }

    public int buffersMax() {
        return buffersMax;
    }

    /** Buffers made so far, lent out or free: at most {@code buffersMax}. */
    public int buffersMade() {
        return buffersMade.get();
    }

    /** A new direct buffer of {@code bytes} whose address is a multiple of {@code alignment}. */
    public static ByteBuffer allocate(int bytes, int alignment) {
        return ByteBuffer.allocateDirect(bytes + alignment).alignedSlice(alignment).slice(0, bytes);
    }
}
