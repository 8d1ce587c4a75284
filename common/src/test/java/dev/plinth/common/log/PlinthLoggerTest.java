package dev.plinth.common.log;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;
import org.slf4j.event.Level;

class PlinthLoggerTest {
    @Test
    void aLineNamesTheNodeTheRequestAndEveryCause() {
        Exception failure = new UncheckedIOException("cannot write chunk", new IOException("No space left on device\nsecond line"));
        String line = PlinthLogger.format(Instant.parse("2026-12-04T01:40:00.123Z"), Level.WARN, "storage-3", "StorageNode",
                "heartbeat failed", "meta-0@/10.0.0.2:51234#812", failure);

        assertThat(line).doesNotContain("\n");
        assertThat(line).startsWith("2026-12-04T01:40:00.123Z WARN  [storage-3] StorageNode: heartbeat failed {request=meta-0@/10.0.0.2:51234#812}"
                + " | cause: java.io.UncheckedIOException: cannot write chunk <- java.io.IOException: No space left on device second line at ");
        assertThat(line).contains("PlinthLoggerTest");
    }

    @Test
    void requestIdsFollowWorkToOtherThreads() throws Exception {
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        PlinthLogger logger = new PlinthLogger("dev.plinth.Test", Level.INFO, new PrintStream(captured, true, StandardCharsets.UTF_8),
                new RepeatLimiter());
        LogContext.node("test-node");
        var work = LogContext.withRequest("cli@local#7", () -> LogContext.carry(() -> {
            logger.info("applied {} bytes", 4096);
            return null;
        }));
        Thread.ofPlatform().start(work::get).join();
        logger.debug("not shown at INFO");

        assertThat(captured.toString(StandardCharsets.UTF_8).trim())
                .endsWith("INFO  [test-node] Test: applied 4096 bytes {request=cli@local#7}")
                .doesNotContain("not shown");
    }

    @Test
    void aRepeatedMessageIsCountedNotRewritten() {
        RepeatLimiter repeats = new RepeatLimiter();
        long start = 1_000_000;
        for (int i = 0; i < RepeatLimiter.LINES_PER_WINDOW; i++) {
            assertThat(repeats.admit("loop", start + i)).isZero();
        }
        for (int i = 0; i < 50_000; i++) {
            assertThat(repeats.admit("loop", start + 10 + i % 900)).isEqualTo(-1);
        }
        assertThat(repeats.admit("other", start + 20)).as("another message is not held back").isZero();
        assertThat(repeats.admit("loop", start + RepeatLimiter.WINDOW_MILLIS)).as("the next window's first line says how many").isEqualTo(50_000);
        assertThat(repeats.admit("loop", start + RepeatLimiter.WINDOW_MILLIS + 1)).isZero();

        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        PlinthLogger logger = new PlinthLogger("dev.plinth.Loop", Level.INFO, new PrintStream(captured, true, StandardCharsets.UTF_8),
                new RepeatLimiter());
        for (int i = 0; i < 10_000; i++) {
            logger.warn("caught a Throwable in round {}", i);
        }
        assertThat(captured.toString(StandardCharsets.UTF_8).lines().count()).isBetween(1L, 20L);
    }

    @Test
    void ratisAndNettyOnlySpeakUpForWarnings() {
        assertThat(PlinthLoggerProvider.levelOf("org.apache.ratis.server.RaftServer")).isEqualTo(Level.WARN);
        assertThat(PlinthLoggerProvider.levelOf("io.netty.channel.Channel")).isEqualTo(Level.WARN);
        assertThat(PlinthLoggerProvider.levelOf("dev.plinth.storage.StorageNode")).isEqualTo(Level.INFO);
        assertThat(LoggerFactory.getLogger("dev.plinth.x")).isInstanceOf(PlinthLogger.class); // the service file names our provider
    }
}
