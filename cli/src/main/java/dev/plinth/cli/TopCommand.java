package dev.plinth.cli;

import dev.plinth.client.PlinthClient;
import dev.plinth.common.Sizes;
import dev.plinth.wire.messages.MgmtMessages.ClusterMap;
import dev.plinth.wire.messages.MgmtMessages.JobStat;
import dev.plinth.wire.messages.MgmtMessages.NodeInfo;
import dev.plinth.wire.messages.MgmtMessages.TargetInfo;
import dev.plinth.wire.messages.MgmtMessages.TargetRate;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

@Command(name = "top", mixinStandardHelpOptions = true,
        description = {"Live throughput of the cluster, by target or by node (from the storage nodes' heartbeats) or by job",
                "(from the clients' reports: the job is named by the caller's client.job-id-variables, e.g. SLURM_JOB_ID), busiest first.",
                "On a terminal the view is redrawn in place; elsewhere a block is printed per interval. Ctrl-C ends it."})
final class TopCommand implements Callable<Integer> {
    enum Grouping { target, node, job }

    @Mixin
    ClientMixin client;

    @Option(names = "--by", paramLabel = "WHAT", defaultValue = "target", description = "target, node or job (default ${DEFAULT-VALUE}).")
    Grouping by;

    @Option(names = "--interval", paramLabel = "SECONDS", defaultValue = "2", description = "Seconds between refreshes (default ${DEFAULT-VALUE}).")
    double interval;

    @Option(names = {"-n", "--iterations"}, paramLabel = "N", defaultValue = "0", description = "Stop after N refreshes (default: run until stopped).")
    int iterations;

    /** One row: a target or a node, and what it moves now. */
    record Row(String name, String state, long readBytesPerSecond, long writeBytesPerSecond, long usedBytes, long capacityBytes) {
        long total() {
            return readBytesPerSecond + writeBytesPerSecond;
        }
    }

    @Override
    public Integer call() throws InterruptedException {
        boolean terminal = System.console() != null && System.console().isTerminal();
        try (PlinthClient plinth = client.connect()) {
            for (int round = 1; iterations <= 0 || round <= iterations; round++) {
                if (round > 1) {
                    Thread.sleep(Math.max(100, Math.round(interval * 1000)));
                }
                ClusterMap map = plinth.refreshClusterMap();
                if (terminal) {
                    System.out.print("\033[H\033[2J");
                }
                if (by == Grouping.job) {
                    printJobs(System.out, client.serverAddress().toString(), plinth.clusterJobStats());
                } else {
                    print(System.out, client.serverAddress().toString(), map, rows(map, by));
                }
                System.out.flush();
            }
        }
        return 0;
    }

    static List<Row> rows(ClusterMap map, Grouping by) {
        List<Row> rows = new ArrayList<>();
        if (by == Grouping.target) {
            for (TargetInfo target : map.targets()) {
                TargetRate rate = map.rate(target.targetId());
                rows.add(new Row("target " + target.targetId() + " (node " + target.nodeId() + ")", target.state().name().toLowerCase(Locale.ROOT),
                        rate == null ? 0 : rate.readBytesPerSecond(), rate == null ? 0 : rate.writeBytesPerSecond(), target.usedBytes(),
                        target.capacityBytes()));
            }
        } else {
            for (NodeInfo node : map.nodes()) {
                long read = 0;
                long write = 0;
                long used = 0;
                long capacity = 0;
                for (TargetInfo target : map.targets()) {
                    if (target.nodeId() == node.nodeId()) {
                        TargetRate rate = map.rate(target.targetId());
                        read += rate == null ? 0 : rate.readBytesPerSecond();
                        write += rate == null ? 0 : rate.writeBytesPerSecond();
                        used += target.usedBytes();
                        capacity += target.capacityBytes();
                    }
                }
                rows.add(new Row("node " + node.nodeId() + " " + node.rpcAddress(), node.online() ? "online" : "offline", read, write, used, capacity));
            }
        }
        rows.sort(Comparator.comparingLong(Row::total).reversed().thenComparing(Row::name));
        return rows;
    }

    static void printJobs(PrintStream out, String server, List<JobStat> jobs) {
        long read = jobs.stream().mapToLong(JobStat::readBytesPerSecond).sum();
        long write = jobs.stream().mapToLong(JobStat::writeBytesPerSecond).sum();
        out.printf(Locale.ROOT, "plinth top  %s  %tT  read %s/s  write %s/s  (by job)%n%n", server, System.currentTimeMillis(), Sizes.format(read),
                Sizes.format(write));
        out.printf(Locale.ROOT, "%-32s %7s %12s %12s %9s %12s %12s%n", "JOB", "CLIENTS", "READ/s", "WRITE/s", "OPS/s", "READ", "WRITTEN");
        for (JobStat job : jobs) {
            out.printf(Locale.ROOT, "%-32s %7d %12s %12s %9d %12s %12s%n", job.jobId(), job.clients(), Sizes.format(job.readBytesPerSecond()),
                    Sizes.format(job.writeBytesPerSecond()), job.operationsPerSecond(), Sizes.format(job.readBytes()), Sizes.format(job.writeBytes()));
        }
        if (jobs.isEmpty()) {
            out.println("(no client has reported I/O yet)");
        }
        out.println();
    }

    static void print(PrintStream out, String server, ClusterMap map, List<Row> rows) {
        long read = rows.stream().mapToLong(Row::readBytesPerSecond).sum();
        long write = rows.stream().mapToLong(Row::writeBytesPerSecond).sum();
        out.printf(Locale.ROOT, "plinth top  %s  %tT  read %s/s  write %s/s%n%n", server, System.currentTimeMillis(), Sizes.format(read),
                Sizes.format(write));
        out.printf(Locale.ROOT, "%-36s %-8s %12s %12s %12s %5s%n", "WHAT", "STATE", "READ/s", "WRITE/s", "USED", "USE%");
        for (Row row : rows) {
            out.printf(Locale.ROOT, "%-36s %-8s %12s %12s %12s %4d%%%n", row.name(), row.state(), Sizes.format(row.readBytesPerSecond()),
                    Sizes.format(row.writeBytesPerSecond()), Sizes.format(row.usedBytes()),
                    DfCommand.percent(row.usedBytes(), row.capacityBytes()));
        }
        out.println();
    }
}
