package dev.plinth.server;

import dev.plinth.common.Config;
import dev.plinth.common.ErrorCode;
import dev.plinth.common.PlinthException;
import dev.plinth.common.Settings;
import dev.plinth.common.log.LogContext;
import dev.plinth.storage.ChunkStore;
import dev.plinth.storage.StorageNode;
import dev.plinth.wire.HostPort;
import dev.plinth.wire.MgmtClient;
import dev.plinth.wire.messages.MgmtMessages.AllocateIds;
import dev.plinth.wire.messages.MgmtMessages.AllocatedIds;
import dev.plinth.wire.messages.MgmtMessages.IdKind;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A storage node: its targets, chain replication, resync and scrubbing. This is the one place
 * that formats a target: a directory that is not one yet gets the next id given, else one mgmt
 * hands out; one that is keeps its own. The node's id likewise: given, else the one its targets
 * keep ({@code node.id}), else one from mgmt. Once its host listens, the node registers with mgmt.
 */
public final class StorageRole implements Role {
    private static final Logger LOG = LoggerFactory.getLogger(StorageRole.class);

    private final StorageNode node;
    private final List<HostPort> mgmtReplicas;
    private volatile boolean started;

    private StorageRole(StorageNode node, List<HostPort> mgmtReplicas) {
        this.node = node;
        this.mgmtReplicas = mgmtReplicas;
    }

    /**
     * A node serving {@code targetDirectories}; {@code targetIds} are the ids for those not
     * formatted yet, in order (when they run out, mgmt allocates); {@code nodeId} null: stored or
     * allocated. {@code mgmtReplicas} empty: mgmt is in this process (the host's own listener,
     * so ids must then be given).
     */
    public static StorageRole add(ProcessHost host, List<Path> targetDirectories, List<Integer> targetIds, Integer nodeId,
                                  List<HostPort> mgmtReplicas) {
        if (targetDirectories.isEmpty()) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "a storage node needs at least one target directory");
        }
        MgmtClient mgmt = mgmtReplicas.isEmpty() ? null : new MgmtClient(host.connections(), mgmtReplicas, host.config());
        List<ChunkStore> targets = new ArrayList<>();
        try {
            int id = nodeId != null ? nodeId : storedOrAllocatedNodeId(targetDirectories, mgmt);
            LogContext.node(host.name().equals("storage") ? "storage-" + id : host.name());
            for (Path directory : targetDirectories) {
                Files.createDirectories(directory);
                Files.writeString(directory.resolve("node.id"), id + "\n");
            }
            openTargets(targetDirectories, targetIds, mgmt, host.config(), targets);
            StorageNode node = new StorageNode(id, targets, host.connections(), host.config(), host.metrics());
            node.service().register(host.dispatcher());
            return host.add(new StorageRole(node, List.copyOf(mgmtReplicas)));
        } catch (IOException e) {
            targets.forEach(ChunkStore::close);
            throw new PlinthException(ErrorCode.IO_ERROR, "cannot start storage: " + e.getMessage(), e);
        } catch (RuntimeException e) {
            targets.forEach(ChunkStore::close);
            throw e;
        }
    }

    private static int storedOrAllocatedNodeId(List<Path> targetDirectories, MgmtClient mgmt) throws IOException {
        for (Path directory : targetDirectories) {
            Path stored = directory.resolve("node.id");
            if (Files.exists(stored)) {
                return Integer.parseInt(Files.readString(stored).trim());
            }
        }
        if (mgmt == null) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "a storage node beside mgmt needs its node id");
        }
        AllocatedIds ids = Await.mgmt(() -> mgmt.request(new AllocateIds(IdKind.NODE, 1)));
        return ids.ids().getFirst();
    }

    private static void openTargets(List<Path> directories, List<Integer> ids, MgmtClient mgmt, Config config, List<ChunkStore> targets) {
        long capacity = config.get(Settings.TARGET_CAPACITY);
        long reserve = config.get(Settings.TARGET_RESERVE_BYTES);
        ChunkStore.DirectIo directIo = ChunkStore.DirectIo.of(config);
        int nextId = 0;
        for (Path directory : directories) {
            int id = -1; // formatted already: the id is in the directory
            if (!Files.exists(directory.resolve("target.properties"))) {
                if (nextId < ids.size()) {
                    id = ids.get(nextId++);
                } else if (mgmt != null) {
                    id = Await.<AllocatedIds>mgmt(() -> mgmt.request(new AllocateIds(IdKind.TARGET, 1))).ids().getFirst();
                } else {
                    throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "no target id for " + directory);
                }
                LOG.info("formatting {} as target {}", directory, id);
            }
            targets.add(ChunkStore.open(directory, id, capacity, reserve, directIo));
        }
    }

    /** The node id of this role's targets: the host's node id on the wire. */
    @Override
    public int nodeId() {
        return node.nodeId();
    }

    @Override
    public void start(ProcessHost host) {
        node.start(host.rpcAddress(), mgmtReplicas.isEmpty() ? List.of(host.rpcAddress()) : mgmtReplicas);
        started = true;
    }

    @Override
    public boolean ready() {
        return started;
    }

    @Override
    public Map<String, String> endpoints() {
        return Map.of("node", Integer.toString(node.nodeId()),
                "targets", node.service().targets().stream().map(t -> Integer.toString(t.targetId())).collect(Collectors.joining(",")));
    }

    public StorageNode node() {
        return node;
    }

    @Override
    public void close() {
        node.close();
    }
}
