package dev.plinth.client;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import java.lang.foreign.MemorySegment;
import org.junit.jupiter.api.Test;

class AlignedWriteBuffersTest {
    private static long address(ByteBuf buffer) {
        return MemorySegment.ofBuffer(buffer.nioBuffer(0, buffer.capacity())).address();
    }

    @Test
    void largePiecesGetAlignedReusedBuffersAndTheRestComeFromNettysPool() {
        AlignedWriteBuffers buffers = new AlignedWriteBuffers(2);
        ByteBuf first = buffers.allocate(1 << 20);
        ByteBuf second = buffers.allocate(300_000);
        assertThat(first).isInstanceOf(AlignedWriteBuffers.Lent.class);
        assertThat(second).isInstanceOf(AlignedWriteBuffers.Lent.class);
        assertThat(address(first) % 4096).isZero();
        assertThat(address(second) % 4096).isZero();
        assertThat(first.writableBytes()).isEqualTo(1 << 20);
        assertThat(second.capacity()).isEqualTo(300_000);

        // every buffer is out: the next large piece, and any small one, come from Netty's pool
        ByteBuf third = buffers.allocate(1 << 20);
        ByteBuf small = buffers.allocate(4096);
        assertThat(third).isNotInstanceOf(AlignedWriteBuffers.Lent.class);
        assertThat(small).isNotInstanceOf(AlignedWriteBuffers.Lent.class);
        third.release();
        small.release();

        // a slice keeps the buffer out until the last reference goes; then it is lent again, not made anew
        long firstAddress = address(first);
        first.writeBytes(new byte[1 << 20]);
        ByteBuf slice = first.retainedSlice(0, 4096);
        first.release();
        assertThat(buffers.allocate(1 << 20)).isNotInstanceOf(AlignedWriteBuffers.Lent.class).matches(ByteBuf::release);
        slice.release();
        ByteBuf again = buffers.allocate(1 << 20);
        assertThat(again).isInstanceOf(AlignedWriteBuffers.Lent.class);
        assertThat(address(again)).isEqualTo(firstAddress);
        assertThat(again.writerIndex()).isZero();
        assertThat(buffers.buffersMade()).isEqualTo(2);
        again.release();
        second.release();
    }
}
