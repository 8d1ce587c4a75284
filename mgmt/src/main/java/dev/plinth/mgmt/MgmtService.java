package dev.plinth.mgmt;

import static java.util.Objects.requireNonNull;

import dev.plinth.common.Config;
import dev.plinth.common.ErrorCode;
import dev.plinth.common.Settings;
import dev.plinth.common.Layout;
import dev.plinth.common.PlinthException;
import dev.plinth.raft.RaftReplica;
import dev.plinth.wire.HostPort;
import dev.plinth.wire.Reply;
import dev.plinth.wire.RpcDispatcher;
import dev.plinth.wire.messages.HandshakeMessages;
import dev.plinth.wire.messages.MgmtMessages;
import dev.plinth.wire.messages.MgmtMessages.AccessKey;
import dev.plinth.wire.messages.MgmtMessages.AllocateIds;
import dev.plinth.wire.messages.MgmtMessages.AllocatedIds;
import dev.plinth.wire.messages.MgmtMessages.ChainMember;
import dev.plinth.wire.messages.MgmtMessages.ChainSynced;
import dev.plinth.wire.messages.MgmtMessages.ReportUnreachable;
import dev.plinth.wire.messages.MgmtMessages.HeartbeatReply;
import dev.plinth.wire.messages.MgmtMessages.IdKind;
import dev.plinth.wire.messages.MgmtMessages.MdtInfo;
import dev.plinth.wire.messages.MgmtMessages.MdtReplica;
import dev.plinth.wire.messages.MgmtMessages.MemberState;
import dev.plinth.wire.messages.MgmtMessages.RegisterMdt;
import dev.plinth.wire.messages.MgmtMessages.RegisterNode;
import dev.plinth.wire.messages.MgmtMessages.AccessKeyList;
import dev.plinth.wire.messages.MgmtMessages.ChainInfo;
import dev.plinth.wire.messages.MgmtMessages.CreateAccessKey;
import dev.plinth.wire.messages.MgmtMessages.DeleteAccessKey;
import dev.plinth.wire.messages.MgmtMessages.ListAccessKeys;
import dev.plinth.wire.messages.MgmtMessages.ClusterMap;
import dev.plinth.wire.messages.MgmtMessages.GetClusterMap;
import dev.plinth.wire.messages.MgmtMessages.Heartbeat;
import dev.plinth.wire.messages.MgmtMessages.NodeInfo;
import dev.plinth.wire.messages.MgmtMessages.PoolInfo;
import dev.plinth.wire.messages.MgmtMessages.TargetInfo;
import dev.plinth.wire.messages.MgmtMessages.TargetRate;
import dev.plinth.wire.messages.MgmtMessages.TargetState;
import dev.plinth.wire.messages.MgmtMessages.TargetUsage;
import dev.plinth.wire.messages.MgmtMessages.UpdatePool;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.regex.Pattern;

/**
 * The management role: nodes, targets, chains, pools and MDTs of the cluster, as one versioned
 * {@link ClusterMap} that clients and services fetch. Changes are persisted (atomically, by
 * rename) before they are visible.
 *
 * <p>Chains: every target is its own one-replica chain (chain id = target id). For wider layouts
 * mgmt forms chains of 2..{@code mgmt.chain-replicas-max} targets on distinct nodes, so that each
 * target heads at least one chain of each width once enough nodes exist; a chain's members never
 * change, only their states. A node that misses heartbeats for {@code mgmt.node-timeout-millis}
 * is marked offline and its targets leave their chains (moved to the end, OFFLINE), except the
 * last serving member of a chain, which stays: it alone holds every committed write, and the
 * chain waits for it. A returning target becomes SYNCING and serving again once it reports that it
 * has copied what it missed. Thread-safe: changes are serialized, readers see an immutable map.
 */
public final class MgmtService implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(MgmtService.class);
    private static final Pattern POOL_NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,63}");
    static final int FORMAT_VERSION = 1;
    private static final Pattern ACCESS_KEY_ID = Pattern.compile("[A-Za-z0-9._-]{3,128}");
    private static final String ACCESS_KEY_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    private static final String SECRET_KEY_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    private static final int ACCESS_KEYS_MAX = 10_000;
    private static final java.security.SecureRandom RANDOM = new java.security.SecureRandom();
    /** Target (and so one-replica chain) ids stay below this; wider chains are numbered from it. */
    public static final int WIDE_CHAIN_ID_BASE = 1_000_000;
    private static final int IDS_PER_REQUEST_MAX = 256;
    private static final long COMMIT_TIMEOUT_SECONDS = 10;

    /**
     * What is persisted; lists absent in older state files decode as null and start empty.
     * {@code changes} counts the changes committed so far: a change proposed through Raft names
     * the count it was made from and applies only if no other change came first.
     */
    record State(int formatVersion, long version, List<NodeInfo> nodes, List<TargetInfo> targets, List<PoolInfo> pools,
                 List<AccessKey> accessKeys, List<ChainInfo> chains, List<MdtInfo> mdts, int targetIdHighWater, int nodeIdHighWater,
                 long changes, List<MgmtMessages.EncryptionKey> encryptionKeys, List<MgmtMessages.ArchiveInfo> archives) {
        State {
            accessKeys = accessKeys == null ? List.of() : List.copyOf(accessKeys);
            encryptionKeys = encryptionKeys == null ? List.of() : List.copyOf(encryptionKeys);
            archives = archives == null ? List.of() : List.copyOf(archives);
            mdts = mdts == null ? List.of() : List.copyOf(mdts);
            if (chains == null) { // state files from before chains were kept: one chain per target
                chains = targets.stream().map(t -> new ChainInfo(t.targetId(), 1, List.of(new ChainMember(t.targetId(), MemberState.SERVING))))
                        .toList();
            }
        }

        State with(long nextVersion, List<NodeInfo> nextNodes, List<TargetInfo> nextTargets, List<PoolInfo> nextPools) {
            return new State(formatVersion, nextVersion, nextNodes, nextTargets, nextPools, accessKeys, chains, mdts, targetIdHighWater, nodeIdHighWater, changes, encryptionKeys, archives);
        }

        State withChains(List<ChainInfo> nextChains) {
            return new State(formatVersion, version, nodes, targets, pools, accessKeys, nextChains, mdts, targetIdHighWater, nodeIdHighWater, changes, encryptionKeys, archives);
        }

        State withMdts(List<MdtInfo> nextMdts) {
            return new State(formatVersion, version, nodes, targets, pools, accessKeys, chains, nextMdts, targetIdHighWater, nodeIdHighWater, changes, encryptionKeys, archives);
        }

        /** Ids handed out so far: never handed out again, even before the nodes or targets that got them register. */
        State withHighWater(int targets, int nodes) {
            return new State(formatVersion, version, this.nodes, this.targets, pools, accessKeys, chains, mdts, targets, nodes, changes, encryptionKeys, archives);
        }

        State nextChange() {
            return new State(formatVersion, version, nodes, targets, pools, accessKeys, chains, mdts, targetIdHighWater, nodeIdHighWater,
                    changes + 1, encryptionKeys, archives);
        }

        static State empty() {
            return new State(FORMAT_VERSION, 1, List.of(), List.of(), List.of(new PoolInfo(Layout.DEFAULT_POOL, List.of())), List.of(),
                    List.of(), List.of(), 0, 0, 0, List.of(), List.of());
        }

        /** Master keys are not part of the cluster map either. */
        State withEncryptionKeys(List<MgmtMessages.EncryptionKey> nextKeys) {
            return new State(formatVersion, version, nodes, targets, pools, accessKeys, chains, mdts, targetIdHighWater, nodeIdHighWater,
                    changes, nextKeys, archives);
        }

        /** Archives are not part of the cluster map: movers ask for them. */
        State withArchives(List<MgmtMessages.ArchiveInfo> nextArchives) {
            return new State(formatVersion, version, nodes, targets, pools, accessKeys, chains, mdts, targetIdHighWater, nodeIdHighWater,
                    changes, encryptionKeys, nextArchives);
        }

        /** Keys are not part of the cluster map, so changing them leaves its version as it is. */
        State withAccessKeys(List<AccessKey> nextKeys) {
            return new State(formatVersion, version, nodes, targets, pools, nextKeys, chains, mdts, targetIdHighWater, nodeIdHighWater, changes, encryptionKeys, archives);
        }
    }

    private final MgmtStateMachine stateMachine;
    /** The mgmt group this service is one replica of; null for a single mgmt. */
    private final RaftReplica raft;
    /** Whether this replica led at the last liveness check (a new leader gives every node a full timeout). */
    private boolean ledAtLastCheck;
    private final long nodeTimeoutNanos;
    private final int chainReplicasMax;
    /** When each node was last heard from (System.nanoTime); in memory: after a restart every node gets a full timeout. */
    private final Map<Integer, Long> lastHeard = new HashMap<>();
    /** Since when each offline target has been offline (System.nanoTime); after a restart, since the restart. */
    private final Map<Integer, Long> offlineSince = new HashMap<>();
    private final long targetLostNanos;
    private final long linkRejoinNanos;
    /** Since when each (chain, target) has been out of its chain while its node is online (leader's memory). */
    private final Map<List<Integer>, Long> outOfChainSince = new HashMap<>();
    /** Which nodes each node reported unreachable, and when (leader's memory, pruned to one node timeout). */
    private final Map<Integer, Map<Integer, Long>> unreachableReports = new HashMap<>();
    private final ScheduledExecutorService livenessChecker;
    private volatile ClusterMap map;
    private State state;
    /** Each target's byte counters at its last two heartbeats, for throughput now. */
    private final Map<Integer, long[]> lastCounters = new HashMap<>();
    private volatile List<TargetRate> rates = List.of();
    private final JobTable jobs = new JobTable();

    /** A single mgmt: its state in {@code directory}, no replicas. */
    public MgmtService(Path directory, Config config) {
        this(directory, config, List.of(), 0);
    }

    /**
     * One replica of a mgmt group when {@code raftPeers} is not empty: the group's Raft addresses,
     * the same list on every replica, this one's at {@code selfIndex}. Only the leader answers
     * requests; the others answer {@link ErrorCode#NOT_LEADER} and follow the log.
     */
    public MgmtService(Path directory, Config config, List<HostPort> raftPeers, int selfIndex) {
        requireNonNull(directory, "directory is null");
        this.nodeTimeoutNanos = TimeUnit.MILLISECONDS.toNanos(config.get(Settings.MGMT_NODE_TIMEOUT_MILLIS));
        this.chainReplicasMax = config.get(Settings.MGMT_CHAIN_REPLICAS_MAX);
        this.targetLostNanos = TimeUnit.MILLISECONDS.toNanos(config.get(Settings.MGMT_TARGET_LOST_MILLIS));
        this.linkRejoinNanos = TimeUnit.MILLISECONDS.toNanos(config.get(Settings.MGMT_LINK_REJOIN_MILLIS));
        try {
            Files.createDirectories(directory);
        } catch (IOException e) {
            throw new PlinthException(ErrorCode.IO_ERROR, "cannot create " + directory + ": " + e.getMessage(), e);
        }
        this.stateMachine = new MgmtStateMachine(directory.resolve("cluster-state.bin"));
        this.raft = raftPeers.isEmpty() ? null
                : RaftReplica.start(directory, new RaftReplica.GroupSpec("plinth-mgmt", "mgmt", true, 1_000, true), raftPeers, selfIndex, stateMachine);
        if (raft != null) {
            // entries replayed during start are in the state read below; later ones arrive here
            stateMachine.onApplied(applied -> {
                if (!raft.isLeader()) {
                    map = toMap(applied); // a follower shows the state as the log has it; the leader sets its own
                }
            });
        }
        state = stateMachine.state();
        map = toMap(state);
        startLivenessClocks(System.nanoTime());
        ledAtLastCheck = raft == null;
        this.livenessChecker = Executors.newSingleThreadScheduledExecutor(Thread.ofPlatform().name("mgmt-liveness").daemon().factory());
        long period = Math.max(50, TimeUnit.NANOSECONDS.toMillis(nodeTimeoutNanos) / 5);
        livenessChecker.scheduleWithFixedDelay(() -> {
            try {
                checkLiveness(System.nanoTime());
            } catch (RuntimeException e) {
                LOG.warn("liveness check failed: {}", e.toString());
            }
        }, period, period, TimeUnit.MILLISECONDS);
    }

    /**
     * Gives every node and every offline target a full timeout from {@code nowNanos}: when this
     * mgmt starts, and when it becomes the leader (it did not watch heartbeats before).
     */
    private void startLivenessClocks(long nowNanos) {
        lastHeard.clear();
        state.nodes().forEach(node -> lastHeard.put(node.nodeId(), nowNanos));
        offlineSince.clear();
        state.targets().stream().filter(t -> t.state() != TargetState.ONLINE).forEach(t -> offlineSince.put(t.targetId(), nowNanos));
    }

    /** Throws NOT_LEADER unless this mgmt may answer: a single one, or the ready leader of its group. */
    private void checkLeader() {
        if (raft != null && !raft.isLeaderReady()) {
            String leader = raft.leaderAddress();
            throw new PlinthException(ErrorCode.NOT_LEADER, "mgmt replica " + raft.selfAddress() + " does not lead its group"
                    + (leader == null ? " (no leader now)" : "; the leader's Raft address is " + leader));
        }
    }

    /** Before a change: this mgmt leads and starts from the state the log has (it may have been a follower until now). */
    private void lead() {
        checkLeader();
        State applied = stateMachine.state();
        if (applied.changes() != state.changes()) {
            state = applied;
            map = toMap(applied);
        }
    }

    /** The mgmt group's replicas as this one sees them: role, Raft address, leader; empty for a single mgmt. */
    public Map<String, Object> replication() {
        if (raft == null) {
            return Map.of();
        }
        String leader = raft.leaderAddress();
        return Map.of("self", raft.selfAddress(), "peers", raft.peerAddresses(), "leader", leader == null ? "" : leader,
                "role", raft.isLeader() ? "leader" : "follower");
    }

    public ClusterMap map() {
        return map;
    }

    /**
     * Registers (or re-registers at a new address) a node and its targets; new targets join the
     * default pool and get their one-replica chain, and wider chains are formed where they can be.
     */
    public synchronized ClusterMap registerNode(int nodeId, String rpcAddress, List<TargetUsage> targets, List<String> targetPaths) {
        lead();
        if (nodeId <= 0) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "node ids are positive, not " + nodeId);
        }
        if (targetPaths.size() != targets.size()) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "one path per target");
        }
        List<NodeInfo> nodes = new ArrayList<>(state.nodes().stream().filter(n -> n.nodeId() != nodeId).toList());
        nodes.add(new NodeInfo(nodeId, rpcAddress, true));
        nodes.sort((a, b) -> Integer.compare(a.nodeId(), b.nodeId()));
        List<TargetInfo> allTargets = new ArrayList<>(state.targets());
        List<PoolInfo> pools = new ArrayList<>(state.pools());
        List<ChainInfo> chains = new ArrayList<>(state.chains());
        for (int i = 0; i < targets.size(); i++) {
            TargetUsage usage = targets.get(i);
            if (usage.targetId() <= 0 || usage.targetId() >= WIDE_CHAIN_ID_BASE) {
                throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "target ids are 1.." + (WIDE_CHAIN_ID_BASE - 1) + ", not " + usage.targetId());
            }
            TargetInfo existing = allTargets.stream().filter(t -> t.targetId() == usage.targetId()).findFirst().orElse(null);
            if (existing != null && existing.nodeId() != nodeId) {
                throw new PlinthException(ErrorCode.ALREADY_EXISTS, "target " + usage.targetId() + " belongs to node " + existing.nodeId());
            }
            allTargets.remove(existing);
            allTargets.add(new TargetInfo(usage.targetId(), nodeId, targetPaths.get(i), usage.capacityBytes(), usage.usedBytes(), TargetState.ONLINE,
                    usage.filesystemId()));
            if (existing == null) {
                pools = changePool(pools, Layout.DEFAULT_POOL, members -> members.add(usage.targetId()));
                chains.add(new ChainInfo(usage.targetId(), 1, List.of(new ChainMember(usage.targetId(), MemberState.SERVING))));
            } else {
                chains = ChainTables.restarted(chains, usage.targetId());
                offlineSince.remove(usage.targetId());
            }
        }
        allTargets.sort((a, b) -> Integer.compare(a.targetId(), b.targetId()));
        State next = state.with(state.version() + 1, nodes, allTargets, pools).withHighWater(
                Math.max(state.targetIdHighWater(), targets.stream().mapToInt(TargetUsage::targetId).max().orElse(0)),
                Math.max(state.nodeIdHighWater(), nodeId));
        next = next.withChains(ChainTables.formWide(chains, next.targets(), chainReplicasMax, WIDE_CHAIN_ID_BASE));
        commit(next);
        lastHeard.put(nodeId, System.nanoTime());
        LOG.info("node {} registered at {} with targets {}", nodeId, rpcAddress, targets.stream().map(TargetUsage::targetId).toList());
        return map;
    }

    public synchronized ClusterMap registerMdt(RegisterMdt request) {
        lead();
        int mdtId = request.mdtId();
        if (mdtId < 0) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "MDT ids are not negative");
        }
        MdtInfo before = state.mdts().stream().filter(m -> m.mdtId() == mdtId).findFirst().orElse(null);
        if (request.raftAddress() != null && request.raftPeers().isEmpty()) {
            // a replica waiting to be added to its group (plinth meta --join): it serves nobody yet; it registers again once added
            LOG.info("MDT {} replica {} waits to join its group", mdtId, request.raftAddress());
            return map;
        }
        List<MdtReplica> replicas = new ArrayList<>();
        if (request.raftAddress() != null && !request.raftPeers().isEmpty()) {
            // the group's order; a peer keeps its last registration until it registers again
            for (String peer : request.raftPeers()) {
                if (peer.equals(request.raftAddress())) {
                    replicas.add(new MdtReplica(peer, request.rpcAddress()));
                } else if (before != null) {
                    before.replicas().stream().filter(r -> r.raftAddress().equals(peer)).findFirst().ifPresent(replicas::add);
                }
            }
        }
        List<MdtInfo> mdts = new ArrayList<>(state.mdts().stream().filter(m -> m.mdtId() != mdtId).toList());
        mdts.add(new MdtInfo(mdtId, request.rpcAddress(), replicas));
        mdts.sort((a, b) -> Integer.compare(a.mdtId(), b.mdtId()));
        State next = state.withMdts(mdts);
        commit(next.with(next.version() + 1, next.nodes(), next.targets(), next.pools()));
        LOG.info("MDT {} registered at {} (Raft {}; replicas {})", mdtId, request.rpcAddress(), request.raftAddress(),
                replicas.stream().map(MdtReplica::rpcAddress).toList());
        return map;
    }

    /** What an encoded cluster state (a backup's) holds, in a line; throws PROTOCOL_ERROR or NOT_SUPPORTED if it does not decode. */
    public static String describeState(byte[] encoded) {
        State decoded = dev.plinth.common.codec.RecordCodec.decode(State.class, encoded);
        if (decoded.formatVersion() != FORMAT_VERSION) {
            throw new PlinthException(ErrorCode.NOT_SUPPORTED, "cluster state format " + decoded.formatVersion());
        }
        return count(decoded.nodes()) + " nodes, " + count(decoded.targets()) + " targets, " + count(decoded.chains()) + " chains, "
                + count(decoded.mdts()) + " MDTs, map version " + decoded.version();
    }

    private static int count(List<?> list) {
        return list == null ? 0 : list.size();
    }

    /** The cluster state as {@code cluster-state.bin} holds it, for a backup: what a restore writes back there. */
    public synchronized byte[] stateForBackup() {
        lead();
        return dev.plinth.common.codec.RecordCodec.encode(state);
    }

    /** Reserves fresh ids above every id in use or handed out before. */
    public synchronized List<Integer> allocateIds(IdKind kind, int count) {
        lead();
        if (count < 1 || count > IDS_PER_REQUEST_MAX) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "ask for 1.." + IDS_PER_REQUEST_MAX + " ids");
        }
        boolean nodes = kind == IdKind.NODE;
        int used = nodes ? Math.max(state.nodeIdHighWater(), state.nodes().stream().mapToInt(NodeInfo::nodeId).max().orElse(0))
                : Math.max(state.targetIdHighWater(), state.targets().stream().mapToInt(TargetInfo::targetId).max().orElse(0));
        if ((long) used + count >= WIDE_CHAIN_ID_BASE) {
            throw new PlinthException(ErrorCode.NO_SPACE, "no " + kind.name().toLowerCase() + " ids left");
        }
        List<Integer> ids = new ArrayList<>();
        for (int i = 1; i <= count; i++) {
            ids.add(used + i);
        }
        commit(nodes ? state.withHighWater(state.targetIdHighWater(), used + count) : state.withHighWater(used + count, state.nodeIdHighWater()));
        return ids;
    }

    /** Notes a heartbeat: the node is alive, its usage is current; a node marked offline comes back. */
    public synchronized HeartbeatReply heartbeat(Heartbeat heartbeat) {
        lead();
        NodeInfo node = state.nodes().stream().filter(n -> n.nodeId() == heartbeat.nodeId()).findFirst().orElse(null);
        if (node == null) {
            throw new PlinthException(ErrorCode.STALE_HANDLE, "node " + heartbeat.nodeId() + " is not registered");
        }
        lastHeard.put(node.nodeId(), System.nanoTime());
        noteThroughput(heartbeat.targets(), System.nanoTime());
        List<TargetInfo> targets = new ArrayList<>();
        List<ChainInfo> chains = state.chains();
        boolean returned = !node.online();
        List<Integer> leftOut = new ArrayList<>();
        for (TargetInfo target : state.targets()) {
            TargetUsage usage = heartbeat.targets().stream().filter(u -> u.targetId() == target.targetId()).findFirst().orElse(null);
            if (usage == null && target.nodeId() == heartbeat.nodeId() && target.state() == TargetState.ONLINE) {
                // its node no longer serves it (it failed: an fsync error, say): out of its chains, as if its node were away
                chains = ChainTables.offline(chains, target.targetId());
                offlineSince.put(target.targetId(), System.nanoTime());
                targets.add(new TargetInfo(target.targetId(), target.nodeId(), target.path(), target.capacityBytes(), target.usedBytes(),
                        TargetState.OFFLINE, target.filesystemId()));
                leftOut.add(target.targetId());
            } else if (usage != null && target.nodeId() == heartbeat.nodeId()) {
                returned |= target.state() != TargetState.ONLINE;
                if (target.state() != TargetState.ONLINE) {
                    chains = ChainTables.returned(chains, target.targetId());
                    offlineSince.remove(target.targetId());
                }
                targets.add(new TargetInfo(target.targetId(), target.nodeId(), target.path(), usage.capacityBytes(), usage.usedBytes(),
                        TargetState.ONLINE, usage.filesystemId()));
            } else {
                targets.add(target);
            }
        }
        if (returned || !leftOut.isEmpty()) {
            List<NodeInfo> nodes = state.nodes().stream().map(n -> n.nodeId() == node.nodeId() ? new NodeInfo(n.nodeId(), n.rpcAddress(), true) : n)
                    .toList();
            commit(state.with(state.version() + 1, nodes, targets, state.pools()).withChains(chains));
            if (returned) {
                LOG.info("node {} is back online", node.nodeId());
            }
            if (!leftOut.isEmpty()) {
                LOG.warn("node {} no longer serves targets {}: marked offline", node.nodeId(), leftOut);
            }
        } else {
            // Usage changes often and is not worth a disk write: it is kept in memory and re-reported.
            state = state.with(state.version(), state.nodes(), targets, state.pools());
            map = toMap(state);
        }
        return new HeartbeatReply(map.version());
    }

    private void noteThroughput(List<TargetUsage> usages, long nowNanos) {
        Map<Integer, TargetRate> next = new java.util.TreeMap<>();
        rates.forEach(rate -> next.put(rate.targetId(), rate));
        for (TargetUsage usage : usages) {
            long[] last = lastCounters.put(usage.targetId(), new long[] {nowNanos, usage.readBytes(), usage.writtenBytes()});
            if (last != null && nowNanos > last[0] && usage.readBytes() >= last[1] && usage.writtenBytes() >= last[2]) {
                double seconds = (nowNanos - last[0]) / 1e9;
                next.put(usage.targetId(), new TargetRate(usage.targetId(), Math.round((usage.readBytes() - last[1]) / seconds),
                        Math.round((usage.writtenBytes() - last[2]) / seconds)));
            }
        }
        rates = List.copyOf(next.values());
    }

    /**
     * Marks nodes not heard from within the timeout offline and takes their targets out of their
     * chains; gives up on targets away too long; lets members that left over a link failure try again.
     */
    synchronized void checkLiveness(long nowNanos) {
        if (raft != null) {
            boolean leads = raft.isLeaderReady();
            boolean newlyLeading = leads && !ledAtLastCheck;
            ledAtLastCheck = leads;
            if (!leads) {
                return;
            }
            lead();
            if (newlyLeading) {
                startLivenessClocks(nowNanos); // liveness was not tracked here until now
                LOG.info("this mgmt replica ({}) leads the group now", raft.selfAddress());
            }
        }
        replaceLostTargets(nowNanos);
        rejoinAfterLinkFailures(nowNanos);
        List<Integer> silent = new ArrayList<>();
        for (NodeInfo node : state.nodes()) {
            Long heard = lastHeard.get(node.nodeId());
            if (node.online() && (heard == null || nowNanos - heard > nodeTimeoutNanos)) {
                silent.add(node.nodeId());
            }
        }
        if (silent.isEmpty()) {
            return;
        }
        List<NodeInfo> nodes = state.nodes().stream().map(n -> silent.contains(n.nodeId()) ? new NodeInfo(n.nodeId(), n.rpcAddress(), false) : n)
                .toList();
        List<ChainInfo> chains = state.chains();
        List<TargetInfo> targets = new ArrayList<>();
        for (TargetInfo target : state.targets()) {
            if (silent.contains(target.nodeId()) && target.state() == TargetState.ONLINE) {
                chains = ChainTables.offline(chains, target.targetId());
                offlineSince.put(target.targetId(), nowNanos);
                targets.add(new TargetInfo(target.targetId(), target.nodeId(), target.path(), target.capacityBytes(), target.usedBytes(),
                        TargetState.OFFLINE, target.filesystemId()));
            } else {
                targets.add(target);
            }
        }
        commit(state.with(state.version() + 1, nodes, targets, state.pools()).withChains(chains));
        LOG.warn("nodes {} sent no heartbeat for {} ms: marked offline", silent, TimeUnit.NANOSECONDS.toMillis(nodeTimeoutNanos));
    }

    /**
     * Targets offline for longer than {@code mgmt.target-lost-millis} are given up on: other
     * targets take their places in their chains and copy the chains' chunks, so that every chunk
     * has its replicas again.
     */
    private void replaceLostTargets(long nowNanos) {
        if (targetLostNanos <= 0) {
            return;
        }
        List<ChainInfo> chains = state.chains();
        List<Integer> lost = new ArrayList<>();
        for (int target : offlinePast(nowNanos)) {
            List<ChainInfo> next = ChainTables.replaceLost(chains, target, state.targets());
            if (!next.equals(chains)) {
                lost.add(target);
                chains = next;
            }
        }
        if (!lost.isEmpty()) {
            commit(state.withChains(chains).with(state.version() + 1, state.nodes(), state.targets(), state.pools()));
            LOG.warn("targets {} offline for more than {} ms: declared lost, their chains rebuild on other targets", lost,
                    TimeUnit.NANOSECONDS.toMillis(targetLostNanos));
        }
    }

    /**
     * Whether this mgmt answers for the cluster: a single one, or the leader of its group once
     * its liveness clocks started (the first check after it took over), so that work done only
     * by the leader (the erasure-code upkeep) starts from this term's view.
     */
    public synchronized boolean leads() {
        return raft == null || (raft.isLeaderReady() && ledAtLastCheck);
    }

    /**
     * Targets offline for longer than {@code mgmt.target-lost-millis}, as this replica sees them
     * while it leads (empty on a follower, and when targets are never declared lost): what the
     * erasure-code upkeep moves cells off. In memory only, like the clocks it reads: a new
     * leader or a restart gives every offline target a full timeout again.
     */
    public synchronized java.util.Set<Integer> lostTargets() {
        return targetLostNanos <= 0 || !leads() ? java.util.Set.of() : offlinePast(System.nanoTime());
    }

    /** Targets offline for longer than {@code mgmt.target-lost-millis} at {@code nowNanos}: lost ones. */
    private java.util.Set<Integer> offlinePast(long nowNanos) {
        java.util.Set<Integer> lost = new java.util.TreeSet<>();
        offlineSince.forEach((target, since) -> {
            if (nowNanos - since > targetLostNanos) {
                lost.add(target);
            }
        });
        return lost;
    }

    /**
     * A chain member cannot reach its successor: if both nodes are online (mgmt still hears from
     * both, so neither will be timed out), one leaves the chain ({@link ChainTables#unreachable}).
     * The reporter is blamed instead when it found members of two or more other nodes
     * unreachable within a node timeout: one node losing its links to many is likelier than many
     * links failing at once.
     */
    public synchronized ClusterMap unreachable(ReportUnreachable report) {
        lead();
        ChainInfo chain = map.chain(report.chainId());
        if (chain == null || chain.version() != report.chainVersion()) {
            throw new PlinthException(ErrorCode.CHAIN_CHANGED, "chain " + report.chainId() + " is at version "
                    + (chain == null ? "none" : chain.version()));
        }
        TargetInfo from = map.target(report.fromTarget());
        TargetInfo to = map.target(report.toTarget());
        if (from == null || to == null || from.state() != TargetState.ONLINE || to.state() != TargetState.ONLINE) {
            return map; // a node that is offline left its chains already, or will when its heartbeats time out
        }
        long now = System.nanoTime();
        Map<Integer, Long> reported = unreachableReports.computeIfAbsent(from.nodeId(), node -> new HashMap<>());
        reported.put(to.nodeId(), now);
        reported.values().removeIf(when -> now - when > nodeTimeoutNanos);
        boolean blameReporter = reported.size() >= 2;
        List<ChainInfo> chains = ChainTables.unreachable(state.chains(), report.chainId(), report.fromTarget(), report.toTarget(), blameReporter);
        if (chains.equals(state.chains())) {
            throw new PlinthException(ErrorCode.CHAIN_CHANGED, "targets " + report.fromTarget() + " and " + report.toTarget()
                    + " are not successive members of chain " + report.chainId() + " that take writes");
        }
        commit(state.withChains(chains).with(state.version() + 1, state.nodes(), state.targets(), state.pools()));
        int leaving = map.chain(report.chainId()).stateOf(report.toTarget()) == MemberState.OFFLINE ? report.toTarget() : report.fromTarget();
        outOfChainSince.put(List.of(report.chainId(), leaving), now);
        LOG.warn("target {} cannot reach target {} in chain {}, though both are online: target {} leaves the chain{}", report.fromTarget(),
                report.toTarget(), report.chainId(), leaving, blameReporter ? " (its node found several nodes unreachable)" : "");
        return map;
    }

    /**
     * Members that left a chain while their node stayed online (an unreachable link) try again
     * after {@code mgmt.link-rejoin-millis}: they sync, and serve once caught up.
     */
    private void rejoinAfterLinkFailures(long nowNanos) {
        List<ChainInfo> chains = state.chains();
        java.util.Set<List<Integer>> current = new java.util.HashSet<>();
        List<String> rejoined = new ArrayList<>();
        for (ChainInfo chain : state.chains()) {
            for (ChainMember member : chain.members()) {
                TargetInfo target = member.state() == MemberState.OFFLINE ? map.target(member.targetId()) : null;
                if (target == null || target.state() != TargetState.ONLINE) {
                    continue;
                }
                List<Integer> key = List.of(chain.chainId(), member.targetId());
                current.add(key);
                long since = outOfChainSince.computeIfAbsent(key, ignored -> nowNanos); // after a restart or a new leader: from now
                if (nowNanos - since > linkRejoinNanos) {
                    chains = ChainTables.rejoin(chains, chain.chainId(), member.targetId());
                    rejoined.add("target " + member.targetId() + " in chain " + chain.chainId());
                    current.remove(key);
                }
            }
        }
        outOfChainSince.keySet().retainAll(current);
        if (!rejoined.isEmpty()) {
            commit(state.withChains(chains).with(state.version() + 1, state.nodes(), state.targets(), state.pools()));
            LOG.info("trying again after an unreachable link: {} (syncing)", rejoined);
        }
    }

    /** A syncing member has caught up with its chain as of {@code chainVersion}: it serves from now on. */
    public synchronized ClusterMap chainSynced(ChainSynced report) {
        lead();
        ChainInfo chain = map.chain(report.chainId());
        if (chain == null || chain.stateOf(report.targetId()) == null) {
            throw new PlinthException(ErrorCode.NOT_FOUND, "target " + report.targetId() + " is not in chain " + report.chainId());
        }
        if (chain.version() != report.chainVersion() || chain.stateOf(report.targetId()) != MemberState.SYNCING) {
            throw new PlinthException(ErrorCode.CHAIN_CHANGED, "chain " + report.chainId() + " is at version " + chain.version());
        }
        commit(state.withChains(ChainTables.synced(state.chains(), report.chainId(), report.targetId()))
                .with(state.version() + 1, state.nodes(), state.targets(), state.pools()));
        LOG.info("target {} has synced chain {} and serves it", report.targetId(), report.chainId());
        return map;
    }

    public synchronized ClusterMap updatePool(UpdatePool request) {
        lead();
        String name = request.name();
        if (name == null || !POOL_NAME.matcher(name).matches()) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "pool names are 1-64 of [A-Za-z0-9._-], starting with a letter or digit");
        }
        boolean exists = state.pools().stream().anyMatch(p -> p.name().equals(name));
        for (int targetId : request.targetIds()) {
            if (state.targets().stream().noneMatch(t -> t.targetId() == targetId)) {
                throw new PlinthException(ErrorCode.NOT_FOUND, "no target " + targetId);
            }
        }
        List<PoolInfo> pools = new ArrayList<>(state.pools());
        switch (request.operation()) {
            case CREATE -> {
                if (exists) {
                    throw new PlinthException(ErrorCode.ALREADY_EXISTS, "pool '" + name + "'");
                }
                pools.add(new PoolInfo(name, List.copyOf(new LinkedHashSet<>(request.targetIds()))));
            }
            case ADD -> pools = changePool(requireExists(pools, name, exists), name, members -> members.addAll(request.targetIds()));
            case REMOVE -> pools = changePool(requireExists(pools, name, exists), name, members -> members.removeAll(request.targetIds()));
            case DELETE -> {
                requireExists(pools, name, exists);
                if (name.equals(Layout.DEFAULT_POOL)) {
                    throw new PlinthException(ErrorCode.OPERATION_NOT_PERMITTED, "the default pool cannot be deleted");
                }
                pools.removeIf(p -> p.name().equals(name));
            }
        }
        commit(state.with(state.version() + 1, state.nodes(), state.targets(), pools));
        return map;
    }

    // ---- S3 access keys

    /** Creates an access key; generates the id (20 characters) and secret (40) where not given. */
    public synchronized AccessKey createAccessKey(CreateAccessKey request) {
        lead();
        String id = request.accessKeyId() == null || request.accessKeyId().isEmpty() ? generate(ACCESS_KEY_ALPHABET, 20, "PK")
                : request.accessKeyId();
        String secretKey = request.secretKey() == null || request.secretKey().isEmpty() ? generate(SECRET_KEY_ALPHABET, 40, "")
                : request.secretKey();
        if (!ACCESS_KEY_ID.matcher(id).matches()) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "access key ids are 3-128 of [A-Za-z0-9._-]");
        }
        if (secretKey.length() < 8 || secretKey.length() > 128 || secretKey.chars().anyMatch(c -> c <= ' ' || c > '~')) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "secret keys are 8-128 printable ASCII characters");
        }
        if (request.uid() < 0 || request.gid() < 0) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "uid and gid must not be negative");
        }
        if (state.accessKeys().stream().anyMatch(k -> k.accessKeyId().equals(id))) {
            throw new PlinthException(ErrorCode.ALREADY_EXISTS, "access key '" + id + "'");
        }
        if (state.accessKeys().size() >= ACCESS_KEYS_MAX) {
            throw new PlinthException(ErrorCode.NO_SPACE, "the cluster holds " + ACCESS_KEYS_MAX + " access keys already");
        }
        AccessKey key = new AccessKey(id, secretKey, request.uid(), request.gid(),
                request.groups() == null ? List.of() : List.copyOf(request.groups()),
                request.description() == null ? "" : request.description(), System.currentTimeMillis());
        List<AccessKey> keys = new ArrayList<>(state.accessKeys());
        keys.add(key);
        commit(state.withAccessKeys(keys));
        return key;
    }

    /**
     * The master key for object encryption (S3 SSE): {@code keyId} 0 for the current one, made and
     * committed on first use (a cluster that never encrypts has none), else the one with that id.
     * Keys are never removed: objects wrapped with one stay readable.
     */
    public synchronized MgmtMessages.EncryptionKey encryptionKey(int keyId) {
        lead();
        List<MgmtMessages.EncryptionKey> keys = state.encryptionKeys();
        if (keyId == 0) {
            if (keys.isEmpty()) {
                byte[] key = new byte[32];
                RANDOM.nextBytes(key);
                commit(state.withEncryptionKeys(List.of(new MgmtMessages.EncryptionKey(1, key))));
                keys = state.encryptionKeys();
            }
            return keys.getLast();
        }
        return keys.stream().filter(k -> k.keyId() == keyId).findFirst()
                .orElseThrow(() -> new PlinthException(ErrorCode.NOT_FOUND, "no encryption key " + keyId));
    }

    /** The cluster's archives (HSM cold tiers), by id. */
    public synchronized List<MgmtMessages.ArchiveInfo> archives() {
        lead();
        return state.archives();
    }

    /** Adds an archive; its id and name must be new. The URI is checked by who uses it (the mover), not here. */
    public synchronized List<MgmtMessages.ArchiveInfo> addArchive(MgmtMessages.ArchiveInfo archive) {
        lead();
        if (archive.archiveId() < 1 || archive.archiveId() > 32767) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "archive ids are 1-32767, not " + archive.archiveId());
        }
        if (archive.name() == null || !archive.name().matches("[A-Za-z0-9][A-Za-z0-9._-]{0,63}")) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "an archive name is 1-64 of A-Z a-z 0-9 . _ -, not '" + archive.name() + "'");
        }
        if (archive.uri() == null || !(archive.uri().startsWith("file:/") || archive.uri().startsWith("s3://"))) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "an archive URI is file:///DIR or s3://BUCKET/PREFIX?..., not '" + archive.uri() + "'");
        }
        for (MgmtMessages.ArchiveInfo existing : state.archives()) {
            if (existing.archiveId() == archive.archiveId() || existing.name().equals(archive.name())) {
                throw new PlinthException(ErrorCode.ALREADY_EXISTS, "archive " + existing.archiveId() + " (" + existing.name() + ") exists");
            }
        }
        List<MgmtMessages.ArchiveInfo> archives = new ArrayList<>(state.archives());
        archives.add(archive);
        archives.sort(java.util.Comparator.comparingInt(MgmtMessages.ArchiveInfo::archiveId));
        commit(state.withArchives(archives));
        return state.archives();
    }

    /** Removes an archive from the list; the objects in it stay where they are (files archived there can no longer be restored). */
    public synchronized List<MgmtMessages.ArchiveInfo> removeArchive(int archiveId) {
        lead();
        List<MgmtMessages.ArchiveInfo> archives = new ArrayList<>(state.archives());
        if (!archives.removeIf(a -> a.archiveId() == archiveId)) {
            throw new PlinthException(ErrorCode.NOT_FOUND, "no archive " + archiveId);
        }
        commit(state.withArchives(archives));
        return state.archives();
    }

    public synchronized List<AccessKey> accessKeys() {
        lead();
        return state.accessKeys();
    }

    public synchronized void deleteAccessKey(String accessKeyId) {
        lead();
        List<AccessKey> keys = new ArrayList<>(state.accessKeys());
        if (!keys.removeIf(k -> k.accessKeyId().equals(accessKeyId))) {
            throw new PlinthException(ErrorCode.NOT_FOUND, "no access key '" + accessKeyId + "'");
        }
        commit(state.withAccessKeys(keys));
    }

    private static String generate(String alphabet, int length, String prefix) {
        StringBuilder out = new StringBuilder(prefix);
        while (out.length() < length) {
            out.append(alphabet.charAt(RANDOM.nextInt(alphabet.length())));
        }
        return out.toString();
    }

    private static List<PoolInfo> requireExists(List<PoolInfo> pools, String name, boolean exists) {
        if (!exists) {
            throw new PlinthException(ErrorCode.NOT_FOUND, "no pool '" + name + "'");
        }
        return pools;
    }

    private interface MemberChange {
        void apply(Set<Integer> members);
    }

    private static List<PoolInfo> changePool(List<PoolInfo> pools, String name, MemberChange change) {
        List<PoolInfo> result = new ArrayList<>();
        for (PoolInfo pool : pools) {
            if (pool.name().equals(name)) {
                Set<Integer> members = new LinkedHashSet<>(pool.targetIds());
                change.apply(members);
                result.add(new PoolInfo(name, members.stream().sorted().toList()));
            } else {
                result.add(pool);
            }
        }
        return result;
    }

    /**
     * Makes {@code next} (computed from {@code state}) the cluster state: saved, and with several
     * mgmt replicas committed by a majority, before anyone sees it.
     */
    private void commit(State next) {
        State proposed = next.nextChange();
        if (raft == null) {
            stateMachine.install(proposed);
        } else {
            byte[] result;
            try {
                result = raft.write(MgmtStateMachine.entry(state, proposed)).get(COMMIT_TIMEOUT_SECONDS, TimeUnit.SECONDS);
            } catch (java.util.concurrent.ExecutionException e) {
                throw e.getCause() instanceof PlinthException failure ? failure
                        : new PlinthException(ErrorCode.UNAVAILABLE, "cluster state change failed: " + e.getCause(), e.getCause());
            } catch (java.util.concurrent.TimeoutException e) {
                throw new PlinthException(ErrorCode.UNAVAILABLE, "cluster state change not committed in " + COMMIT_TIMEOUT_SECONDS
                        + " s (is a majority of mgmt replicas up?)");
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new PlinthException(ErrorCode.INTERRUPTED, "interrupted while committing a cluster state change");
            }
            if (!MgmtStateMachine.applied(result)) {
                state = stateMachine.state();
                map = toMap(state);
                throw new PlinthException(ErrorCode.NOT_LEADER, "another change to the cluster state came first; try again");
            }
        }
        state = proposed;
        map = toMap(proposed);
    }

    /** The map of {@code state}; throughput only for targets online (an offline one's last figures mean nothing now). */
    private ClusterMap toMap(State state) {
        List<TargetRate> online = rates.stream().filter(rate -> state.targets().stream()
                .anyMatch(t -> t.targetId() == rate.targetId() && t.state() == TargetState.ONLINE)).toList();
        return new ClusterMap(state.version(), state.nodes(), state.targets(), state.chains(), state.pools(), state.mdts(), online);
    }

    @Override
    public void close() {
        livenessChecker.shutdownNow();
        if (raft != null) {
            raft.close();
        }
    }

    private static final int HSM_FAILURES_KEPT = 20;
    private static final int HSM_MOVERS_KEPT = 64;
    private static final long HSM_MOVER_GONE_MILLIS = 60_000;

    private record HsmReportSeen(MgmtMessages.ReportHsm report, long receivedMillis) {}

    /** The movers' latest reports, by mover name (in memory: the status page's view, not state). */
    private final Map<String, HsmReportSeen> hsmReports = new java.util.HashMap<>();

    /**
     * HSM as the status page shows it: the archives, the queue as the latest report has it, the
     * movers heard from in the last minute, and the latest failures any of them reported. Any
     * replica answers (the page is served by followers too): the archives as this replica applied
     * them, the reports this replica received (movers report to the leader).
     */
    public Map<String, Object> hsmStatus() {
        Map<String, Object> out = new java.util.LinkedHashMap<>();
        out.put("archives", stateMachine.state().archives().stream().map(a -> Map.of("id", a.archiveId(), "name", a.name(), "uri", a.uri()))
                .toList());
        long now = System.currentTimeMillis();
        List<HsmReportSeen> live;
        synchronized (hsmReports) {
            live = hsmReports.values().stream().filter(r -> now - r.receivedMillis() < HSM_MOVER_GONE_MILLIS).toList();
        }
        HsmReportSeen latest = live.stream().max(java.util.Comparator.comparingLong(HsmReportSeen::receivedMillis)).orElse(null);
        out.put("waiting", latest == null ? 0 : latest.report().waiting());
        out.put("running", latest == null ? 0 : latest.report().running());
        out.put("movers", live.stream().map(r -> r.report().mover()).sorted().toList());
        out.put("failures", live.stream().flatMap(r -> r.report().failures().stream())
                .sorted(java.util.Comparator.comparingLong(MgmtMessages.HsmFailure::timeMillis).reversed()).limit(HSM_FAILURES_KEPT)
                .map(f -> Map.of("time_millis", f.timeMillis(), "inode", f.inode(), "kind", f.kind(), "error", f.error())).toList());
        return out;
    }

    /** Every job's I/O across the cluster, busiest first, from the clients' reports. */
    public List<dev.plinth.wire.messages.MgmtMessages.JobStat> jobStats() {
        return jobs.jobs(System.nanoTime());
    }

    /** Chains and nodes by state, as this mgmt sees them. */
    public void registerMetrics(io.prometheus.metrics.model.registry.PrometheusRegistry registry) {
        io.prometheus.metrics.core.metrics.GaugeWithCallback.builder().name("plinth_chains")
                .help("Chains by state: healthy (every member serving), rebuilding (a member syncing), degraded (a member away).")
                .labelNames("state").callback(callback -> {
                    ClusterMap current = map;
                    long rebuilding = current.chains().stream().filter(c -> c.members().stream().anyMatch(m -> m.state() == MemberState.SYNCING))
                            .count();
                    long healthy = current.chains().stream().filter(ChainInfo::healthy).count();
                    callback.call(healthy, "healthy");
                    callback.call(rebuilding, "rebuilding");
                    callback.call(current.chains().size() - healthy - rebuilding, "degraded");
                }).register(registry);
        io.prometheus.metrics.core.metrics.GaugeWithCallback.builder().name("plinth_pool_used_bytes")
                .help("Bytes the chunks on each pool's targets take on their disks: when it nears plinth_pool_capacity_bytes, "
                        + "migrate data to another pool or add targets.")
                .labelNames("pool").callback(callback -> {
                    ClusterMap current = map;
                    current.pools().forEach(pool -> callback.call(current.spaceOf(pool).usedBytes(), pool.name()));
                }).register(registry);
        io.prometheus.metrics.core.metrics.GaugeWithCallback.builder().name("plinth_pool_capacity_bytes")
                .help("Each pool's used bytes plus what its targets' file systems have free (each file system once).")
                .labelNames("pool").callback(callback -> {
                    ClusterMap current = map;
                    current.pools().forEach(pool -> callback.call(current.spaceOf(pool).capacityBytes(), pool.name()));
                }).register(registry);
        io.prometheus.metrics.core.metrics.GaugeWithCallback.builder().name("plinth_nodes")
                .help("Storage nodes by state (offline: no heartbeat within mgmt.node-timeout-millis).")
                .labelNames("state").callback(callback -> {
                    long online = map.nodes().stream().filter(NodeInfo::online).count();
                    callback.call(online, "online");
                    callback.call(map.nodes().size() - online, "offline");
                }).register(registry);
    }

    public void register(RpcDispatcher dispatcher) {
        dispatcher.register(GetClusterMap.class, (context, request, data) -> answer(() -> {
            checkLeader();
            return map;
        }));
        dispatcher.register(UpdatePool.class, (context, request, data) -> answer(() -> updatePool(request)));
        dispatcher.register(dev.plinth.wire.messages.BackupMessages.GetMgmtState.class, (context, request, data) -> answer(() ->
                new dev.plinth.wire.messages.BackupMessages.MgmtState(stateForBackup())));
        dispatcher.register(CreateAccessKey.class, (context, request, data) -> answer(() -> createAccessKey(request)));
        dispatcher.register(ListAccessKeys.class, (context, request, data) -> answer(() -> new AccessKeyList(accessKeys())));
        dispatcher.register(MgmtMessages.ListArchives.class, (context, request, data) -> answer(() -> new MgmtMessages.ArchiveList(archives())));
        dispatcher.register(MgmtMessages.AddArchive.class, (context, request, data) -> answer(() -> new MgmtMessages.ArchiveList(addArchive(request.archive()))));
        dispatcher.register(MgmtMessages.RemoveArchive.class, (context, request, data) ->
                answer(() -> new MgmtMessages.ArchiveList(removeArchive(request.archiveId()))));
        dispatcher.register(MgmtMessages.GetEncryptionKey.class, (context, request, data) -> answer(() -> encryptionKey(request.keyId())));
        dispatcher.register(DeleteAccessKey.class, (context, request, data) -> answer(() -> {
            deleteAccessKey(request.accessKeyId());
            return HandshakeMessages.EMPTY;
        }));
        dispatcher.register(Heartbeat.class, (context, request, data) -> answer(() -> heartbeat(request)));
        dispatcher.register(RegisterNode.class, (context, request, data) -> answer(() -> registerNode(request.nodeId(), request.rpcAddress(),
                request.targets(), request.targetPaths())));
        dispatcher.register(RegisterMdt.class, (context, request, data) -> answer(() -> registerMdt(request)));
        dispatcher.register(AllocateIds.class, (context, request, data) -> answer(() -> new AllocatedIds(allocateIds(request.kind(), request.count()))));
        dispatcher.register(ChainSynced.class, (context, request, data) -> answer(() -> chainSynced(request)));
        dispatcher.register(ReportUnreachable.class, (context, request, data) -> answer(() -> unreachable(request)));
        dispatcher.register(dev.plinth.wire.messages.MgmtMessages.ReportJobStats.class, (context, request, data) -> answer(() -> {
            if (request.jobs().size() > 10_000) {
                throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "a report holds at most 10,000 jobs");
            }
            checkLeader();
            jobs.report(request.clientId(), request.jobs(), System.nanoTime());
            return HandshakeMessages.EMPTY;
        }));
        dispatcher.register(MgmtMessages.ReportHsm.class, (context, request, data) -> answer(() -> {
            if (request.failures().size() > HSM_FAILURES_KEPT || request.mover().length() > 200) {
                throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "an HSM report holds at most " + HSM_FAILURES_KEPT + " failures");
            }
            checkLeader();
            synchronized (hsmReports) {
                hsmReports.put(request.mover(), new HsmReportSeen(request, System.currentTimeMillis()));
                if (hsmReports.size() > HSM_MOVERS_KEPT) { // the oldest report goes: a mover that stopped long ago
                    hsmReports.entrySet().stream().min(java.util.Comparator.comparingLong(e -> e.getValue().receivedMillis()))
                            .ifPresent(oldest -> hsmReports.remove(oldest.getKey()));
                }
            }
            return HandshakeMessages.EMPTY;
        }));
        dispatcher.register(dev.plinth.wire.messages.MgmtMessages.GetJobStats.class, (context, request, data) -> answer(() -> {
            checkLeader();
            return new dev.plinth.wire.messages.MgmtMessages.JobStatsReply(jobStats());
        }));
    }

    private static CompletableFuture<Reply> answer(java.util.function.Supplier<Record> action) {
        try {
            return CompletableFuture.completedFuture(Reply.of(action.get()));
        } catch (PlinthException e) {
            return CompletableFuture.failedFuture(e);
        }
    }
}
