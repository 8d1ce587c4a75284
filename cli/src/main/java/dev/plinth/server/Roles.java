package dev.plinth.server;

import dev.plinth.common.Config;
import dev.plinth.common.ErrorCode;
import dev.plinth.common.PlinthException;
import dev.plinth.common.Settings;
import dev.plinth.raft.RaftReplica;
import dev.plinth.meta.MetaService;
import dev.plinth.meta.MetaStateMachine;
import dev.plinth.mgmt.MgmtService;
import dev.plinth.storage.ChunkStore;
import dev.plinth.storage.StorageNode;
import dev.plinth.wire.ClusterSecret;
import dev.plinth.common.log.LogContext;
import dev.plinth.wire.HostPort;
import dev.plinth.wire.MgmtClient;
import dev.plinth.wire.RpcConnections;
import dev.plinth.wire.messages.MgmtMessages.AllocateIds;
import dev.plinth.wire.messages.MgmtMessages.AllocatedIds;
import dev.plinth.wire.messages.MgmtMessages.ClusterMap;
import dev.plinth.wire.messages.MgmtMessages.GetClusterMap;
import dev.plinth.wire.messages.MgmtMessages.IdKind;
import dev.plinth.wire.messages.MgmtMessages.RegisterMdt;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The roles as separate processes: {@code plinth mgmt}, {@code plinth meta} and
 * {@code plinth storage}. Each talks to the others only over the RPC layer, with the cluster
 * secret; meta and storage find everything through mgmt.
 */
public final class Roles {
    private static final Logger LOG = LoggerFactory.getLogger(Roles.class);
    /** Node id of a management or metadata process on the wire (storage nodes have their own). */
    private static final int SERVICE_NODE_ID = 0;
    private static final long MGMT_WAIT_NANOS = TimeUnit.SECONDS.toNanos(60);

    private Roles() {}

    /**
     * The management service, its state under {@code dataDirectory}: a single one, or one replica
     * of a mgmt group when {@code raftPeers} (the group's Raft addresses, this one's at
     * {@code selfIndex}) is not empty.
     */
    public static RoleServer startMgmt(Path dataDirectory, ClusterSecret secret, Config config, List<HostPort> raftPeers, int selfIndex) {
        LogContext.node(raftPeers.isEmpty() ? "mgmt" : "mgmt-" + selfIndex);
        RoleServer server = new RoleServer("mgmt");
        try {
            MgmtService mgmt = server.own(new MgmtService(dataDirectory.resolve("mgmt"), config, raftPeers, selfIndex));
            mgmt.register(server.dispatcher());
            mgmt.registerMetrics(server.metrics());
            server.listen(secret, SERVICE_NODE_ID, config, () -> true, address -> ClusterStatus.page(mgmt, address.toString()));
            server.writeEndpoints(dataDirectory.resolve("endpoints.json"), Map.of());
            return server;
        } catch (RuntimeException e) {
            server.close();
            throw e;
        }
    }

    /** Metadata target {@code mdtId} (one Raft replica), under {@code dataDirectory}, registered with mgmt. */
    public static RoleServer startMeta(Path dataDirectory, int mdtId, List<HostPort> mgmtReplicas, ClusterSecret secret, Config config) {
        LogContext.node("meta-" + mdtId);
        RoleServer server = new RoleServer("meta");
        try {
            Path mdtDirectory = dataDirectory.resolve("meta").resolve("mdt" + mdtId);
            Files.createDirectories(mdtDirectory);
            RpcConnections connections = server.own(new RpcConnections(secret, "meta-" + mdtId, config));
            MgmtClient mgmt = new MgmtClient(connections, mgmtReplicas, config);
            MapCache maps = server.own(new MapCache(mgmt));
            HostPort raftAddress = new HostPort("127.0.0.1", EmbeddedServer.raftPort(mdtDirectory));
            MetaStateMachine stateMachine = MetaStateMachine.forMdt(mdtDirectory.resolve("db"), mdtId, config);
            RaftReplica raft = server.own(RaftReplica.start(mdtDirectory, MetaStateMachine.groupSpec(mdtId, config), List.of(raftAddress), 0, stateMachine));
            MetaService meta = server.own(new MetaService(raft, stateMachine, maps, connections, config));
            meta.register(server.dispatcher());
            meta.registerMetrics(server.metrics());
            HostPort address = server.listen(secret, SERVICE_NODE_ID, config, () -> true);
            awaitMgmt(() -> mgmt.request(new RegisterMdt(mdtId, address.toString())));
            meta.start();
            server.writeEndpoints(dataDirectory.resolve("endpoints.json"), Map.of("raft", raftAddress.toString()));
            return server;
        } catch (IOException e) {
            server.close();
            throw new PlinthException(ErrorCode.IO_ERROR, "cannot start meta: " + e.getMessage(), e);
        } catch (RuntimeException e) {
            server.close();
            throw e;
        }
    }

    /**
     * A storage node serving {@code targetDirectories}. A directory that is not a target yet is
     * formatted with the next of {@code indexes}, or an id mgmt hands out; the node id is
     * {@code nodeId}, else the one kept in the targets ({@code node.id}), else one from mgmt.
     */
    public static RoleServer startStorage(List<Path> targetDirectories, List<Integer> indexes, Integer nodeId,
                                          List<HostPort> mgmtReplicas, ClusterSecret secret, Config config, Path endpointsFile) {
        if (targetDirectories.isEmpty()) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "a storage node needs at least one --target");
        }
        RoleServer server = new RoleServer("storage");
        try {
            RpcConnections connections = server.own(new RpcConnections(secret, "storage", config));
            MgmtClient mgmt = new MgmtClient(connections, mgmtReplicas, config);
            int node = nodeId != null ? nodeId : storedOrAllocatedNodeId(targetDirectories, mgmt);
            LogContext.node("storage-" + node);
            for (Path directory : targetDirectories) {
                Files.createDirectories(directory);
                Files.writeString(directory.resolve("node.id"), node + "\n");
            }
            List<ChunkStore> targets = openTargets(targetDirectories, indexes, mgmt, config);
            StorageNode storage = server.own(new StorageNode(node, targets, connections, config, server.metrics()));
            storage.service().register(server.dispatcher());
            HostPort address = server.listen(secret, node, config, () -> true);
            storage.start(address, mgmtReplicas);
            if (endpointsFile != null) {
                server.writeEndpoints(endpointsFile, Map.of("node", Integer.toString(node),
                        "targets", targets.stream().map(t -> Integer.toString(t.targetId())).reduce((a, b) -> a + "," + b).orElse("")));
            }
            return server;
        } catch (IOException e) {
            server.close();
            throw new PlinthException(ErrorCode.IO_ERROR, "cannot start storage: " + e.getMessage(), e);
        } catch (RuntimeException e) {
            server.close();
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
        AllocatedIds ids = awaitMgmt(() -> mgmt.request(new AllocateIds(IdKind.NODE, 1)));
        return ids.ids().getFirst();
    }

    private static List<ChunkStore> openTargets(List<Path> directories, List<Integer> indexes, MgmtClient mgmt, Config config) {
        long capacity = config.get(Settings.TARGET_CAPACITY);
        ChunkStore.DirectIo directIo = ChunkStore.DirectIo.of(config);
        List<ChunkStore> targets = new ArrayList<>();
        int nextIndex = 0;
        try {
            for (Path directory : directories) {
                int id = -1; // formatted already: the id is in the directory
                if (!Files.exists(directory.resolve("target.properties"))) {
                    id = nextIndex < indexes.size() ? indexes.get(nextIndex++)
                            : Roles.<AllocatedIds>awaitMgmt(() -> mgmt.request(new AllocateIds(IdKind.TARGET, 1)))
                                    .ids().getFirst();
                    LOG.info("formatting {} as target {}", directory, id);
                }
                targets.add(ChunkStore.open(directory, id, capacity, config.get(Settings.TARGET_RESERVE_BYTES), directIo));
            }
            return targets;
        } catch (RuntimeException e) {
            targets.forEach(ChunkStore::close);
            throw e;
        }
    }

    /** Calls mgmt, retrying for a minute while it is unavailable (it may be starting too). */
    static <T> T awaitMgmt(Supplier<T> call) {
        long deadline = System.nanoTime() + MGMT_WAIT_NANOS;
        while (true) {
            try {
                return call.get();
            } catch (PlinthException e) {
                if (!e.code().retryable() || System.nanoTime() > deadline) {
                    throw e;
                }
                LOG.info("waiting for mgmt: {}", e.getMessage());
                try {
                    Thread.sleep(500);
                } catch (InterruptedException interrupted) {
                    Thread.currentThread().interrupt();
                    throw new PlinthException(ErrorCode.INTERRUPTED, "interrupted while waiting for mgmt");
                }
            }
        }
    }

    /** The cluster map as mgmt last gave it, fetched five times a second (metadata placement reads it). */
    private static final class MapCache implements Supplier<ClusterMap>, AutoCloseable {
        private final ScheduledExecutorService refresher = Executors.newSingleThreadScheduledExecutor(
                Thread.ofPlatform().name("mgmt-map").daemon().factory());
        private volatile ClusterMap map;

        MapCache(MgmtClient mgmt) {
            map = awaitMgmt(() -> mgmt.request(new GetClusterMap()));
            refresher.scheduleWithFixedDelay(() -> {
                try {
                    map = mgmt.request(new GetClusterMap());
                } catch (RuntimeException e) {
                    LOG.warn("cannot fetch the cluster map from mgmt: {}", e.getMessage());
                }
            }, 200, 200, TimeUnit.MILLISECONDS);
        }

        @Override
        public ClusterMap get() {
            return map;
        }

        @Override
        public void close() {
            refresher.shutdownNow();
        }
    }
}
