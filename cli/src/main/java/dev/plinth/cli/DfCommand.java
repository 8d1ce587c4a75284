package dev.plinth.cli;

import dev.plinth.client.PlinthClient;
import dev.plinth.common.Sizes;
import dev.plinth.wire.messages.MgmtMessages.ClusterMap;
import dev.plinth.wire.messages.MgmtMessages.PoolInfo;
import dev.plinth.wire.messages.MgmtMessages.TargetInfo;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** As df(1): -h is human-readable sizes, not help (only --help is). */
@Command(name = "df", description = {"Capacity and use per target and in total, as `lfs df`; with -i, inodes per MDT, as `lfs df -i`.",
        "Exit status 1 with -i when an MDT has no leader."})
final class DfCommand implements Callable<Integer> {
    @Mixin
    ClientMixin client;

    @Option(names = "--help", usageHelp = true, description = "Show this help message and exit.")
    boolean help;

    @Option(names = {"-p", "--pool"}, paramLabel = "POOL", description = "Only the targets of this pool.")
    String pool;

    @Option(names = {"-h", "--human-readable"}, description = "Sizes in powers of 1024 (KiB, MiB, GiB).")
    boolean human;

    @Option(names = {"-H", "--si"}, description = "Sizes in powers of 1000 (kB, MB, GB).")
    boolean si;

    @Option(names = {"-i", "--inodes"}, description = "Inodes per MDT (as its leader counts them) instead of bytes per target.")
    boolean inodes;

    @Override
    public Integer call() {
        try (PlinthClient plinth = client.connect()) {
            ClusterMap map = plinth.refreshClusterMap();
            if (inodes) {
                return inodesPerMdt(plinth, map);
            }
            PoolInfo only = pool == null ? null : map.pool(pool);
            if (pool != null && only == null) {
                throw new dev.plinth.common.PlinthException(dev.plinth.common.ErrorCode.NOT_FOUND, "no pool '" + pool + "'");
            }
            System.out.printf("%-12s %5s %14s %14s %14s %5s %-8s%n", "TARGET", "NODE", "SIZE", "USED", "AVAILABLE", "USE%", "STATE");
            java.util.List<TargetInfo> shown = new java.util.ArrayList<>();
            for (TargetInfo target : map.targets()) {
                if (only != null && !only.targetIds().contains(target.targetId())) {
                    continue;
                }
                shown.add(target);
                System.out.printf("%-12s %5d %14s %14s %14s %4d%% %-8s%n", "target" + target.targetId(), target.nodeId(),
                        size(target.capacityBytes()), size(target.usedBytes()), size(target.freeBytes()),
                        percent(target.usedBytes(), target.capacityBytes()), target.state().name().toLowerCase(java.util.Locale.ROOT));
            }
            // targets sharing a disk share its free space: the total counts it once, as statfs does
            long used = shown.stream().mapToLong(TargetInfo::usedBytes).sum();
            long free = dev.plinth.wire.messages.MgmtMessages.freeBytes(shown);
            System.out.printf("%-12s %5s %14s %14s %14s %4d%%%n", pool == null ? "filesystem" : "pool " + pool, "",
                    size(used + free), size(used), size(free), percent(used, used + free));
        }
        return 0;
    }

    /** One line per MDT: the inodes it holds and the replica that leads it; then the total. */
    private static int inodesPerMdt(PlinthClient plinth, ClusterMap map) {
        System.out.printf("%-12s %14s %9s  %s%n", "MDT", "IUSED", "REPLICAS", "LEADER");
        long total = 0;
        int unavailable = 0;
        for (var mdt : map.mdts()) {
            var replicas = plinth.mdtReplicaStates(mdt.mdtId());
            var leader = replicas.stream().filter(r -> r.state().equals("leads")).findFirst().orElse(null);
            System.out.printf("%-12s %14s %9d  %s%n", "mdt" + mdt.mdtId(), leader == null ? "-" : Long.toString(leader.inodes()), replicas.size(),
                    leader == null ? "(none: unavailable)" : leader.rpcAddress());
            if (leader == null) {
                unavailable++;
            } else {
                total += leader.inodes();
            }
        }
        System.out.printf("%-12s %14d%n", "filesystem", total);
        return unavailable == 0 ? 0 : 1;
    }

    private String size(long bytes) {
        return si ? Sizes.formatDecimal(bytes) : human ? Sizes.format(bytes) : Long.toString(bytes);
    }

    /** {@code used} as a whole percentage of {@code capacity} (0 where there is none), as df rounds it. */
    static long percent(long used, long capacity) {
        return capacity <= 0 ? 0 : Math.round(100.0 * used / capacity);
    }
}
