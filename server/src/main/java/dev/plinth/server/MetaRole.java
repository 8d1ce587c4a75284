package dev.plinth.server;

import dev.plinth.common.ErrorCode;
import dev.plinth.common.PlinthException;
import dev.plinth.meta.MetaService;
import dev.plinth.meta.MetaStateMachine;
import dev.plinth.raft.RaftReplica;
import dev.plinth.wire.HostPort;
import dev.plinth.wire.MgmtClient;
import dev.plinth.wire.messages.MgmtMessages.RegisterMdt;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A metadata target: one Raft replica of MDT {@code mdtId} with its RocksDB, under
 * {@code DIR/meta/mdtN} (Raft log in {@code raft/}, store in {@code db/}). Once its host listens
 * it registers with mgmt and learns the cluster map from it ({@link ClusterMapCache}), in this
 * process or another.
 */
public final class MetaRole implements Role {
    private static final Logger LOG = LoggerFactory.getLogger(MetaRole.class);

    private final int mdtId;
    private final List<HostPort> mgmtReplicas;
    private final HostPort raftAddress;
    private final RaftReplica raft;
    private final MetaStateMachine stateMachine;
    private final MetaService service;
    private final ClusterMapCache maps;
    /** Registers again with mgmt when the group's members change (off Ratis's thread). */
    private final java.util.concurrent.ExecutorService registrar =
            java.util.concurrent.Executors.newSingleThreadExecutor(Thread.ofPlatform().name("mdt-register").daemon().factory());
    private volatile boolean started;

    private MetaRole(int mdtId, List<HostPort> mgmtReplicas, HostPort raftAddress, RaftReplica raft, MetaStateMachine stateMachine,
                     MetaService service, ClusterMapCache maps) {
        this.stateMachine = stateMachine;
        this.mdtId = mdtId;
        this.mgmtReplicas = mgmtReplicas;
        this.raftAddress = raftAddress;
        this.raft = raft;
        this.service = service;
        this.maps = maps;
    }

    /**
     * MDT {@code mdtId} under {@code dataDirectory}, a single replica, which reaches mgmt at
     * {@code mgmtReplicas} (empty: mgmt is in this process, at the host's own listener).
     */
    public static MetaRole add(ProcessHost host, Path dataDirectory, int mdtId, List<HostPort> mgmtReplicas) {
        return add(host, dataDirectory, mdtId, mgmtReplicas, List.of(), 0);
    }

    /**
     * As above, as the replica at {@code selfIndex} of the Raft group {@code raftPeers} (the same
     * list on every replica; empty: a single replica on a Raft port of its own choosing).
     */
    public static MetaRole add(ProcessHost host, Path dataDirectory, int mdtId, List<HostPort> mgmtReplicas, List<HostPort> raftPeers,
                               int selfIndex) {
        return add(host, dataDirectory, mdtId, mgmtReplicas, raftPeers, selfIndex, null);
    }

    /**
     * A new replica of MDT {@code mdtId} at Raft address {@code raftAddress}, waiting for the
     * group's leader to add it (`plinth mdt add-replica`); once restarted it is a member like any.
     */
    public static MetaRole join(ProcessHost host, Path dataDirectory, int mdtId, List<HostPort> mgmtReplicas, HostPort raftAddress) {
        return add(host, dataDirectory, mdtId, mgmtReplicas, List.of(), 0, raftAddress);
    }

    private static MetaRole add(ProcessHost host, Path dataDirectory, int mdtId, List<HostPort> mgmtReplicas, List<HostPort> raftPeers,
                                int selfIndex, HostPort joining) {
        Path mdtDirectory = dataDirectory.resolve("meta").resolve("mdt" + mdtId);
        ClusterMapCache maps = new ClusterMapCache();
        RaftReplica raft = null;
        try {
            Files.createDirectories(mdtDirectory);
            MetaStateMachine stateMachine = MetaStateMachine.forMdt(mdtDirectory.resolve("db"), mdtId, host.config());
            HostPort raftAddress;
            if (joining != null) {
                raftAddress = joining;
                raft = RaftReplica.join(mdtDirectory, MetaStateMachine.groupSpec(mdtId, host.config()), joining, stateMachine);
            } else {
                List<HostPort> peers = raftPeers.isEmpty() ? List.of(new HostPort("127.0.0.1", raftPort(mdtDirectory))) : List.copyOf(raftPeers);
                raftAddress = peers.get(selfIndex);
                raft = RaftReplica.start(mdtDirectory, MetaStateMachine.groupSpec(mdtId, host.config()), peers, selfIndex, stateMachine);
            }
            MetaService service = new MetaService(raft, stateMachine, maps, host.connections(), host.config(), host.clock());
            service.register(host.dispatcher());
            service.registerMetrics(host.metrics());
            return host.add(new MetaRole(mdtId, List.copyOf(mgmtReplicas), raftAddress, raft, stateMachine, service, maps));
        } catch (IOException e) {
            close(maps, raft);
            throw new PlinthException(ErrorCode.IO_ERROR, "cannot start MDT " + mdtId + ": " + e.getMessage(), e);
        } catch (RuntimeException e) {
            close(maps, raft);
            throw e;
        }
    }

    private static void close(ClusterMapCache maps, RaftReplica raft) {
        maps.close();
        if (raft != null) {
            raft.close();
        }
    }

    @Override
    public void start(ProcessHost host) {
        List<HostPort> replicas = mgmtReplicas.isEmpty() ? List.of(host.rpcAddress()) : mgmtReplicas;
        MgmtClient mgmt = new MgmtClient(host.connections(), replicas, host.config());
        Runnable register = () -> Await.mgmt(() -> mgmt.request(new RegisterMdt(mdtId, host.rpcAddress().toString(), raftAddress.toString(),
                raft.peerAddresses())));
        register.run();
        // every replica applies a change of members: each tells mgmt the group as it now is, so that clients find an added
        // replica and stop trying a removed one
        stateMachine.onMembershipChanged(() -> registrar.execute(() -> {
            try {
                register.run();
            } catch (RuntimeException e) {
                LOG.warn("registering MDT {} with mgmt after its members changed failed: {}", mdtId, e.toString());
            }
        }));
        maps.start(mgmt);
        service.start();
        started = true;
    }

    @Override
    public boolean ready() {
        return started;
    }

    @Override
    public Map<String, String> endpoints() {
        return Map.of("raft", raftAddress.toString());
    }

    public MetaService service() {
        return service;
    }

    /** Whether MDT {@code mdtId} under {@code dataDirectory} has Raft storage already (a --join is then a plain restart). */
    public static boolean formatted(Path dataDirectory, int mdtId) {
        return Files.isDirectory(dataDirectory.resolve("meta").resolve("mdt" + mdtId).resolve("raft"));
    }

    /** The Raft port of an MDT: the one used before if it is still free, so restarts keep their address. */
    static int raftPort(Path mdtDirectory) throws IOException {
        Path portFile = mdtDirectory.resolve("raft.port");
        if (Files.exists(portFile)) {
            int port = Integer.parseInt(Files.readString(portFile).trim());
            try (ServerSocket probe = new ServerSocket(port, 1, java.net.InetAddress.getLoopbackAddress())) {
                return port;
            } catch (IOException e) {
                LOG.warn("Raft port {} is taken, picking another", port);
            }
        }
        int port;
        try (ServerSocket probe = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            port = probe.getLocalPort();
        }
        Files.writeString(portFile, port + "\n");
        return port;
    }

    @Override
    public void close() {
        registrar.shutdownNow();
        service.close();
        maps.close();
        raft.close();
    }
}
