package dev.plinth.storage;

import dev.plinth.common.AlignedBufferPool;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.buffer.UnpooledDirectByteBuf;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;

/**
 * Buffers that chunk reads land in before they are sent: aligned buffers in two sizes, a client's
 * largest read request (4 MiB, a read-ahead unit, design note 68) and 1 MiB for the shorter reads,
 * each with room for the alignment around it; made as needed and used again once released, shared
 * by the targets of one process; at most {@link #LARGE_BUFFERS_MAX} and {@link #SMALL_BUFFERS_MAX},
 * and together at most a quarter of the process's direct memory. Thread-safe.
 *
 * <p>Why not Netty's pool: a 1 MiB buffer is a quarter of one of its chunks; the releases emptied
 * chunks, which were freed and made again, and each new one is zeroed by
 * {@code ByteBuffer.allocateDirect}: a third of the storage threads' CPU in a cold read, more than
 * the reads themselves. Longer reads, or reads while every buffer of their size is out, still take
 * Netty's.
 *
 * <p>Why so many: a client in the same process (the S3 gateway, the mount) keeps the buffers it
 * received as its read-ahead, up to {@code client.readahead-total-bytes} (256 MiB) for all its
 * streams. With 64 MiB of buffers, four 64 MiB GETs at once (16 read-ahead units of 1 MiB each,
 * plus what their sockets hold) ran the pool out on about one read in eleven, and those reads
 * churned Netty's chunks again. Why two sizes: every read holds a whole buffer, so shorter reads
 * in 4 MiB buffers would bound the reads in flight at a quarter of what the same memory allows.
 */
final class ReadBuffers {
    static final int LARGE_BUFFER_BYTES = (4 << 20) + (64 << 10);
    static final int SMALL_BUFFER_BYTES = (1 << 20) + (64 << 10);
    /** The buffers' alignment: a multiple of every usual file-system block size, as O_DIRECT needs. */
    static final int ALIGNMENT = 4096;
    static final int LARGE_BUFFERS_MAX = 64;
    static final int SMALL_BUFFERS_MAX = 64;
    private static final int BUFFERS_MIN = 4;

    private final AlignedBufferPool large;
    private final AlignedBufferPool small;

    /** Buffers for a process whose direct memory is limited to {@code directMemoryBytes} (<= 0: unknown). */
    ReadBuffers(long directMemoryBytes) {
        // the quarter of direct memory split as the maximums are: four fifths of the bytes for the large
        this.large = new AlignedBufferPool(LARGE_BUFFER_BYTES, ALIGNMENT, buffersMax(LARGE_BUFFER_BYTES, LARGE_BUFFERS_MAX, directMemoryBytes));
        this.small = new AlignedBufferPool(SMALL_BUFFER_BYTES, ALIGNMENT, buffersMax(SMALL_BUFFER_BYTES, SMALL_BUFFERS_MAX, directMemoryBytes));
    }

    /** For this process (Netty's view of its direct memory limit). */
    static ReadBuffers forProcess() {
        return new ReadBuffers(io.netty.util.internal.PlatformDependent.maxDirectMemory());
    }

    /** How many buffers of {@code bufferBytes} (at most {@code buffersMax}) their share of the process's direct memory allows. */
    static int buffersMax(int bufferBytes, int buffersMax, long directMemoryBytes) {
        long allBytesMax = (long) LARGE_BUFFERS_MAX * LARGE_BUFFER_BYTES + (long) SMALL_BUFFERS_MAX * SMALL_BUFFER_BYTES;
        long share = dev.plinth.common.DirectMemory.shareOf(allBytesMax, directMemoryBytes) * bufferBytes * buffersMax / allBytesMax;
        return (int) Math.max(BUFFERS_MIN, Math.min(buffersMax, share / bufferBytes));
    }

    int largeBuffersMax() {
        return large.buffersMax();
    }

    int smallBuffersMax() {
        return small.buffersMax();
    }

    /**
     * An empty buffer (reader and writer index equal) that can take {@code bytes} bytes from an
     * address aligned to {@code alignment} (a power of two): one of the pools' where one fits and
     * is free, else one from Netty's pool. The caller releases it.
     */
    ByteBuf allocate(int bytes, int alignment) {
        return allocate(bytes <= SMALL_BUFFER_BYTES ? small : large, bytes, alignment);
    }

    /** As {@link #allocate(int, int)}, from {@code pool}. */
    static ByteBuf allocate(AlignedBufferPool pool, int bytes, int alignment) {
        ByteBuffer pooled = bytes <= pool.bufferBytes() && ALIGNMENT % alignment == 0 ? pool.take() : null;
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
