package dev.plinth.server;

import static java.util.Objects.requireNonNull;

import dev.plinth.client.ClientOptions;
import dev.plinth.client.PlinthClient;
import dev.plinth.common.Config;
import dev.plinth.common.Credentials;
import dev.plinth.gateway.S3Credentials;
import dev.plinth.gateway.S3Gateway;
import dev.plinth.common.ErrorCode;
import dev.plinth.common.PlinthException;
import dev.plinth.common.Settings;
import dev.plinth.raft.RaftReplica;
import dev.plinth.meta.MetaService;
import dev.plinth.meta.MetaStateMachine;
import dev.plinth.mgmt.MgmtService;
import dev.plinth.storage.ChunkStore;
import dev.plinth.storage.StorageNode;
import dev.plinth.storage.StorageService;
import dev.plinth.wire.ClusterSecret;
import dev.plinth.wire.HostPort;
import dev.plinth.wire.RpcConnections;
import dev.plinth.wire.RpcDispatcher;
import dev.plinth.wire.RpcServer;
import dev.plinth.wire.messages.MgmtMessages.AccessKey;
import dev.plinth.wire.messages.MgmtMessages.CreateAccessKey;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.List;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The all-in-one server: management, one MDT and N storage targets in one process, under one
 * data directory. The roles talk to each other through the same RPC layer as on a cluster
 * (storage heartbeats to mgmt, the metadata cleaner to storage), so nothing here is a shortcut
 * that the multi-node deployment would lack. Tests use it as the in-process mini cluster.
 *
 * <pre>
 *   DIR/cluster.secret      the cluster secret (mode 0600)
 *   DIR/s3-credentials      the S3 key pair made on first start (AWS credentials-file format, mode 0600)
 *   DIR/endpoints.json      where this server listens, written once it does
 *   DIR/mgmt/               cluster state
 *   DIR/meta/mdt0/          Raft log (raft/) and RocksDB (db/) of MDT 0
 *   DIR/targets/tN/         storage target N
 * </pre>
 */
public final class EmbeddedServer implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(EmbeddedServer.class);
    private static final int NODE_ID = 1;

    private final Path dataDirectory;
    private final List<AutoCloseable> resources = new ArrayList<>();
    private HostPort rpcAddress;
    private HostPort httpAddress;
    private HostPort raftAddress;
    private HostPort s3Address;
    private S3Gateway gateway;
    private Path secretFile;
    private MgmtService mgmt;
    private StorageNode storageNode;
    private StorageService storage;
    private MetaService meta;
    /** Every role of this process counts into it; /metrics shows it. */
    private final PrometheusRegistry metrics = new PrometheusRegistry();

    private EmbeddedServer(Path dataDirectory) {
        this.dataDirectory = dataDirectory;
    }

    public static EmbeddedServer start(Path dataDirectory, Config config) {
        dev.plinth.common.log.LogContext.node("server");
        requireNonNull(dataDirectory, "dataDirectory is null");
        EmbeddedServer server = new EmbeddedServer(dataDirectory.toAbsolutePath());
        try {
            server.startRoles(config);
            return server;
        } catch (RuntimeException | IOException e) {
            server.close();
            if (e instanceof PlinthException plinth) {
                throw plinth;
            }
            throw new PlinthException(ErrorCode.UNAVAILABLE, "server failed to start: " + e.getMessage(), e);
        }
    }

    private void startRoles(Config config) throws IOException {
        Files.createDirectories(dataDirectory);
        secretFile = dataDirectory.resolve("cluster.secret");
        ClusterSecret secret = ClusterSecret.readOrCreate(secretFile);
        RpcDispatcher dispatcher = new RpcDispatcher(metrics);

        mgmt = new MgmtService(dataDirectory.resolve("mgmt"), config);
        resources.add(mgmt);
        mgmt.register(dispatcher);
        mgmt.registerMetrics(metrics);

        RpcConnections connections = new RpcConnections(secret, "server-internal", config);
        resources.add(connections);
        storageNode = new StorageNode(NODE_ID, openTargets(config), connections, config, metrics);
        resources.add(storageNode);
        storage = storageNode.service();
        storage.register(dispatcher);

        Path mdtDirectory = dataDirectory.resolve("meta").resolve("mdt0");
        Files.createDirectories(mdtDirectory);
        raftAddress = new HostPort("127.0.0.1", raftPort(mdtDirectory));
        MetaStateMachine stateMachine = MetaStateMachine.forMdt(mdtDirectory.resolve("db"), 0, config);
        RaftReplica raft = RaftReplica.start(mdtDirectory, MetaStateMachine.groupSpec(0, config), List.of(raftAddress), 0, stateMachine);
        resources.add(raft);
        meta = new MetaService(raft, stateMachine, mgmt::map, connections, config);
        resources.add(meta);
        meta.register(dispatcher);
        meta.registerMetrics(metrics);

        RpcServer rpcServer = new RpcServer(dispatcher, secret, NODE_ID, config);
        resources.add(rpcServer);
        rpcAddress = rpcServer.start(HostPort.parse(config.get(Settings.RPC_LISTEN)));

        storageNode.start(rpcAddress, List.of(rpcAddress));
        mgmt.registerMdt(0, rpcAddress.toString());
        meta.start();

        httpAddress = startHttp(HostPort.parse(config.get(Settings.HTTP_LISTEN)));
        String s3Listen = config.get(Settings.S3_LISTEN);
        if (!s3Listen.isEmpty()) {
            startGateway(HostPort.parse(s3Listen), secret, config);
        }
        writeEndpoints();
        KnownServers.remember(rpcAddress, secretFile);
        HostPort remembered = rpcAddress;
        resources.add(() -> KnownServers.forget(remembered));
    }

    private List<ChunkStore> openTargets(Config config) throws IOException {
        Path targetsDirectory = dataDirectory.resolve("targets");
        Files.createDirectories(targetsDirectory);
        List<Path> existing;
        try (Stream<Path> children = Files.list(targetsDirectory)) {
            existing = children.filter(p -> Files.exists(p.resolve("target.properties"))).sorted().toList();
        }
        long capacity = config.get(Settings.TARGET_CAPACITY);
        ChunkStore.DirectIo directIo = ChunkStore.DirectIo.of(config);
        List<ChunkStore> targets = new ArrayList<>();
        if (existing.isEmpty()) {
            int count = config.get(Settings.SERVER_TARGETS);
            if (count < 1 || count > 256) {
                throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "server.targets must be 1..256");
            }
            for (int id = 1; id <= count; id++) {
                targets.add(ChunkStore.open(targetsDirectory.resolve("t" + id), id, capacity, config.get(Settings.TARGET_RESERVE_BYTES), directIo));
            }
        } else {
            for (Path path : existing) {
                targets.add(ChunkStore.open(path, -1, capacity, config.get(Settings.TARGET_RESERVE_BYTES), directIo));
            }
        }
        return targets;
    }

    /** The Raft port of MDT 0: the one used before if it is still free, so restarts keep their address. */
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

    private HostPort startHttp(HostPort listen) {
        HttpEndpoint http = HttpEndpoint.start(listen, metrics, () -> !mgmt.map().targets().isEmpty());
        resources.add(http);
        http.serveStatusPage(ClusterStatus.page(mgmt, rpcAddress.toString()));
        return http.address();
    }

    /**
     * The S3 gateway, over a client of this process (in-JVM channels), and on first start a key
     * pair for the user who runs the server, written where the AWS tools read credentials from.
     */
    private void startGateway(HostPort listen, ClusterSecret secret, Config config) throws IOException {
        PlinthClient client = PlinthClient.connect(new ClientOptions(rpcAddress, secret, Credentials.ROOT, config, "s3-gateway"));
        resources.add(client);
        Path credentialsFile = s3CredentialsFile();
        if (!Files.exists(credentialsFile)) {
            Credentials owner = ClientOptions.processCredentials();
            AccessKey key = client.createAccessKey(new CreateAccessKey(null, null, owner.uid(), owner.gid(), owner.groups(),
                    "made by plinth server on first start"));
            S3Credentials.write(credentialsFile, key);
        }
        gateway = S3Gateway.start(client, config, listen, metrics);
        resources.add(gateway);
        s3Address = gateway.address();
    }

    private void writeEndpoints() {
        Map<String, String> fields = new LinkedHashMap<>();
        fields.put("role", "server");
        fields.put("rpc", rpcAddress.toString());
        fields.put("http", httpAddress.toString());
        fields.put("raft", raftAddress.toString());
        if (s3Address != null) {
            fields.put("s3", s3Url());
        }
        fields.put("secretFile", secretFile.toString());
        RoleServer.writeEndpointsFile(dataDirectory.resolve("endpoints.json"), fields);
    }

    public HostPort rpcAddress() {
        return rpcAddress;
    }

    public HostPort httpAddress() {
        return httpAddress;
    }

    /** The S3 gateway's address, or null when it is off ({@code s3.listen} empty). */
    public HostPort s3Address() {
        return s3Address;
    }

    /** The S3 endpoint URL, or null when the gateway is off. */
    public String s3Url() {
        return s3Address == null ? null : (gateway.tls() ? "https://" : "http://") + s3Address;
    }

    /** Where the key pair made on first start is (AWS credentials-file format). */
    public Path s3CredentialsFile() {
        return dataDirectory.resolve("s3-credentials");
    }

    public Path secretFile() {
        return secretFile;
    }

    public Path dataDirectory() {
        return dataDirectory;
    }

    /** The registry this process's roles count into (a mount in this process may add its own metrics). */
    public PrometheusRegistry metrics() {
        return metrics;
    }

    public MgmtService mgmt() {
        return mgmt;
    }

    public StorageService storage() {
        return storage;
    }

    public MetaService meta() {
        return meta;
    }

    /** Stops the roles in reverse order of start. */
    @Override
    public void close() {
        // the storage node first: its heartbeats reach mgmt through the RPC server, which must outlive them
        if (storageNode != null && resources.remove(storageNode)) {
            resources.add(storageNode);
        }
        for (int i = resources.size() - 1; i >= 0; i--) {
            try {
                resources.get(i).close();
            } catch (Exception e) {
                LOG.warn("error while stopping: {}", e.toString());
            }
        }
        resources.clear();
    }
}
