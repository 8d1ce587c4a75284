package dev.plinth.server;

import dev.plinth.wire.messages.MgmtMessages;
import dev.plinth.wire.messages.MgmtMessages.ChainInfo;
import dev.plinth.wire.messages.MgmtMessages.ClusterMap;
import dev.plinth.wire.messages.MgmtMessages.MdtInfo;
import dev.plinth.wire.messages.MgmtMessages.MemberState;
import dev.plinth.wire.messages.MgmtMessages.NodeInfo;
import dev.plinth.wire.messages.MgmtMessages.PoolInfo;
import dev.plinth.wire.messages.MgmtMessages.TargetInfo;
import dev.plinth.wire.messages.MgmtMessages.TargetState;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The cluster at a glance, from the cluster map: what `plinth status --json` prints and the status
 * page shows, built in one place. Chain states: healthy (every member serving), rebuilding (a
 * member syncing), degraded (a member away).
 */
public final class ClusterStatus {
    private ClusterStatus() {}

    public static String chainState(ChainInfo chain) {
        if (chain.healthy()) {
            return "healthy";
        }
        if (chain.members().stream().anyMatch(m -> m.state() == MemberState.SYNCING)) {
            return "rebuilding";
        }
        return "degraded";
    }

    /** Members head first, each not serving with its state: "2 -> 3 -> 1(offline)". */
    public static String members(ChainInfo chain) {
        return chain.members().stream().map(m -> m.targetId() + (m.state() == MemberState.SERVING ? "" : "(" + lower(m.state()) + ")"))
                .reduce((a, b) -> a + " -> " + b).orElse("");
    }

    /** What needs an operator: offline nodes and targets, chains not healthy, targets over 90% full. */
    public static List<String> attention(ClusterMap map) {
        List<String> attention = new ArrayList<>();
        for (NodeInfo node : map.nodes()) {
            if (!node.online()) {
                attention.add("node " + node.nodeId() + " (" + node.rpcAddress() + ") is offline");
            }
        }
        for (TargetInfo target : map.targets()) {
            if (target.state() != TargetState.ONLINE) {
                attention.add("target " + target.targetId() + " is " + lower(target.state()));
            }
            if (nearlyFull(target)) {
                attention.add("target " + target.targetId() + " is " + Math.round(100.0 * target.usedBytes() / target.capacityBytes()) + "% full");
            }
        }
        for (ChainInfo chain : map.chains()) {
            if (!chain.healthy()) {
                String cutOff = chain.members().stream().filter(m -> m.state() == MemberState.OFFLINE).map(m -> map.target(m.targetId()))
                        .filter(target -> target != null && target.state() == TargetState.ONLINE).map(target -> String.valueOf(target.targetId()))
                        .collect(java.util.stream.Collectors.joining(", "));
                attention.add("chain " + chain.chainId() + " is " + chainState(chain) + ": " + members(chain) + (cutOff.isEmpty() ? ""
                        : " (target " + cutOff
                        + " is online but left this chain: its predecessor could not reach it; it tries again every mgmt.link-rejoin-millis)"));
            }
        }
        return attention;
    }

    /** Whether anything is away (not merely full): the exit code of `plinth status`. */
    public static boolean somethingOffline(ClusterMap map) {
        return map.nodes().stream().anyMatch(n -> !n.online()) || map.targets().stream().anyMatch(t -> t.state() != TargetState.ONLINE)
                || map.chains().stream().anyMatch(c -> !c.healthy());
    }

    private static boolean nearlyFull(TargetInfo target) {
        return target.capacityBytes() > 0 && target.usedBytes() > 0.9 * target.capacityBytes();
    }

    /**
     * The status as JSON-ready maps. {@code capacity} (capacity, free bytes, inodes) may be null
     * where the caller has no metadata service at hand.
     */
    public static Map<String, Object> describe(ClusterMap map, String server, long[] capacity) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("server", server);
        out.put("map_version", map.version());
        // as statfs counts it: what the chunks use plus what the file systems under the targets have free (each once)
        long free = MgmtMessages.freeBytes(map.targets());
        out.put("capacity_bytes", capacity != null ? capacity[0] : map.targets().stream().mapToLong(TargetInfo::usedBytes).sum() + free);
        out.put("free_bytes", capacity != null ? capacity[1] : free);
        if (capacity != null) {
            out.put("inodes", capacity[2]);
        }
        List<Object> nodes = new ArrayList<>();
        for (NodeInfo node : map.nodes()) {
            Map<String, Object> entry = new LinkedHashMap<>();
            entry.put("node_id", node.nodeId());
            entry.put("address", node.rpcAddress());
            entry.put("online", node.online());
            entry.put("target_ids", map.targets().stream().filter(t -> t.nodeId() == node.nodeId()).map(TargetInfo::targetId).toList());
            nodes.add(entry);
        }
        out.put("nodes", nodes);
        List<Object> targets = new ArrayList<>();
        for (TargetInfo target : map.targets()) {
            Map<String, Object> entry = new LinkedHashMap<>();
            entry.put("target_id", target.targetId());
            entry.put("node_id", target.nodeId());
            entry.put("state", lower(target.state()));
            entry.put("capacity_bytes", target.capacityBytes());
            entry.put("used_bytes", target.usedBytes());
            entry.put("path", target.path());
            MgmtMessages.TargetRate rate = map.rate(target.targetId());
            if (rate != null) {
                entry.put("read_bytes_per_second", rate.readBytesPerSecond());
                entry.put("write_bytes_per_second", rate.writeBytesPerSecond());
            }
            targets.add(entry);
        }
        out.put("targets", targets);
        List<Object> mdts = new ArrayList<>();
        for (MdtInfo mdt : map.mdts()) {
            mdts.add(Map.of("mdt_id", mdt.mdtId(), "address", mdt.rpcAddress()));
        }
        out.put("mdts", mdts);
        List<Object> pools = new ArrayList<>();
        for (PoolInfo pool : map.pools()) {
            MgmtMessages.PoolSpace space = map.spaceOf(pool);
            Map<String, Object> entry = new LinkedHashMap<>();
            entry.put("name", pool.name());
            entry.put("target_ids", pool.targetIds());
            entry.put("capacity_bytes", space.capacityBytes());
            entry.put("used_bytes", space.usedBytes());
            entry.put("free_bytes", space.freeBytes());
            pools.add(entry);
        }
        out.put("pools", pools);
        List<Object> chains = new ArrayList<>();
        for (ChainInfo chain : map.chains()) {
            Map<String, Object> entry = new LinkedHashMap<>();
            entry.put("chain_id", chain.chainId());
            entry.put("version", chain.version());
            entry.put("replicas", chain.replicas());
            entry.put("state", chainState(chain));
            entry.put("members", chain.members().stream().map(m -> Map.of("target_id", m.targetId(), "state", lower(m.state()))).toList());
            chains.add(entry);
        }
        out.put("chains", chains);
        out.put("attention", attention(map));
        return out;
    }

    /** The busiest jobs the status page lists. */
    private static final int PAGE_JOBS_MAX = 20;

    /** What the status page of a process holding {@code mgmt} shows. */
    public static java.util.function.Supplier<Map<String, Object>> page(dev.plinth.mgmt.MgmtService mgmt, String server) {
        return () -> {
            Map<String, Object> status = describe(mgmt.map(), server, null);
            List<Object> jobs = new ArrayList<>();
            for (MgmtMessages.JobStat job : mgmt.jobStats().stream().limit(PAGE_JOBS_MAX).toList()) {
                Map<String, Object> entry = new LinkedHashMap<>();
                entry.put("job_id", job.jobId());
                entry.put("clients", job.clients());
                entry.put("read_bytes_per_second", job.readBytesPerSecond());
                entry.put("write_bytes_per_second", job.writeBytesPerSecond());
                entry.put("operations_per_second", job.operationsPerSecond());
                entry.put("read_bytes", job.readBytes());
                entry.put("write_bytes", job.writeBytes());
                jobs.add(entry);
            }
            status.put("jobs", jobs);
            status.put("hsm", mgmt.hsmStatus());
            Map<String, Object> replication = mgmt.replication();
            if (!replication.isEmpty()) {
                status.put("mgmt_group", replication);
            }
            status.put("time_millis", System.currentTimeMillis());
            return status;
        };
    }

    private static String lower(Enum<?> value) {
        return value.name().toLowerCase(Locale.ROOT);
    }
}
