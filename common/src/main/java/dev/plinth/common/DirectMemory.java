package dev.plinth.common;

/**
 * The one rule for what a pool of direct buffers may hold: what it was given, but at most a quarter
 * of the process's direct memory, so that one pool running full (a client's write-behind or
 * read-ahead, a target's read buffers) leaves the rest of the process room to receive and send.
 */
public final class DirectMemory {
    private DirectMemory() {}

    /** {@code wantedBytes}, but at most a quarter of {@code limitBytes} (the process's limit, or a value <= 0 when unknown). */
    public static long shareOf(long wantedBytes, long limitBytes) {
        return limitBytes > 0 ? Math.min(wantedBytes, limitBytes / 4) : wantedBytes;
    }
}
