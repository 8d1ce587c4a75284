package dev.plinth.storage;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class ReadBuffersTest {
    @Test
    void poolIsAQuarterOfDirectMemoryWithinBounds() {
        assertThat(ReadBuffers.buffersMax(2L << 30)).as("a server with 2 GiB of direct memory").isEqualTo(ReadBuffers.BUFFERS_MAX);
        assertThat(ReadBuffers.buffersMax(256L << 20)).as("a test process with -Xmx256m").isEqualTo(15);
        assertThat(ReadBuffers.buffersMax(16L << 20)).as("tiny: still enough for a few reads in flight").isEqualTo(4);
        assertThat(ReadBuffers.buffersMax(0)).as("limit unknown").isEqualTo(ReadBuffers.BUFFERS_MAX);
    }

    @Test
    void buffersAreAlignedAndComeBack() {
        dev.plinth.common.AlignedBufferPool pool = new dev.plinth.common.AlignedBufferPool(ReadBuffers.BUFFER_BYTES, ReadBuffers.ALIGNMENT, 1);
        io.netty.buffer.ByteBuf first = ReadBuffers.allocate(pool, ReadBuffers.BUFFER_BYTES, ReadBuffers.ALIGNMENT);
        io.netty.buffer.ByteBuf second = ReadBuffers.allocate(pool, ReadBuffers.BUFFER_BYTES, ReadBuffers.ALIGNMENT); // the pool is out: Netty's
        assertThat(first.memoryAddress() % ReadBuffers.ALIGNMENT).isZero();
        assertThat((second.memoryAddress() + second.writerIndex()) % ReadBuffers.ALIGNMENT).isZero();
        assertThat(pool.buffersMade()).isEqualTo(1);
        first.release();
        second.release();
        io.netty.buffer.ByteBuf again = ReadBuffers.allocate(pool, ReadBuffers.BUFFER_BYTES, ReadBuffers.ALIGNMENT);
        assertThat(pool.buffersMade()).as("the released buffer is used again").isEqualTo(1);
        again.release();
    }
}
