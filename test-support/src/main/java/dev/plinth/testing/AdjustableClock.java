package dev.plinth.testing;

import dev.plinth.common.Clock;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The machine's clock plus an offset a test moves forward ({@link #advance}): everything that
 * compares against it sees time jump, so a lease expires, a presigned URL lapses or a cache goes
 * stale at once, while everything else runs as usual. Thread-safe.
 */
public final class AdjustableClock implements Clock {
    private final AtomicLong offsetNanos = new AtomicLong();

    @Override
    public long nanoTime() {
        return System.nanoTime() + offsetNanos.get();
    }

    @Override
    public long currentTimeMillis() {
        return System.currentTimeMillis() + offsetNanos.get() / 1_000_000;
    }

    /** Moves the clock forward by {@code duration}. */
    public void advance(Duration duration) {
        if (duration.isNegative()) {
            throw new IllegalArgumentException("clocks only go forward");
        }
        offsetNanos.addAndGet(duration.toNanos());
    }
}
