package dev.plinth.storage;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import org.junit.jupiter.api.Test;

class ReadBuffersTest {
    @Test
    void poolsAreAQuarterOfDirectMemoryWithinBounds() {
        ReadBuffers server = new ReadBuffers(2L << 30);
        assertThat(server.largeBuffersMax()).as("a server with 2 GiB of direct memory").isEqualTo(ReadBuffers.LARGE_BUFFERS_MAX);
        assertThat(server.smallBuffersMax()).isEqualTo(ReadBuffers.SMALL_BUFFERS_MAX);
        ReadBuffers test = new ReadBuffers(256L << 20);
        assertThat((long) test.largeBuffersMax() * ReadBuffers.LARGE_BUFFER_BYTES + (long) test.smallBuffersMax() * ReadBuffers.SMALL_BUFFER_BYTES)
                .as("a test process with -Xmx256m: a quarter of it").isBetween(56L << 20, 64L << 20);
        ReadBuffers tiny = new ReadBuffers(16L << 20);
        assertThat(tiny.largeBuffersMax()).as("tiny: still enough for a few reads in flight").isEqualTo(4);
        assertThat(new ReadBuffers(0).largeBuffersMax()).as("limit unknown").isEqualTo(ReadBuffers.LARGE_BUFFERS_MAX);
    }

    @Test
    void buffersAreAlignedComeBackAndFitTheirRead() {
        ReadBuffers buffers = new ReadBuffers(16L << 20); // four of each size
        ByteBuf small = buffers.allocate(256 << 10, ReadBuffers.ALIGNMENT);
        ByteBuf large = buffers.allocate(4 << 20, ReadBuffers.ALIGNMENT);
        assertThat(small.capacity()).as("a short read takes a small buffer").isEqualTo(ReadBuffers.SMALL_BUFFER_BYTES);
        assertThat(large.capacity()).as("a read-ahead unit a large one").isEqualTo(ReadBuffers.LARGE_BUFFER_BYTES);
        assertThat(small.memoryAddress() % ReadBuffers.ALIGNMENT).isZero();
        assertThat(large.memoryAddress() % ReadBuffers.ALIGNMENT).isZero();
        small.release();
        large.release();

        dev.plinth.common.AlignedBufferPool pool = new dev.plinth.common.AlignedBufferPool(ReadBuffers.LARGE_BUFFER_BYTES, ReadBuffers.ALIGNMENT, 1);
        ByteBuf first = ReadBuffers.allocate(pool, ReadBuffers.LARGE_BUFFER_BYTES, ReadBuffers.ALIGNMENT);
        ByteBuf second = ReadBuffers.allocate(pool, ReadBuffers.LARGE_BUFFER_BYTES, ReadBuffers.ALIGNMENT); // the pool is out: Netty's
        assertThat(first.memoryAddress() % ReadBuffers.ALIGNMENT).isZero();
        assertThat((second.memoryAddress() + second.writerIndex()) % ReadBuffers.ALIGNMENT).isZero();
        assertThat(pool.buffersMade()).isEqualTo(1);
        first.release();
        second.release();
        ByteBuf again = ReadBuffers.allocate(pool, ReadBuffers.LARGE_BUFFER_BYTES, ReadBuffers.ALIGNMENT);
        assertThat(pool.buffersMade()).as("the released buffer is used again").isEqualTo(1);
        again.release();
    }
}
