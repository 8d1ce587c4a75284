package dev.plinth.wire;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class NettyDefaultsTest {
    @Test
    void keepsAtLeastSixteenReleasedChunksUnlessTheUserSaidOtherwise() {
        String before = System.getProperty(NettyDefaults.CHUNK_REUSE_QUEUE);
        try {
            System.clearProperty(NettyDefaults.CHUNK_REUSE_QUEUE);
            NettyDefaults.apply();
            assertThat(Integer.parseInt(System.getProperty(NettyDefaults.CHUNK_REUSE_QUEUE)))
                    .isGreaterThanOrEqualTo(NettyDefaults.CHUNK_REUSE_QUEUE_MIN)
                    .isGreaterThanOrEqualTo(2 * Runtime.getRuntime().availableProcessors());

            System.setProperty(NettyDefaults.CHUNK_REUSE_QUEUE, "3");
            NettyDefaults.apply();
            assertThat(System.getProperty(NettyDefaults.CHUNK_REUSE_QUEUE)).isEqualTo("3");
        } finally {
            if (before == null) {
                System.clearProperty(NettyDefaults.CHUNK_REUSE_QUEUE);
            } else {
                System.setProperty(NettyDefaults.CHUNK_REUSE_QUEUE, before);
            }
        }
    }
}
