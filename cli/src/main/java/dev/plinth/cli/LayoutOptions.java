package dev.plinth.cli;

import dev.plinth.client.PlinthClient;
import dev.plinth.common.Layout;
import dev.plinth.common.Sizes;
import java.util.List;
import picocli.CommandLine.Option;

/**
 * The layout flags `setstripe` and `migrate` share, as Lustre's `lfs setstripe` and `lfs migrate`
 * share theirs, and how they change a layout: what is not given stays as it is.
 */
final class LayoutOptions {
    @Option(names = {"-c", "--stripe-count"}, paramLabel = "N", description = "Stripe count; -1 for every target in the pool.")
    Integer stripeCount;

    @Option(names = {"-S", "--stripe-size"}, paramLabel = "SIZE", description = "Stripe size, a multiple of 64K (e.g. 1M).")
    String stripeSize;

    @Option(names = "--chunk-size", paramLabel = "SIZE", description = "Chunk size on targets, a power of two from 64K to 64M.")
    String chunkSize;

    @Option(names = {"-p", "--pool"}, paramLabel = "POOL", description = "Target pool (see `plinth pool list`).")
    String pool;

    @Option(names = {"-r", "--replicas"}, paramLabel = "R", description = "Copies of every chunk, on a chain of R targets on distinct nodes.")
    Integer replicas;

    @Option(names = "--ec", paramLabel = "K+M",
            description = {"Erasure coding: each stripe of K data cells (of the stripe size, 1M unless -S says) gets M parity cells, on K+M "
                    + "targets of distinct nodes where there are enough. Any K cells of a stripe give back the others. Not with -c or -r.",
                    "`--ec none` goes back to replicas."})
    String erasureCoding;

    @Option(names = "--compress", paramLabel = "CODEC", description = {"Compression of file data in independent 64 KiB blocks, in the client: "
            + "lz4, zstd[:LEVEL] (levels -7..22, 3 by default) or none. A block that does not shrink is stored as written. Goes with replicas "
            + "or --ec."})
    String compress;

    /**
     * The default cell of an erasure-coded layout, and its chunk: a writer holds a row of K cells
     * in memory while it fills, and rows that share a chunk are written one after another.
     */
    static final int EC_DEFAULT_STRIPE_BYTES = 1 << 20;

    /** Refuses combinations that cannot mean anything (a usage error, exit 2). */
    void check(picocli.CommandLine commandLine) {
        int[] ec = erasureCoding == null ? null : parseErasureCoding(erasureCoding, commandLine);
        if (ec != null && (stripeCount != null || replicas != null)) {
            throw new picocli.CommandLine.ParameterException(commandLine,
                    "--ec sets the targets itself (K+M of them, one copy each): it does not go with -c or -r");
        }
        if (compress != null) {
            parseCompression(compress, commandLine);
        }
    }

    /** Whether any flag was given. */
    boolean any() {
        return stripeCount != null || stripeSize != null || chunkSize != null || pool != null || replicas != null || erasureCoding != null
                || compress != null;
    }

    /** The codec and level `--compress` names; a usage error (exit 2) for anything else. */
    static Layout withCompression(Layout layout, String value, picocli.CommandLine commandLine) {
        Compression parsed = parseCompression(value, commandLine);
        return layout.withCompression(parsed.encoding(), parsed.level());
    }

    private record Compression(Layout.Encoding encoding, int level) {}

    private static Compression parseCompression(String value, picocli.CommandLine commandLine) {
        java.util.regex.Matcher matcher = java.util.regex.Pattern.compile("(?i)(none|lz4|zstd)(?::(-?\\d{1,2}))?").matcher(value.trim());
        if (!matcher.matches() || (matcher.group(2) != null && !matcher.group(1).equalsIgnoreCase("zstd"))) {
            throw new picocli.CommandLine.ParameterException(commandLine, "--compress takes lz4, zstd[:LEVEL] or none, not '" + value + "'");
        }
        int level = matcher.group(2) == null ? 0 : Integer.parseInt(matcher.group(2));
        if (level < Layout.ZSTD_LEVEL_MIN || level > Layout.ZSTD_LEVEL_MAX) {
            throw new picocli.CommandLine.ParameterException(commandLine, "zstd levels are " + Layout.ZSTD_LEVEL_MIN + ".." + Layout.ZSTD_LEVEL_MAX
                    + ", not " + level);
        }
        return new Compression(Layout.Encoding.valueOf(matcher.group(1).toUpperCase(java.util.Locale.ROOT)), level);
    }

    /** K+M as two numbers, or null for "none"; a usage error (exit 2) otherwise. */
    static int[] parseErasureCoding(String value, picocli.CommandLine commandLine) {
        if (value.equalsIgnoreCase("none")) {
            return null;
        }
        java.util.regex.Matcher matcher = java.util.regex.Pattern.compile("(\\d{1,3})\\+(\\d{1,3})").matcher(value.trim());
        if (!matcher.matches()) {
            throw new picocli.CommandLine.ParameterException(commandLine, "--ec takes K+M (for example 4+2) or none, not '" + value + "'");
        }
        return new int[] {Integer.parseInt(matcher.group(1)), Integer.parseInt(matcher.group(2))};
    }

    /**
     * {@code current} with the flags given applied (a template, without chains; validated);
     * {@code mdtBytes}: the Data-on-MDT part it gets. Leaving erasure coding gives one stripe and
     * the file system's replicas unless -c or -r say otherwise.
     */
    Layout applyTo(Layout current, PlinthClient plinth, int mdtBytes, picocli.CommandLine commandLine) {
        Layout layout = placementOf(current, plinth, mdtBytes, commandLine);
        return (compress != null ? withCompression(layout, compress, commandLine)
                : layout.withCompression(current.encoding(), current.compressionLevel())).validate();
    }

    /** Where the bytes go and how they are protected: {@link #applyTo} without compression. */
    private Layout placementOf(Layout current, PlinthClient plinth, int mdtBytes, picocli.CommandLine commandLine) {
        int[] ec = erasureCoding == null ? null : parseErasureCoding(erasureCoding, commandLine);
        String poolName = pool != null ? pool : current.pool();
        int count = stripeCount == null ? current.stripeCount() : stripeCount;
        if (count == -1) {
            var poolInfo = plinth.clusterMap().pool(poolName);
            count = poolInfo == null ? 1 : Math.max(1, poolInfo.targetIds().size());
        }
        boolean toErasureCoding = ec != null || (erasureCoding == null && current.erasureCoded() && stripeCount == null && replicas == null);
        int stripeBytes = stripeSize != null ? Math.toIntExact(Sizes.parseBytes(stripeSize))
                : toErasureCoding && !current.erasureCoded() ? EC_DEFAULT_STRIPE_BYTES : current.stripeSizeBytes();
        int chunkBytes = chunkSize != null ? Math.toIntExact(Sizes.parseBytes(chunkSize))
                : toErasureCoding ? stripeBytes : current.chunkSizeBytes(); // a chunk per cell: rows of a file are written in parallel
        Layout base = new Layout(count, stripeBytes, chunkBytes, poolName, replicas == null ? current.replicas() : replicas, List.of(),
                mdtBytes);
        if (toErasureCoding) {
            return base.withErasureCoding(ec != null ? ec[0] : current.dataCells(), ec != null ? ec[1] : current.parityCells()).validate();
        }
        if (current.erasureCoded()) {
            Layout root = plinth.stat("/").layout();
            return base.withReplicas(stripeCount == null ? 1 : count, replicas == null ? (root.erasureCoded() ? 1 : root.replicas()) : replicas)
                    .validate();
        }
        return base.validate();
    }
}
