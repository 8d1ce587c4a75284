package dev.plinth.wire.messages;

import java.util.List;

/** Cluster membership, targets, chains and pools, as the management service keeps them. */
public final class MgmtMessages {
    private MgmtMessages() {}

    public enum TargetState { ONLINE, OFFLINE }

    public record NodeInfo(int nodeId, String rpcAddress, boolean online) {}

    /**
     * {@code filesystemId} names the file system the target lives on (its device number on its
     * node): targets that share one must count its free space once.
     */
    public record TargetInfo(int targetId, int nodeId, String path, long capacityBytes, long usedBytes, TargetState state,
                             long filesystemId) {
        public long freeBytes() {
            return Math.max(0, capacityBytes - usedBytes);
        }
    }

    /**
     * A target's place in a chain. SERVING members hold every committed write and serve reads;
     * a SYNCING member receives new writes (as whole chunks) while it copies what it missed, and
     * serves no reads; an OFFLINE member gets nothing until it returns and syncs.
     */
    public enum MemberState { SERVING, SYNCING, OFFLINE }

    public record ChainMember(int targetId, MemberState state) {}

    /**
     * An ordered list of targets holding the same chunks (CRAQ): writes enter at the head and are
     * acknowledged when the last member that takes writes has them; reads go to any serving
     * member. Members are kept in order SERVING (head first), SYNCING, OFFLINE. {@code version}
     * changes with every membership or state change, and every write carries the version its
     * sender knows, so a member with an older or newer table refuses it.
     */
    public record ChainInfo(int chainId, long version, List<ChainMember> members) {
        /** How many copies the chain keeps when every member is healthy. */
        public int replicas() {
            return members.size();
        }

        /** The members that serve reads, head first. */
        public List<Integer> targetIds() {
            return members.stream().filter(m -> m.state() == MemberState.SERVING).map(ChainMember::targetId).toList();
        }

        /** The members a write goes through, in order: the serving ones, then those syncing. */
        public List<Integer> writeTargets() {
            return members.stream().filter(m -> m.state() != MemberState.OFFLINE).map(ChainMember::targetId).toList();
        }

        public MemberState stateOf(int targetId) {
            return members.stream().filter(m -> m.targetId() == targetId).map(ChainMember::state).findFirst().orElse(null);
        }

        /** Whether every member is serving. */
        public boolean healthy() {
            return members.stream().allMatch(m -> m.state() == MemberState.SERVING);
        }
    }

    /**
     * Where metadata target {@code mdtId} is served: {@code replicas} are the replicas of its Raft
     * group that registered, in the group's order, of which the leader answers;
     * {@code rpcAddress} is the one that registered last (the only one a single replica has).
     */
    public record MdtInfo(int mdtId, String rpcAddress, List<MdtReplica> replicas) {
        public MdtInfo {
            replicas = replicas == null ? List.of() : List.copyOf(replicas);
        }

        /** The RPC addresses to try, in order. */
        public List<String> rpcAddresses() {
            return replicas.isEmpty() ? List.of(rpcAddress) : replicas.stream().map(MdtReplica::rpcAddress).toList();
        }
    }

    /** One replica of an MDT's Raft group: its Raft address (its name in the group) and where it answers requests. */
    public record MdtReplica(String raftAddress, String rpcAddress) {}

    public record PoolInfo(String name, List<Integer> targetIds) {}

    /** A pool's space: bytes its targets' chunks take on their disks, and what those disks have free. */
    public record PoolSpace(long usedBytes, long freeBytes) {
        public long capacityBytes() {
            return usedBytes + freeBytes;
        }
    }

    /** Bytes per second read from and written to a target between its node's last two heartbeats. */
    public record TargetRate(int targetId, long readBytesPerSecond, long writeBytesPerSecond) {}

    /**
     * The cluster as mgmt knows it. {@code version} changes with membership, states, chains and
     * pools; usage and {@code rates} are refreshed by heartbeats without a new version.
     */
    public record ClusterMap(long version, List<NodeInfo> nodes, List<TargetInfo> targets, List<ChainInfo> chains,
                             List<PoolInfo> pools, List<MdtInfo> mdts, List<TargetRate> rates) {
        public TargetRate rate(int targetId) {
            return rates.stream().filter(r -> r.targetId() == targetId).findFirst().orElse(null);
        }

        public MdtInfo mdt(int mdtId) {
            return mdts.stream().filter(m -> m.mdtId() == mdtId).findFirst().orElse(null);
        }

        public TargetInfo target(int targetId) {
            return targets.stream().filter(t -> t.targetId() == targetId).findFirst().orElse(null);
        }

        public ChainInfo chain(int chainId) {
            for (ChainInfo chain : chains) { // a plain loop: storage looks up a chain on every chunk write
                if (chain.chainId() == chainId) {
                    return chain;
                }
            }
            return null;
        }

        public NodeInfo node(int nodeId) {
            return nodes.stream().filter(n -> n.nodeId() == nodeId).findFirst().orElse(null);
        }

        public PoolInfo pool(String name) {
            return pools.stream().filter(p -> p.name().equals(name)).findFirst().orElse(null);
        }

        /** Bytes the targets of {@code pool} hold and have free (a file system's free space once): what status and the metrics show. */
        public PoolSpace spaceOf(PoolInfo pool) {
            List<TargetInfo> members = pool.targetIds().stream().map(this::target).filter(java.util.Objects::nonNull).toList();
            return new PoolSpace(members.stream().mapToLong(TargetInfo::usedBytes).sum(), freeBytes(members));
        }

        /** How many distinct storage nodes hold the targets of {@code pool}. */
        public int nodesOf(PoolInfo pool) {
            return (int) pool.targetIds().stream().map(this::target).filter(java.util.Objects::nonNull).map(TargetInfo::nodeId).distinct().count();
        }
    }

    public record GetClusterMap() {}

    public enum PoolOperation { CREATE, ADD, REMOVE, DELETE }

    public record UpdatePool(PoolOperation operation, String name, List<Integer> targetIds) {}

    /**
     * Free bytes of a set of targets, counting each file system once: targets on one disk each
     * report that disk's free space, and a sum would show it several times over.
     */
    public static long freeBytes(java.util.Collection<TargetInfo> targets) {
        java.util.Map<List<Long>, Long> byFilesystem = new java.util.HashMap<>();
        for (TargetInfo target : targets) {
            byFilesystem.merge(List.of((long) target.nodeId(), target.filesystemId()), target.freeBytes(), Math::max);
        }
        return byFilesystem.values().stream().mapToLong(Long::longValue).sum();
    }

    /** A target's space, and the bytes read from and written to it since its node started (for throughput now). */
    public record TargetUsage(int targetId, long capacityBytes, long usedBytes, long filesystemId, long readBytes, long writtenBytes) {}

    /** Sent every second by each storage node; the reply says which cluster map is current. */
    public record Heartbeat(int nodeId, List<TargetUsage> targets) {}

    public record HeartbeatReply(long mapVersion) {}

    /** What one client did for one job since it started: bytes and operations (cumulative). */
    public record JobCounters(String jobId, long readBytes, long writeBytes, long reads, long writes, long metadataOperations) {}

    /** A client's per-job counters, sent every few seconds; mgmt turns them into cluster-wide rates per job. */
    public record ReportJobStats(long clientId, String clientName, List<JobCounters> jobs) {}

    public record GetJobStats() {}

    /** One job across the cluster: totals since its clients started, and rates over the last reports. */
    public record JobStat(String jobId, int clients, long readBytes, long writeBytes, long operations, long readBytesPerSecond,
                          long writeBytesPerSecond, long operationsPerSecond) {}

    public record JobStatsReply(List<JobStat> jobs) {}

    /**
     * A storage node announcing itself and its targets (at start, and after mgmt forgot it);
     * {@code targetPaths} are parallel to {@code targets}. New targets join the default pool.
     */
    public record RegisterNode(int nodeId, String rpcAddress, List<TargetUsage> targets, List<String> targetPaths) {}

    /**
     * A replica of MDT {@code mdtId} announcing where it answers ({@code rpcAddress}), its Raft
     * address and its group's ({@code raftPeers}, in order): replicas no longer in the group drop
     * out of the MDT's entry.
     */
    public record RegisterMdt(int mdtId, String rpcAddress, String raftAddress, List<String> raftPeers) {
        public RegisterMdt {
            raftPeers = raftPeers == null ? List.of() : List.copyOf(raftPeers);
        }
    }

    public enum IdKind { NODE, TARGET }

    /** Reserves {@code count} fresh node or target ids (for storage nodes given no {@code --index}). */
    public record AllocateIds(IdKind kind, int count) {}

    public record AllocatedIds(List<Integer> ids) {}

    /**
     * A syncing member reporting that it holds everything its chain had at {@code chainVersion};
     * mgmt makes it serving unless the chain changed meanwhile.
     */
    public record ChainSynced(int chainId, int targetId, long chainVersion) {}

    /**
     * A chain member that cannot reach its successor (no connection, or no answer in time) while
     * both still heartbeat: mgmt decides which of the two leaves the chain (at
     * {@code chainVersion}), so that the chain can take writes again.
     */
    public record ReportUnreachable(int chainId, long chainVersion, int fromTarget, int toTarget) {}

    /**
     * An S3 access key of the gateway: requests signed with it act as {@code uid}/{@code gid}, so
     * POSIX permissions apply to S3 as they do to the mount. The secret is kept by mgmt because
     * SigV4 verification needs it (as every S3 server does); mgmt's state file is mode 0600.
     */
    public record AccessKey(String accessKeyId, String secretKey, int uid, int gid, List<Integer> groups, String description,
                            long createdMillis) {}

    /** Creates a key; a null or empty id and secret are generated. */
    public record CreateAccessKey(String accessKeyId, String secretKey, int uid, int gid, List<Integer> groups, String description) {}

    public record ListAccessKeys() {}

    /**
     * Asks for the cluster's master key for object encryption: {@code keyId} 0 for the current one
     * (made on first use), else that one. Only processes holding the cluster secret can ask.
     */
    public record GetEncryptionKey(int keyId) {}

    /** A cluster master key: its id (kept with what it wraps) and 32 bytes of AES-256 key. */
    public record EncryptionKey(int keyId, byte[] key) {}

    public record AccessKeyList(List<AccessKey> keys) {}

    /** An HSM archive (cold tier): a number files name it by, a name, and where it is ({@code file:///DIR} or {@code s3://BUCKET/PREFIX?...}). */
    public record ArchiveInfo(int archiveId, String name, String uri) {}

    public record ListArchives() {}

    public record AddArchive(ArchiveInfo archive) {}

    public record RemoveArchive(int archiveId) {}

    public record ArchiveList(List<ArchiveInfo> archives) {}

    /** What a mover reports every few seconds, for the status page: the queue as it sees it, and its latest failures. */
    public record ReportHsm(String mover, int waiting, int running, List<HsmFailure> failures) {}

    /** One failed HSM action: when, on which inode, of which kind, and why. */
    public record HsmFailure(long timeMillis, String inode, String kind, String error) {}

    public record DeleteAccessKey(String accessKeyId) {}
}
