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

    @Option(names = {"-L", "--mdt-bytes"}, paramLabel = "SIZE",
            description = "Data-on-MDT size: the first SIZE bytes of each file live in the metadata service (0: none; a multiple of 64K up to 1M).")
    String mdtBytes;

    @Option(names = "--force", description = "Keep a layout the cluster cannot place yet (more replicas than storage nodes): creates fail until it can.")
    boolean force;

    @Parameters(paramLabel = "PATH")
    String path;

    @Override
    public Integer call() {
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
            Layout layout = new Layout(count,
                    stripeSize == null ? current.stripeSizeBytes() : Math.toIntExact(Sizes.parseBytes(stripeSize)),
                    chunkSize == null ? current.chunkSizeBytes() : Math.toIntExact(Sizes.parseBytes(chunkSize)),
                    poolName, replicas == null ? current.replicas() : replicas, List.of(),
                    mdtBytes == null ? current.mdtBytes() : Math.toIntExact(Sizes.parseBytes(mdtBytes))).validate();
            if (exists) {
                plinth.setLayout(path, layout, force);
            } else {
                plinth.create(path, 0644, true, layout).close();
            }
            Attributes result = plinth.stat(path);
            if (!result.isDirectory() && result.layout().stripeCount() < layout.stripeCount()) {
                System.err.printf("plinth: only %d usable targets in pool '%s': stripe count is %d%n",
                        result.layout().stripeCount(), poolName, result.layout().stripeCount());
            }
        }
        return 0;
    }
}
