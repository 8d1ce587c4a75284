package dev.plinth.storage;

import dev.plinth.common.AlignedBufferPool;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.buffer.UnpooledDirectByteBuf;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;

/**
 * Buffers that chunk reads land in before they are sent: aligned buffers of a client's largest
 * read request (4 MiB, a read-ahead unit, design note 68) and the alignment around it, made as
 * needed and used again once released, shared by the targets of one process; at most
 * {@link #BUFFERS_MAX}, and at most a quarter of the process's direct memory.
 *
 * <p>Why not Netty's pool: a 1 MiB buffer is a quarter of one of its chunks; the releases emptied
 * chunks, which were freed and made again, and each new one is zeroed by
 * {@code ByteBuffer.allocateDirect}: a third of the storage threads' CPU in a cold read, more than
 * the reads themselves. Longer reads, or reads while every buffer is out, still take Netty's.
 *
 * <p>Why so many: a client in the same process (the S3 gateway, the mount) keeps the buffers it
 * received as its read-ahead, up to {@code client.readahead-total-bytes} (256 MiB) for all its
 * streams. With 64 MiB of them, four 64 MiB GETs at once (16 read-ahead units of 1 MiB each, plus
 * what their sockets hold) ran the pool out on about one read in eleven, and those reads churned
 * Netty's chunks again. A shorter read takes a whole buffer too: with 64 of them that bounds the
 * reads in flight, not the bytes.
 */
final class ReadBuffers {
    static final int BUFFER_BYTES = (4 << 20) + (64 << 10);
    /** The buffers' alignment: a multiple of every usual file-system block size, as O_DIRECT needs. */
    static final int ALIGNMENT = 4096;
    static final int BUFFERS_MAX = 64;
    private static final int BUFFERS_MIN = 4;

    private ReadBuffers() {}

    static AlignedBufferPool pool() {
        return new AlignedBufferPool(BUFFER_BYTES, ALIGNMENT, buffersMax(io.netty.util.internal.PlatformDependent.maxDirectMemory()));
    }

    /** How many buffers a process whose direct memory is limited to {@code directMemoryBytes} (<= 0: unknown) may make. */
    static int buffersMax(long directMemoryBytes) {
        return (int) Math.max(BUFFERS_MIN, dev.plinth.common.DirectMemory.shareOf((long) BUFFERS_MAX * BUFFER_BYTES, directMemoryBytes) / BUFFER_BYTES);
    }

    /**
     * An empty buffer (reader and writer index equal) that can take {@code bytes} bytes from an
     * address aligned to {@code alignment} (a power of two): one of {@code pool}'s where one fits and
     * is free ({@code pool} may be null), else one from Netty's pool. The caller releases it.
     */
    static ByteBuf allocate(AlignedBufferPool pool, int bytes, int alignment) {
        ByteBuffer pooled = pool != null && bytes <= BUFFER_BYTES && ALIGNMENT % alignment == 0 ? pool.take() : null;
        if (pooled != null) {
            return new PoolBuffer(pool, pooled).setIndex(0, 0);
        }
        ByteBuf whole = PooledByteBufAllocator.DEFAULT.directBuffer(bytes + alignment - 1);
        int start = (int) (-MemorySegment.ofBuffer(whole.nioBuffer(0, whole.capacity())).address() & (alignment - 1));
        return whole.setIndex(start, start);
    }

    /** A pool's buffer as a ByteBuf: released, it goes back to the pool. */
    private static final class PoolBuffer extends UnpooledDirectByteBuf {
        private final AlignedBufferPool pool;
        private final ByteBuffer memory;

        PoolBuffer(AlignedBufferPool pool, ByteBuffer memory) {
            super(UnpooledByteBufAllocator.DEFAULT, memory, memory.capacity());
            this.pool = pool;
            this.memory = memory;
        }

        @Override
        protected void deallocate() {
            super.deallocate();
            pool.giveBack(memory);
        }
    }
}
