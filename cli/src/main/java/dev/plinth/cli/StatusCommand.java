package dev.plinth.cli;

import dev.plinth.server.ClusterStatus;
import dev.plinth.common.Json;
import dev.plinth.client.PlinthClient;
import dev.plinth.common.Sizes;
import dev.plinth.wire.messages.MetaMessages.StatFsReply;
import dev.plinth.wire.messages.MgmtMessages.ChainInfo;
import dev.plinth.wire.messages.MgmtMessages.ClusterMap;
import dev.plinth.wire.messages.MgmtMessages;
import dev.plinth.wire.messages.MgmtMessages.NodeInfo;
import dev.plinth.wire.messages.MgmtMessages.PoolInfo;
import dev.plinth.wire.messages.MgmtMessages.TargetInfo;
import java.util.List;
import java.util.Map;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

@Command(name = "status", mixinStandardHelpOptions = true,
        description = {"The cluster at a glance: nodes, targets and their states, capacity, inodes, pools, and what needs attention.",
                "Exit code 0 when everything is online, 1 when something is offline or the cluster cannot be reached."})
final class StatusCommand implements Callable<Integer> {
    @Mixin
    ClientMixin client;

    @Option(names = "--json", description = "Print as JSON.")
    boolean json;

    @Override
    public Integer call() {
        ClusterMap map;
        StatFsReply statFs;
        String answering;
        List<String> attention;
        Map<Integer, List<PlinthClient.MdtReplicaState>> mdts = new java.util.TreeMap<>();
        try (PlinthClient plinth = client.connect()) {
            map = plinth.refreshClusterMap();
            statFs = plinth.statFs();
            for (var mdt : map.mdts()) {
                mdts.put(mdt.mdtId(), plinth.mdtReplicaStates(mdt.mdtId()));
            }
            answering = plinth.mgmt().answering().toString();
            attention = new java.util.ArrayList<>(ClusterStatus.attention(map));
            mdts.forEach((mdt, replicas) -> {
                if (replicas.stream().noneMatch(r -> r.state().equals("leads"))) {
                    attention.add("MDT " + mdt + " has no leader: its namespace is unavailable");
                }
                replicas.stream().filter(r -> r.state().equals("unreachable"))
                        .forEach(r -> attention.add("MDT " + mdt + " replica " + r.rpcAddress() + " does not answer"));
            });
            mdts.forEach((mdt, replicas) -> {
                if (replicas.stream().anyMatch(r -> r.state().equals("leads"))) {
                    staleCellFiles(plinth, mdt, attention);
                }
            });
            for (var forced : plinth.unplaceableForcedLayouts()) {
                String directory = "directory " + (forced.path() != null ? forced.path() : "inode " + forced.inodeId());
                attention.add(forced.placeable() ? directory + " has an erasure-coded layout whose " + forced.problem()
                        : directory + " has a layout set with --force that the cluster cannot place (" + forced.problem() + "): creates in it fail");
            }
        }
        if (json) {
            var described = ClusterStatus.describe(map, client.serverAddress().toString(),
                    new long[] {statFs.capacityBytes(), statFs.freeBytes(), statFs.inodes()});
            described.put("attention", attention);
            described.put("mdt_replicas", mdts.entrySet().stream().map(e -> Map.of("mdt_id", e.getKey(), "replicas", e.getValue().stream()
                    .map(r -> Map.of("address", r.rpcAddress(), "state", r.state())).toList())).toList());
            if (client.serverAddresses().size() > 1) {
                described.put("mgmt_replicas", client.serverAddresses().stream().map(Object::toString).toList());
                described.put("mgmt_leader", answering);
            }
            System.out.println(Json.write(described));
        } else {
            print(map, statFs, attention, answering, mdts);
        }
        return ClusterStatus.somethingOffline(map) ? 1 : 0;
    }

    private static final int STALE_FILES_COUNTED = 1000;

    /** Says how many erasure-coded files of MDT {@code mdt} have stale cells, where any do and the MDT answers. */
    private static void staleCellFiles(PlinthClient plinth, int mdt, List<String> attention) {
        int files;
        try {
            files = plinth.staleCellFiles(mdt, 0, STALE_FILES_COUNTED + 1).size();
        } catch (dev.plinth.common.PlinthException e) {
            return; // it stopped answering since: reported by the next status
        }
        if (files > 0) {
            attention.add((files > STALE_FILES_COUNTED ? "more than " + STALE_FILES_COUNTED : Integer.toString(files))
                    + " erasure-coded file(s) on MDT " + mdt + " have stale cells (written while a target was away): one loss closer to "
                    + "losing data until the mgmt leader rebuilds them, which it does once their targets are back and the files closed");
        }
    }

    private void print(ClusterMap map, StatFsReply statFs, List<String> attention, String answering,
                       Map<Integer, List<PlinthClient.MdtReplicaState>> mdts) {
        long used = statFs.capacityBytes() - statFs.freeBytes();
        System.out.printf(Locale.ROOT, "cluster  %s (map version %d)%n", client.serverAddress(), map.version());
        if (client.serverAddresses().size() > 1) {
            System.out.printf(Locale.ROOT, "mgmt     %d replicas, %s leads%n", client.serverAddresses().size(), answering);
        }
        mdts.forEach((mdt, replicas) -> System.out.printf(Locale.ROOT, "mdt %-4d %s%n", mdt, replicas.size() == 1
                ? replicas.getFirst().rpcAddress() + (replicas.getFirst().state().equals("leads") ? ", " + replicas.getFirst().inodes() + " inodes" : ", " + replicas.getFirst().state())
                : replicas.size() + " replicas: " + String.join(", ", replicas.stream().map(r -> r.rpcAddress() + " " + r.state()
                        + (r.inodes() >= 0 ? " (" + r.inodes() + " inodes)" : "")).toList())));
        System.out.printf(Locale.ROOT, "space    %s used of %s (%d%%), %s free; %d inodes%n", Sizes.format(used), Sizes.format(statFs.capacityBytes()),
                DfCommand.percent(used, statFs.capacityBytes()), Sizes.format(statFs.freeBytes()), statFs.inodes());
        System.out.println();
        System.out.printf("%-6s %-24s %-8s %s%n", "NODE", "ADDRESS", "STATE", "TARGETS");
        for (NodeInfo node : map.nodes()) {
            List<Integer> targets = map.targets().stream().filter(t -> t.nodeId() == node.nodeId()).map(TargetInfo::targetId).toList();
            System.out.printf("%-6d %-24s %-8s %s%n", node.nodeId(), node.rpcAddress(), node.online() ? "online" : "offline", targets);
        }
        System.out.println();
        System.out.printf("%-7s %-5s %-8s %12s %12s %5s  %s%n", "TARGET", "NODE", "STATE", "SIZE", "USED", "USE%", "PATH");
        for (TargetInfo target : map.targets()) {
            System.out.printf(Locale.ROOT, "%-7d %-5d %-8s %12s %12s %4d%%  %s%n", target.targetId(), target.nodeId(),
                    target.state().name().toLowerCase(Locale.ROOT), Sizes.format(target.capacityBytes()), Sizes.format(target.usedBytes()),
                    DfCommand.percent(target.usedBytes(), target.capacityBytes()), target.path());
        }
        List<ChainInfo> replicated = map.chains().stream().filter(c -> c.replicas() > 1).toList();
        if (!replicated.isEmpty()) {
            System.out.println();
            System.out.printf("%-8s %-8s %-10s %s%n", "CHAIN", "VERSION", "STATE", "MEMBERS (head first)");
            for (ChainInfo chain : replicated) {
                System.out.printf(Locale.ROOT, "%-8d %-8d %-10s %s%n", chain.chainId(), chain.version(), ClusterStatus.chainState(chain), ClusterStatus.members(chain));
            }
        }
        System.out.println();
        for (PoolInfo pool : map.pools()) {
            MgmtMessages.PoolSpace space = map.spaceOf(pool);
            System.out.printf(Locale.ROOT, "pool %-16s %s used of %s (%d%%), %s free; targets %s%n", pool.name(), Sizes.format(space.usedBytes()),
                    Sizes.format(space.capacityBytes()), DfCommand.percent(space.usedBytes(), space.capacityBytes()),
                    Sizes.format(space.freeBytes()), pool.targetIds().isEmpty() ? "none" : pool.targetIds());
        }
        System.out.println();
        System.out.println(attention.isEmpty() ? "all nodes, targets and chains healthy" : "attention:\n  " + String.join("\n  ", attention));
    }
}
