package dev.plinth.mgmt;

import static java.util.Objects.requireNonNull;

import dev.plinth.common.ErrorCode;
import dev.plinth.common.Layout;
import dev.plinth.common.PlinthException;
import dev.plinth.common.codec.RecordCodec;
import dev.plinth.wire.Reply;
import dev.plinth.wire.RpcDispatcher;
import dev.plinth.wire.messages.HandshakeMessages;
import dev.plinth.wire.messages.MgmtMessages.AccessKey;
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
import dev.plinth.wire.messages.MgmtMessages.TargetState;
import dev.plinth.wire.messages.MgmtMessages.TargetUsage;
import dev.plinth.wire.messages.MgmtMessages.UpdatePool;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.regex.Pattern;

/**
 * The management role: nodes, targets, chains and pools of the cluster, as one versioned
 * {@link ClusterMap} that clients and services fetch. Changes are persisted (atomically, by
 * rename) before they are visible. With one replica per chain each target is its own chain;
 * chain replication and a Raft-replicated mgmt come with the multi-node work. Thread-safe:
 * changes are serialized, readers see an immutable map.
 */
public final class MgmtService {
    private static final Pattern POOL_NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,63}");
    private static final int FORMAT_VERSION = 1;
    private static final Pattern ACCESS_KEY_ID = Pattern.compile("[A-Za-z0-9._-]{3,128}");
    private static final String ACCESS_KEY_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    private static final String SECRET_KEY_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    private static final int ACCESS_KEYS_MAX = 10_000;
    private static final java.security.SecureRandom RANDOM = new java.security.SecureRandom();

    /** What is persisted; the chain table is derived from it. */
    record State(int formatVersion, long version, List<NodeInfo> nodes, List<TargetInfo> targets, List<PoolInfo> pools,
                 List<AccessKey> accessKeys) {
        State {
            accessKeys = accessKeys == null ? List.of() : List.copyOf(accessKeys); // state files from before S3 keys
        }

        State with(long nextVersion, List<NodeInfo> nextNodes, List<TargetInfo> nextTargets, List<PoolInfo> nextPools) {
            return new State(formatVersion, nextVersion, nextNodes, nextTargets, nextPools, accessKeys);
        }

        /** Keys are not part of the cluster map, so changing them leaves its version as it is. */
        State withAccessKeys(List<AccessKey> nextKeys) {
            return new State(formatVersion, version, nodes, targets, pools, nextKeys);
        }
    }

    private final Path stateFile;
    private volatile ClusterMap map;
    private State state;

    public MgmtService(Path directory) {
        this.stateFile = requireNonNull(directory, "directory is null").resolve("cluster-state.bin");
        try {
            Files.createDirectories(directory);
            if (Files.exists(stateFile)) {
                state = RecordCodec.decode(State.class, Files.readAllBytes(stateFile));
                if (state.formatVersion() != FORMAT_VERSION) {
                    throw new PlinthException(ErrorCode.NOT_SUPPORTED, stateFile + " has format " + state.formatVersion());
                }
            } else {
                state = new State(FORMAT_VERSION, 1, List.of(), List.of(), List.of(new PoolInfo(Layout.DEFAULT_POOL, List.of())), List.of());
            }
        } catch (IOException e) {
            throw new PlinthException(ErrorCode.IO_ERROR, "cannot read cluster state " + stateFile + ": " + e.getMessage(), e);
        }
        map = toMap(state);
    }

    public ClusterMap map() {
        return map;
    }

    /** Registers (or re-registers at a new address) a node and its targets; new targets join the default pool. */
    public synchronized void registerNode(int nodeId, String rpcAddress, List<TargetUsage> targets, List<String> targetPaths) {
        List<NodeInfo> nodes = new ArrayList<>(state.nodes().stream().filter(n -> n.nodeId() != nodeId).toList());
        nodes.add(new NodeInfo(nodeId, rpcAddress, true));
        List<TargetInfo> allTargets = new ArrayList<>(state.targets());
        List<PoolInfo> pools = new ArrayList<>(state.pools());
        for (int i = 0; i < targets.size(); i++) {
            TargetUsage usage = targets.get(i);
            TargetInfo existing = allTargets.stream().filter(t -> t.targetId() == usage.targetId()).findFirst().orElse(null);
            if (existing != null && existing.nodeId() != nodeId) {
                throw new PlinthException(ErrorCode.ALREADY_EXISTS, "target " + usage.targetId() + " belongs to node " + existing.nodeId());
            }
            allTargets.remove(existing);
            allTargets.add(new TargetInfo(usage.targetId(), nodeId, targetPaths.get(i), usage.capacityBytes(), usage.usedBytes(), TargetState.ONLINE,
                    usage.filesystemId()));
            if (existing == null) {
                pools = changePool(pools, Layout.DEFAULT_POOL, members -> members.add(usage.targetId()));
            }
        }
        allTargets.sort((a, b) -> Integer.compare(a.targetId(), b.targetId()));
        commit(state.with(state.version() + 1, nodes, allTargets, pools));
    }

    public synchronized void heartbeat(Heartbeat heartbeat) {
        List<TargetInfo> targets = new ArrayList<>();
        boolean known = false;
        for (TargetInfo target : state.targets()) {
            TargetUsage usage = heartbeat.targets().stream().filter(u -> u.targetId() == target.targetId()).findFirst().orElse(null);
            if (usage != null && target.nodeId() == heartbeat.nodeId()) {
                known = true;
                targets.add(new TargetInfo(target.targetId(), target.nodeId(), target.path(), usage.capacityBytes(), usage.usedBytes(),
                        TargetState.ONLINE, usage.filesystemId()));
            } else {
                targets.add(target);
            }
        }
        if (!known) {
            throw new PlinthException(ErrorCode.STALE_HANDLE, "node " + heartbeat.nodeId() + " is not registered");
        }
        // Usage changes often and is not worth a disk write: it is kept in memory and re-reported.
        state = state.with(state.version(), state.nodes(), targets, state.pools());
        map = toMap(state);
    }

    public synchronized ClusterMap updatePool(UpdatePool request) {
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

    public synchronized List<AccessKey> accessKeys() {
        return state.accessKeys();
    }

    public synchronized void deleteAccessKey(String accessKeyId) {
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

    private void commit(State next) {
        try {
            Path temporary = stateFile.resolveSibling(stateFile.getFileName() + ".tmp");
            Files.deleteIfExists(temporary);
            // the state holds S3 secret keys: readable by the server's user only
            Files.createFile(temporary, java.nio.file.attribute.PosixFilePermissions.asFileAttribute(
                    java.nio.file.attribute.PosixFilePermissions.fromString("rw-------")));
            Files.write(temporary, RecordCodec.encode(next));
            try (var channel = java.nio.channels.FileChannel.open(temporary, java.nio.file.StandardOpenOption.WRITE)) {
                channel.force(true);
            }
            Files.move(temporary, stateFile, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } catch (IOException e) {
            throw new PlinthException(ErrorCode.IO_ERROR, "cannot save cluster state: " + e.getMessage(), e);
        }
        state = next;
        map = toMap(next);
    }

    private static ClusterMap toMap(State state) {
        List<ChainInfo> chains = state.targets().stream()
                .map(t -> new ChainInfo(t.targetId(), 1, List.of(t.targetId())))
                .toList();
        return new ClusterMap(state.version(), state.nodes(), state.targets(), chains, state.pools());
    }

    public void register(RpcDispatcher dispatcher) {
        dispatcher.register(GetClusterMap.class, (context, request, data) -> CompletableFuture.completedFuture(Reply.of(map)));
        dispatcher.register(UpdatePool.class, (context, request, data) -> answer(() -> updatePool(request)));
        dispatcher.register(CreateAccessKey.class, (context, request, data) -> answer(() -> createAccessKey(request)));
        dispatcher.register(ListAccessKeys.class, (context, request, data) -> answer(() -> new AccessKeyList(accessKeys())));
        dispatcher.register(DeleteAccessKey.class, (context, request, data) -> answer(() -> {
            deleteAccessKey(request.accessKeyId());
            return HandshakeMessages.EMPTY;
        }));
        dispatcher.register(Heartbeat.class, (context, request, data) -> {
            try {
                heartbeat(request);
                return CompletableFuture.completedFuture(Reply.of(HandshakeMessages.EMPTY));
            } catch (PlinthException e) {
                return CompletableFuture.failedFuture(e);
            }
        });
    }

    private static CompletableFuture<Reply> answer(java.util.function.Supplier<Record> action) {
        try {
            return CompletableFuture.completedFuture(Reply.of(action.get()));
        } catch (PlinthException e) {
            return CompletableFuture.failedFuture(e);
        }
    }
}
