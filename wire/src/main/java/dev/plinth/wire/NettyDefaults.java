package dev.plinth.wire;

/**
 * Netty settings that must be in place before Netty's buffer classes load, set once per process
 * (a value the user gave with {@code -D} wins).
 *
 * <p>{@code io.netty.allocator.chunkReuseQueueCapacity}: how many released chunks Netty's
 * adaptive allocator keeps for reuse; it sizes this at two per core. A sequential read keeps a
 * read-ahead window of received 1 MiB frames alive, so chunks are released and needed again
 * continually, and on two cores the queue of four was too short: each new chunk is a fresh direct
 * allocation that the JDK zeroes and the kernel faults in. perf of a warm 2 GiB read through the
 * native client (ReadLoop, 12 rounds): zeroing and faults in ~35% of the samples with 4, ~10% with 8,
 * ~2% with 16; steady-state rounds 1,600-2,000 MiB/s with 4, 2,100-2,400 with 16 and 32. At most
 * 16 idle chunks (Netty's chunks are 8 MiB at most) stay allocated, what an 8-core machine keeps
 * by default anyway.
 */
public final class NettyDefaults {
    static final String CHUNK_REUSE_QUEUE = "io.netty.allocator.chunkReuseQueueCapacity";
    static final int CHUNK_REUSE_QUEUE_MIN = 16;

    private NettyDefaults() {}

    /** Idempotent; call before anything touches Netty's buffers (process entry points, {@link Transport}). */
    public static void apply() {
        if (System.getProperty(CHUNK_REUSE_QUEUE) == null) {
            int nettyDefault = Runtime.getRuntime().availableProcessors() * 2;
            System.setProperty(CHUNK_REUSE_QUEUE, Integer.toString(Math.max(CHUNK_REUSE_QUEUE_MIN, nettyDefault)));
        }
    }
}
