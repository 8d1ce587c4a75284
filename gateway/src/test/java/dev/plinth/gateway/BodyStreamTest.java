package dev.plinth.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.embedded.EmbeddedChannel;
import java.io.IOException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The request body's idle limit, kept by a timer on the shared wheel rather than a timed wait. */
class BodyStreamTest {
    private static ChannelHandlerContext context() {
        ChannelInboundHandlerAdapter handler = new ChannelInboundHandlerAdapter();
        EmbeddedChannel channel = new EmbeddedChannel(handler);
        return channel.pipeline().context(handler);
    }

    /** Runs {@code reader} on another thread, as the request's thread reads while the event loop offers. */
    private static <T> CompletableFuture<T> inBackground(java.util.concurrent.Callable<T> reader) {
        return CompletableFuture.supplyAsync(() -> {
            try {
                return reader.call();
            } catch (Exception e) {
                throw new java.util.concurrent.CompletionException(e);
            }
        });
    }

    @Test
    void aReaderThatWaitsPastTheIdleLimitFails() {
        BodyStream body = new BodyStream(context(), false, 300);
        long start = System.nanoTime();
        assertThatThrownBy(() -> body.read(new byte[10], 0, 10)).isInstanceOf(IOException.class)
                .hasMessageContaining("no request body bytes for 300 ms");
        long waitedMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        assertThat(waitedMillis).isBetween(300L, 10_000L);
        body.close();
    }

    @Test
    void bytesThatKeepComingKeepTheBodyAlive() throws Exception {
        BodyStream body = new BodyStream(context(), false, 300);
        CompletableFuture<Integer> reader = inBackground(() -> {
            byte[] buffer = new byte[1];
            int total = 0;
            while (body.read(buffer, 0, 1) == 1) {
                total++;
            }
            return total;
        });
        // ten pieces, 100 ms apart: a second in all, more than three idle limits, never one idle limit between two
        for (int i = 0; i < 10; i++) {
            Thread.sleep(100);
            body.offer(Unpooled.wrappedBuffer(new byte[] {(byte) i}));
        }
        body.end();
        assertThat(reader.get(10, TimeUnit.SECONDS)).isEqualTo(10);
        body.close();
    }

    /**
     * The limit counts the reader's waiting, not the time since the last byte: a handler busy
     * elsewhere stops asking for bytes (the stream's back-pressure), and that is not the client's
     * idleness.
     */
    @Test
    void aReaderBusyElsewhereIsNotIdle() throws Exception {
        BodyStream body = new BodyStream(context(), false, 1000);
        CompletableFuture<String> reader = inBackground(() -> {
            byte[] buffer = new byte[1];
            int first = body.read(buffer, 0, 1); // waits ~100 ms
            Thread.sleep(1800); // busy elsewhere, not reading
            int second = body.read(buffer, 0, 1); // waits ~500 ms of its 1,000
            return first + " " + second + " " + buffer[0];
        });
        Thread.sleep(100);
        body.offer(Unpooled.wrappedBuffer(new byte[] {1}));
        Thread.sleep(2300); // 2.3 s without a byte, but the reader waited only half a limit of it
        body.offer(Unpooled.wrappedBuffer(new byte[] {2}));
        assertThat(reader.get(10, TimeUnit.SECONDS)).isEqualTo("1 1 2");
        body.close();
    }
}
