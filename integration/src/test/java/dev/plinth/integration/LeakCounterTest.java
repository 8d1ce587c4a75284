package dev.plinth.integration;

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
        // wait until this very leak is reported: one still pending would be blamed on a later test's cluster
        for (int round = 0; round < 50 && !LeakCounter.REPORTS.toString().contains("LeakCounterTest.leakOne"); round++) {
            LeakCounter.collect();
        }
        assertThat(LeakCounter.REPORTS.toString()).contains("LeakCounterTest.leakOne");
        assertThat(LeakCounter.collect()).isGreaterThan(before);
    }

    private static void leakOne() {
        ByteBuf leaked = PooledByteBufAllocator.DEFAULT.directBuffer(128);
        leaked.writeInt(1);
    }
}
