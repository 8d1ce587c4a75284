package dev.plinth.common;

import java.util.List;

/**
 * How a file's bytes are spread, with Lustre's meaning: {@code stripeCount} stripe objects take
 * {@code stripeSizeBytes} in turn; stripe object {@code i} is stored as chunks of
 * {@code chunkSizeBytes} on chain {@code chainIds[i]}. A directory's default layout has no chains
 * (the metadata service picks them from {@code pool} when a file is created). See {@link StripeMath}.
 *
 * <p>{@code mdtBytes} is Lustre's Data-on-MDT component: bytes {@code [0, mdtBytes)} of the file
 * live in the metadata service with the inode (0: none), so a small file costs no storage round
 * trip. The stripes keep the striping math of the file offset; they simply never hold bytes below
 * {@code mdtBytes}. Fixed when the file is created, so a file never changes where a byte lives.
 */
public record Layout(int stripeCount, int stripeSizeBytes, int chunkSizeBytes, String pool, int replicas,
                     List<Integer> chainIds, int mdtBytes) {
    public static final int STRIPE_COUNT_MAX = 256;
    public static final int STRIPE_SIZE_UNIT = 64 * 1024;
    public static final int STRIPE_SIZE_MAX = 64 * 1024 * 1024;
    public static final int CHUNK_SIZE_MIN = 64 * 1024;
    public static final int CHUNK_SIZE_MAX = 64 * 1024 * 1024;
    public static final String DEFAULT_POOL = "default";
    /** 1 PiB: the largest file; writers and the metadata service both enforce it. */
    public static final long FILE_SIZE_MAX = 1L << 50;

    /** The largest Data-on-MDT component: every write below it is a metadata change. */
    public static final int MDT_BYTES_MAX = 1 << 20;

    public Layout {
        chainIds = List.copyOf(chainIds);
    }

    /** A layout without a Data-on-MDT component. */
    public Layout(int stripeCount, int stripeSizeBytes, int chunkSizeBytes, String pool, int replicas, List<Integer> chainIds) {
        this(stripeCount, stripeSizeBytes, chunkSizeBytes, pool, replicas, chainIds, 0);
    }

    /** Checks the values that came from outside; throws INVALID_ARGUMENT naming the bad one. */
    public static final int REPLICATED_CHUNK_SIZE_MAX = 16 << 20;

    /** The root directory's layout on a new file system, from the {@code layout.*} settings. */
    public static Layout rootDefault(Config config) {
        return new Layout(config.get(Settings.LAYOUT_STRIPE_COUNT), Math.toIntExact(config.get(Settings.LAYOUT_STRIPE_SIZE)),
                Math.toIntExact(config.get(Settings.LAYOUT_CHUNK_SIZE)), DEFAULT_POOL, config.get(Settings.LAYOUT_REPLICAS), List.of(),
                Math.toIntExact(config.get(Settings.LAYOUT_MDT_BYTES)));
    }

    public Layout validate() {
        if (stripeCount < 1 || stripeCount > STRIPE_COUNT_MAX) {
            throw PlinthException.of(ErrorCode.INVALID_ARGUMENT, "stripe count %d not in 1..%d", stripeCount, STRIPE_COUNT_MAX);
        }
        if (stripeSizeBytes < STRIPE_SIZE_UNIT || stripeSizeBytes > STRIPE_SIZE_MAX || stripeSizeBytes % STRIPE_SIZE_UNIT != 0) {
            throw PlinthException.of(ErrorCode.INVALID_ARGUMENT, "stripe size %d is not a multiple of 64 KiB up to 64 MiB", stripeSizeBytes);
        }
        if (chunkSizeBytes < CHUNK_SIZE_MIN || chunkSizeBytes > CHUNK_SIZE_MAX || Integer.bitCount(chunkSizeBytes) != 1) {
            throw PlinthException.of(ErrorCode.INVALID_ARGUMENT, "chunk size %d is not a power of two in 64 KiB..64 MiB", chunkSizeBytes);
        }
        if (replicas < 1 || replicas > 8) {
            throw PlinthException.of(ErrorCode.INVALID_ARGUMENT, "replicas %d not in 1..8", replicas);
        }
        if (replicas > 1 && chunkSizeBytes > REPLICATED_CHUNK_SIZE_MAX) {
            // a replica that missed writes is sent whole chunks, each in one message
            throw PlinthException.of(ErrorCode.INVALID_ARGUMENT, "replicated layouts take chunks of at most 16 MiB, not %d", chunkSizeBytes);
        }
        if (pool == null || pool.isEmpty() || pool.length() > 64) {
            throw PlinthException.of(ErrorCode.INVALID_ARGUMENT, "pool name must be 1..64 characters");
        }
        if (mdtBytes < 0 || mdtBytes > MDT_BYTES_MAX || mdtBytes % STRIPE_SIZE_UNIT != 0) {
            throw PlinthException.of(ErrorCode.INVALID_ARGUMENT, "Data-on-MDT size %d is not a multiple of 64 KiB up to 1 MiB", mdtBytes);
        }
        if (!chainIds.isEmpty() && chainIds.size() != stripeCount) {
            throw PlinthException.of(ErrorCode.INVALID_ARGUMENT, "layout names %d chains for %d stripes", chainIds.size(), stripeCount);
        }
        return this;
    }

    public Layout withChains(List<Integer> chains) {
        return new Layout(stripeCount, stripeSizeBytes, chunkSizeBytes, pool, replicas, chains, mdtBytes);
    }

    /** The template part of the layout (no chains), as a directory stores it. */
    public Layout template() {
        return withChains(List.of());
    }
}
