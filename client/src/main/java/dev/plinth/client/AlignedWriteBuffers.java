package dev.plinth.client;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.buffer.UnpooledDirectByteBuf;
import java.nio.ByteBuffer;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Buffers for write-behind copies of large pieces, aligned to 4 KiB and reused.
 *
 * <p>Why: a target writes the aligned part of a write with O_DIRECT (design note 51), which needs
 * the data's address aligned; a target in the same process (the embedded server's mount and S3
 * gateway) gets the client's buffer itself, and an aligned one is written as it is instead of
 * being copied into an aligned buffer first. Netty's pooled allocator cannot align (not without
 * sun.misc.Unsafe), so these are our own: {@code buffersMax} buffers of {@link #BUFFER_BYTES},
 * made on first use and handed back when the last reference to a piece is released. Pieces
 * smaller than {@link #PIECE_BYTES_MIN} (they would hold a whole buffer for a few bytes), larger
 * than a buffer, or asked for while every buffer is out come from Netty's pool as before.
 *
 * <p>Thread-safe.
 */
final class AlignedWriteBuffers {
    static final int BUFFER_BYTES = 1 << 20;
    static final int PIECE_BYTES_MIN = 64 * 1024;
    private static final int ALIGNMENT = 4096;

    private final int buffersMax;
    private final AtomicInteger buffersMade = new AtomicInteger();
    private final ArrayBlockingQueue<ByteBuffer> free;

    AlignedWriteBuffers(int buffersMax) {
        this.buffersMax = buffersMax;
        this.free = new ArrayBlockingQueue<>(Math.max(1, buffersMax));
    }

    /** An empty direct buffer with room for {@code length} bytes; aligned where it can be. */
    ByteBuf allocate(int length) {
        ByteBuffer buffer = length >= PIECE_BYTES_MIN && length <= BUFFER_BYTES ? take() : null;
        if (buffer == null) {
            return PooledByteBufAllocator.DEFAULT.directBuffer(length);
        }
        return new Lent(buffer, length).clear();
    }

    /** Buffers lent out or free: at most {@code buffersMax}. */
    int buffersMade() {
        return buffersMade.get();
    }

    private ByteBuffer take() {
        ByteBuffer buffer = free.poll();
        if (buffer != null) {
            return buffer;
        }
        for (int made = buffersMade.get(); made < buffersMax; made = buffersMade.get()) {
            if (buffersMade.compareAndSet(made, made + 1)) {
                return ByteBuffer.allocateDirect(BUFFER_BYTES + ALIGNMENT).alignedSlice(ALIGNMENT).slice(0, BUFFER_BYTES);
            }
        }
        return null;
    }

    /** One of the pool's buffers as a ByteBuf of {@code length}; back to the pool when released. */
    final class Lent extends UnpooledDirectByteBuf {
        private final ByteBuffer whole;

        Lent(ByteBuffer whole, int length) {
            super(UnpooledByteBufAllocator.DEFAULT, whole.slice(0, length), length);
            this.whole = whole;
        }

        @Override
        protected void deallocate() {
            super.deallocate(); // forgets the buffer without freeing it (it was given, not made)
            free.offer(whole);
        }
    }
}
