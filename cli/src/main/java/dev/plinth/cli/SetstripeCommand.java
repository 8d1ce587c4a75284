package dev.plinth.cli;

import dev.plinth.client.PlinthClient;
import dev.plinth.common.Layout;
import dev.plinth.wire.messages.MetaMessages.Attributes;
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

    @Mixin
    LayoutOptions layoutOptions;

    @Option(names = {"-L", "--mdt-bytes"}, paramLabel = "SIZE",
            description = "Data-on-MDT size: the first SIZE bytes of each file live in the metadata service (0: none; a multiple of 64K up to 1M).")
    String mdtBytes;

    @Option(names = "--force", description = "Keep a layout the cluster cannot place yet (more replicas than storage nodes): creates fail until it can.")
    boolean force;

    @Parameters(paramLabel = "PATH")
    String path;

    @picocli.CommandLine.Spec
    picocli.CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() {
        layoutOptions.check(spec.commandLine());
        try (PlinthClient plinth = client.connect()) {
            boolean exists = plinth.exists(path);
            Layout current = exists ? plinth.stat(path).layout() : null;
            if (current == null) {
                current = plinth.stat(exists ? "/" : dev.plinth.common.Names.parent(path)).layout();
            }
            if (current == null) {
                current = plinth.stat("/").layout();
            }
            Layout layout = layoutOptions.applyTo(current, plinth, mdtBytes == null ? current.mdtBytes()
                    : Math.toIntExact(dev.plinth.common.Sizes.parseBytes(mdtBytes)), spec.commandLine());
            String poolName = layout.pool();
            if (layout.erasureCoded()) {
                warnIfNodesAreShared(plinth, poolName, layout.dataCells(), layout.parityCells());
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
        int nodes = map.nodesOf(pool);
        if (nodes < dataCells + parityCells) {
            System.err.printf("plinth: warning: pool '%s' has %d storage node(s) for %d+%d cells: cells share nodes, and a lost node may lose "
                    + "more than %d cells of a stripe%n", poolName, nodes, dataCells, parityCells, parityCells);
        }
    }
}
