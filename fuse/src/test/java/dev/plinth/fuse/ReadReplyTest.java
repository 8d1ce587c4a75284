package dev.plinth.fuse;

import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.CompositeByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.Unpooled;
import java.io.ByteArrayOutputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class ReadReplyTest {
    /** Direct buffers, a composite of direct pieces and heap zeros, in more or fewer pieces than there are entries. */
    @ParameterizedTest
    @ValueSource(ints = {1, 2, 3, 5, 8, 256})
    void theEntriesHoldTheBuffersBytesInOrder(int iovMax) {
        Random random = new Random(iovMax);
        List<ByteBuf> buffers = new ArrayList<>();
        ByteArrayOutputStream expected = new ByteArrayOutputStream();
        for (int i = 0; i < 3; i++) {
            byte[] bytes = new byte[1 + random.nextInt(5000)];
            random.nextBytes(bytes);
            buffers.add(PooledByteBufAllocator.DEFAULT.directBuffer(bytes.length).writeBytes(bytes));
            expected.writeBytes(bytes);
            byte[] zeros = new byte[1 + random.nextInt(3000)];
            buffers.add(Unpooled.wrappedBuffer(zeros).asReadOnly());
            expected.writeBytes(zeros);
        }
        CompositeByteBuf composite = PooledByteBufAllocator.DEFAULT.compositeDirectBuffer(8);
        for (int i = 0; i < 3; i++) {
            byte[] bytes = new byte[100 + i];
            random.nextBytes(bytes);
            composite.addComponent(true, PooledByteBufAllocator.DEFAULT.directBuffer(bytes.length).writeBytes(bytes));
            expected.writeBytes(bytes);
        }
        buffers.add(composite);
        buffers.add(Unpooled.EMPTY_BUFFER);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment iov = arena.allocate(ReadReply.IOVEC_BYTES * iovMax, 8);
            MemorySegment scratch = arena.allocate(expected.size());
            int entries = ReadReply.gather(buffers, iov, iovMax, scratch);
            assertThat(entries).isBetween(1, iovMax);
            ByteArrayOutputStream actual = new ByteArrayOutputStream();
            for (int i = 0; i < entries; i++) {
                long address = iov.getAtIndex(JAVA_LONG, 2L * i);
                long length = iov.getAtIndex(JAVA_LONG, 2L * i + 1);
                actual.writeBytes(MemorySegment.ofAddress(address).reinterpret(length).toArray(ValueLayout.JAVA_BYTE));
            }
            assertThat(actual.toByteArray()).isEqualTo(expected.toByteArray());
        } finally {
            buffers.forEach(ByteBuf::release);
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 4})
    void nothingToSendNeedsNoEntries(int iovMax) {
        try (Arena arena = Arena.ofConfined()) {
            assertThat(ReadReply.gather(List.of(), arena.allocate(ReadReply.IOVEC_BYTES * iovMax, 8), iovMax, arena.allocate(1))).isZero();
        }
    }
}
