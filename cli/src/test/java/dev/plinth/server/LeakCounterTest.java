package dev.plinth.server;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import org.junit.jupiter.api.Test;

/** The leak check that MiniCluster.close() relies on does catch an unreleased buffer. */
class LeakCounterTest {
    @Test
    void detectsAnUnreleasedBuffer() {
        int before = LeakCounter.collect();
        leakOne();
        assertThat(LeakCounter.collect()).isGreaterThan(before);
    }

    private static void leakOne() {
        ByteBuf leaked = PooledByteBufAllocator.DEFAULT.directBuffer(128);
        leaked.writeInt(1);
    }
}
