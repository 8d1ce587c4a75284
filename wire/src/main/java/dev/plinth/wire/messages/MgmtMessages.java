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

    /** An ordered list of targets holding the same chunks, head first. Version changes with membership. */
    public record ChainInfo(int chainId, long version, List<Integer> targetIds) {}

    public record PoolInfo(String name, List<Integer> targetIds) {}

    public record ClusterMap(long version, List<NodeInfo> nodes, List<TargetInfo> targets, List<ChainInfo> chains,
                             List<PoolInfo> pools) {
        public TargetInfo target(int targetId) {
            return targets.stream().filter(t -> t.targetId() == targetId).findFirst().orElse(null);
        }

        public ChainInfo chain(int chainId) {
            return chains.stream().filter(c -> c.chainId() == chainId).findFirst().orElse(null);
        }

        public NodeInfo node(int nodeId) {
            return nodes.stream().filter(n -> n.nodeId() == nodeId).findFirst().orElse(null);
        }

        public PoolInfo pool(String name) {
            return pools.stream().filter(p -> p.name().equals(name)).findFirst().orElse(null);
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

    public record TargetUsage(int targetId, long capacityBytes, long usedBytes, long filesystemId) {}

    public record Heartbeat(int nodeId, List<TargetUsage> targets) {}

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

    public record AccessKeyList(List<AccessKey> keys) {}

    public record DeleteAccessKey(String accessKeyId) {}
}
