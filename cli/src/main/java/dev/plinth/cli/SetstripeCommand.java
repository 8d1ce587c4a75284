package dev.plinth.cli;

import dev.plinth.client.PlinthClient;
import dev.plinth.common.Layout;
import dev.plinth.common.Sizes;
import dev.plinth.wire.messages.MetaMessages.Attributes;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

@Command(name = "setstripe", mixinStandardHelpOptions = true,
        description = {"Set a directory's default layout, or create an empty file with a layout (as `lfs setstripe`).",
                "A directory's layout is inherited by new files and subdirectories in it.",
                "Options not given keep the current (or inherited) value."})
final class SetstripeCommand implements Callable<Integer> {
    @Mixin
    ClientMixin client;

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

    @Option(names = {"-L", "--mdt-bytes"}, paramLabel = "SIZE",
            description = "Data-on-MDT size: the first SIZE bytes of each file live in the metadata service (0: none; a multiple of 64K up to 1M).")
    String mdtBytes;

    @Option(names = "--force", description = "Keep a layout the cluster cannot place yet (more replicas than storage nodes): creates fail until it can.")
    boolean force;

    @Parameters(paramLabel = "PATH")
    String path;

    @picocli.CommandLine.Spec
    picocli.CommandLine.Model.CommandSpec spec;

    /**
     * The default cell of an erasure-coded layout, and its chunk: a writer holds a row of K cells
     * in memory while it fills, and rows that share a chunk are written one after another.
     */
    static final int EC_DEFAULT_STRIPE_BYTES = 1 << 20;

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

    @Override
    public Integer call() {
        int[] ec = erasureCoding == null ? null : parseErasureCoding(erasureCoding, spec.commandLine());
        if (ec != null && (stripeCount != null || replicas != null)) {
            throw new picocli.CommandLine.ParameterException(spec.commandLine(),
                    "--ec sets the targets itself (K+M of them, one copy each): it does not go with -c or -r");
        }
        try (PlinthClient plinth = client.connect()) {
            boolean exists = plinth.exists(path);
            Layout current = exists ? plinth.stat(path).layout() : null;
            if (current == null) {
                current = plinth.stat(exists ? "/" : dev.plinth.common.Names.parent(path)).layout();
            }
            if (current == null) {
                current = plinth.stat("/").layout();
            }
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
                    mdtBytes == null ? current.mdtBytes() : Math.toIntExact(Sizes.parseBytes(mdtBytes)));
            Layout layout;
            if (toErasureCoding) {
                int dataCells = ec != null ? ec[0] : current.dataCells();
                int parityCells = ec != null ? ec[1] : current.parityCells();
                layout = base.withErasureCoding(dataCells, parityCells).validate();
                warnIfNodesAreShared(plinth, poolName, dataCells, parityCells);
            } else if (current.erasureCoded()) {
                // leaving erasure coding: one stripe and the file system's replicas unless told
                Layout root = plinth.stat("/").layout();
                layout = base.withReplicas(stripeCount == null ? 1 : count, replicas == null ? (root.erasureCoded() ? 1 : root.replicas())
                        : replicas).validate();
            } else {
                layout = base.validate();
            }
            if (exists) {
                plinth.setLayout(path, layout, force);
            } else {
                plinth.create(path, 0644, true, layout).close();
            }
            Attributes result = plinth.stat(path);
            if (layout.erasureCoded()) {
                return 0;
            }
            if (!result.isDirectory() && result.layout().stripeCount() < layout.stripeCount()) {
                System.err.printf("plinth: only %d usable targets in pool '%s': stripe count is %d%n",
                        result.layout().stripeCount(), poolName, result.layout().stripeCount());
            }
        }
        return 0;
    }

    /** Says so where a pool has fewer nodes than an erasure-coded layout has cells: losing one node then loses several cells. */
    private static void warnIfNodesAreShared(PlinthClient plinth, String poolName, int dataCells, int parityCells) {
        var map = plinth.clusterMap();
        var pool = map.pool(poolName);
        if (pool == null) {
            return;
        }
        long nodes = pool.targetIds().stream().map(map::target).filter(java.util.Objects::nonNull).map(t -> t.nodeId()).distinct().count();
        if (nodes < dataCells + parityCells) {
            System.err.printf("plinth: warning: pool '%s' has %d storage node(s) for %d+%d cells: cells share nodes, and a lost node may lose "
                    + "more than %d cells of a stripe%n", poolName, nodes, dataCells, parityCells, parityCells);
        }
    }
}
