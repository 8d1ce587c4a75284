package dev.plinth.cli;

import dev.plinth.common.Sizes;
import java.io.PrintStream;
import java.util.Locale;
import java.util.function.LongSupplier;

/**
 * Progress of a long transfer on stderr: on a terminal a bar with rate and ETA redrawn in place
 * (at most 10 times a second), elsewhere a plain line every {@link #PLAIN_INTERVAL_NANOS} (logs
 * and CI keep them readable). Silent for work that ends within the first second. Not thread-safe:
 * one thread reports.
 */
final class Progress implements AutoCloseable {
    static final long PLAIN_INTERVAL_NANOS = 5_000_000_000L;
    private static final long REDRAW_NANOS = 100_000_000L;
    private static final long QUIET_NANOS = 1_000_000_000L;
    private static final int BAR_WIDTH = 30;

    private final String label;
    private final long totalBytes;
    private final boolean terminal;
    private final PrintStream out;
    private final LongSupplier clock;
    private final long startNanos;
    private long doneBytes;
    private long lastShownNanos;
    private boolean shown;

    /** {@code totalBytes} below 0: unknown (no percentage or ETA). */
    Progress(String label, long totalBytes) {
        this(label, totalBytes, System.console() != null && System.console().isTerminal(), System.err, System::nanoTime);
    }

    Progress(String label, long totalBytes, boolean terminal, PrintStream out, LongSupplier clock) {
        this.label = label;
        this.totalBytes = totalBytes;
        this.terminal = terminal;
        this.out = out;
        this.clock = clock;
        this.startNanos = clock.getAsLong();
        this.lastShownNanos = startNanos;
    }

    void advance(long bytes) {
        doneBytes += bytes;
        long now = clock.getAsLong();
        if (now - startNanos < QUIET_NANOS) {
            return;
        }
        if (now - lastShownNanos >= (terminal ? REDRAW_NANOS : PLAIN_INTERVAL_NANOS) || !shown) {
            show(now, false);
        }
    }

    private void show(long now, boolean last) {
        double seconds = Math.max(1e-9, (now - startNanos) / 1e9);
        double rate = doneBytes / seconds;
        String amount = Sizes.format(doneBytes) + (totalBytes >= 0 ? " of " + Sizes.format(totalBytes) : "");
        String speed = Sizes.format((long) rate) + "/s";
        String line;
        if (terminal && totalBytes > 0) {
            int filled = (int) Math.min(BAR_WIDTH, BAR_WIDTH * doneBytes / totalBytes);
            String eta = rate > 0 && !last ? " ETA " + clockTime((long) ((totalBytes - doneBytes) / rate)) : " in " + clockTime((long) seconds);
            line = String.format(Locale.ROOT, "\r%s [%s%s] %3d%% %s %s%s", label, "#".repeat(filled), "-".repeat(BAR_WIDTH - filled),
                    100 * doneBytes / totalBytes, amount, speed, eta);
        } else if (terminal) {
            line = String.format(Locale.ROOT, "\r%s %s %s", label, amount, speed);
        } else {
            String percent = totalBytes > 0 ? String.format(Locale.ROOT, " (%d%%)", 100 * doneBytes / totalBytes) : "";
            String eta = totalBytes > 0 && rate > 0 && !last ? ", ETA " + clockTime((long) ((totalBytes - doneBytes) / rate)) : "";
            line = String.format(Locale.ROOT, "%s: %s%s, %s%s%s", label, amount, percent, speed, eta, last ? ", done" : "");
        }
        out.print(terminal ? line : line + "\n");
        out.flush();
        shown = true;
        lastShownNanos = now;
    }

    private static String clockTime(long seconds) {
        return seconds >= 3600 ? String.format(Locale.ROOT, "%d:%02d:%02d", seconds / 3600, seconds / 60 % 60, seconds % 60)
                : String.format(Locale.ROOT, "%d:%02d", seconds / 60, seconds % 60);
    }

    /** Shows the final state if anything was shown (a bar ends its line). */
    @Override
    public void close() {
        if (shown) {
            show(clock.getAsLong(), true);
            if (terminal) {
                out.println();
            }
        }
    }
}
