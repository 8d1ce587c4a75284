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
    private final MetaService service;
    private final ClusterMapCache maps;
    private volatile boolean started;

    private MetaRole(int mdtId, List<HostPort> mgmtReplicas, HostPort raftAddress, RaftReplica raft, MetaService service, ClusterMapCache maps) {
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
        Path mdtDirectory = dataDirectory.resolve("meta").resolve("mdt" + mdtId);
        ClusterMapCache maps = new ClusterMapCache();
        RaftReplica raft = null;
        try {
            Files.createDirectories(mdtDirectory);
            List<HostPort> peers = raftPeers.isEmpty() ? List.of(new HostPort("127.0.0.1", raftPort(mdtDirectory))) : List.copyOf(raftPeers);
            HostPort raftAddress = peers.get(selfIndex);
            MetaStateMachine stateMachine = MetaStateMachine.forMdt(mdtDirectory.resolve("db"), mdtId, host.config());
            raft = RaftReplica.start(mdtDirectory, MetaStateMachine.groupSpec(mdtId, host.config()), peers, selfIndex, stateMachine);
            MetaService service = new MetaService(raft, stateMachine, maps, host.connections(), host.config(), host.clock());
            service.register(host.dispatcher());
            service.registerMetrics(host.metrics());
            return host.add(new MetaRole(mdtId, List.copyOf(mgmtReplicas), raftAddress, raft, service, maps));
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
        Await.mgmt(() -> mgmt.request(new RegisterMdt(mdtId, host.rpcAddress().toString(), raftAddress.toString(), raft.peerAddresses())));
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
        service.close();
        maps.close();
        raft.close();
    }
}
