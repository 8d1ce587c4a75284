package dev.plinth.common;

/**
 * Time as Plinth's roles and clients read it for deadlines and leases: behind one small
 * interface, so that a test can move it forward instead of sleeping until a lease, an expiry or
 * a refresh comes due (FoundationDB keeps time behind its simulator for the same reason).
 * Threads still wait in real time; what they compare against is this clock. Thread-safe.
 */
public interface Clock {
    /** Nanoseconds from an arbitrary origin, for intervals (as System.nanoTime). */
    long nanoTime();

    /** Milliseconds since the epoch, for times that are stored or sent (as System.currentTimeMillis). */
    long currentTimeMillis();

    default java.time.Instant instant() {
        return java.time.Instant.ofEpochMilli(currentTimeMillis());
    }

    /** Nanoseconds since the epoch, as inode times are kept (to the precision {@link #instant} has). */
    default long epochNanos() {
        java.time.Instant now = instant();
        return now.getEpochSecond() * 1_000_000_000L + now.getNano();
    }

    /** The machine's clocks. */
    Clock SYSTEM = new Clock() {
        @Override
        public long nanoTime() {
            return System.nanoTime();
        }

        @Override
        public long currentTimeMillis() {
            return System.currentTimeMillis();
        }
    };
}
