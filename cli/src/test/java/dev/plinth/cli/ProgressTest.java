package dev.plinth.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** Progress output under a fake clock: a bar with rate and ETA on a terminal, periodic plain lines elsewhere. */
class ProgressTest {
    private static final long SECOND = 1_000_000_000L;

    @Test
    void plainLinesEveryFiveSecondsWithRateAndEta() {
        AtomicLong clock = new AtomicLong();
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        try (Progress progress = new Progress("put /f", 100L << 20, false, new PrintStream(captured, true, StandardCharsets.UTF_8), clock::get)) {
            for (int second = 1; second <= 10; second++) {
                clock.addAndGet(SECOND);
                progress.advance(10L << 20);
            }
        }
        String[] lines = captured.toString(StandardCharsets.UTF_8).split("\n");
        assertThat(lines).hasSize(3); // at 1 s (the first), 6 s (five later), and the last at close
        assertThat(lines[0]).isEqualTo("put /f: 10.0 MiB of 100.0 MiB (10%), 10.0 MiB/s, ETA 0:09");
        assertThat(lines[1]).startsWith("put /f: 60.0 MiB of 100.0 MiB (60%), 10.0 MiB/s, ETA 0:04");
        assertThat(lines[lines.length - 1]).isEqualTo("put /f: 100.0 MiB of 100.0 MiB (100%), 10.0 MiB/s, done");
    }

    @Test
    void aBarOnATerminalAndNothingForQuickWork() {
        AtomicLong clock = new AtomicLong();
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        try (Progress progress = new Progress("get /f", 4L << 20, true, new PrintStream(captured, true, StandardCharsets.UTF_8), clock::get)) {
            clock.addAndGet(2 * SECOND);
            progress.advance(1L << 20);
        }
        assertThat(captured.toString(StandardCharsets.UTF_8)).startsWith("\rget /f [#######-----------------------]  25% 1.0 MiB of 4.0 MiB")
                .contains("ETA 0:06").endsWith("\n");
        ByteArrayOutputStream quiet = new ByteArrayOutputStream();
        try (Progress progress = new Progress("get /g", 4L << 20, true, new PrintStream(quiet, true, StandardCharsets.UTF_8), clock::get)) {
            progress.advance(4L << 20);
        }
        assertThat(quiet.toString(StandardCharsets.UTF_8)).isEmpty();
    }
}
