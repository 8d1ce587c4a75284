package dev.plinth.client;

import dev.plinth.common.AlignedBufferPool;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.buffer.UnpooledDirectByteBuf;
import java.nio.ByteBuffer;

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

    private final AlignedBufferPool buffers;

    AlignedWriteBuffers(int buffersMax) {
        this.buffers = new AlignedBufferPool(BUFFER_BYTES, ALIGNMENT, buffersMax);
    }

    /** An empty direct buffer with room for {@code length} bytes; aligned where it can be. */
    ByteBuf allocate(int length) {
        ByteBuffer buffer = length >= PIECE_BYTES_MIN && length <= BUFFER_BYTES ? buffers.take() : null;
        if (buffer == null) {
            return PooledByteBufAllocator.DEFAULT.directBuffer(length);
        }
        return new Lent(buffer, length).clear();
    }

    /** Buffers lent out or free: at most {@code buffersMax}. */
    int buffersMade() {
        return buffers.buffersMade();
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
            buffers.giveBack(whole);
        }
    }
}
