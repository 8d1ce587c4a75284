package dev.plinth.server;

import static java.util.Objects.requireNonNull;

import dev.plinth.common.Clock;
import dev.plinth.common.Config;
import dev.plinth.common.ErrorCode;
import dev.plinth.common.PlinthException;
import dev.plinth.common.Settings;
import dev.plinth.meta.MetaService;
import dev.plinth.mgmt.MgmtService;
import dev.plinth.storage.StorageService;
import dev.plinth.wire.ClusterSecret;
import dev.plinth.wire.HostPort;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.io.IOException;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;
import java.util.stream.Stream;

/**
 * The all-in-one server: mgmt, MDT 0, a storage node of N targets and the S3 gateway on one
 * {@link ProcessHost}, under one data directory: the same role builders that
 * {@code plinth mgmt|meta|storage|gateway} run one per process. The roles talk to each other
 * through the same RPC layer as on a cluster (the MDT polls mgmt's map, storage heartbeats to
 * mgmt, the cleaner calls storage), so nothing here is a shortcut a cluster lacks. Tests use it
 * as the in-process mini cluster.
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
    private static final int NODE_ID = 1;

    private final Path dataDirectory;
    private final Path secretFile;
    private final ProcessHost host;
    private final MgmtRole mgmt;
    private final StorageRole storage;
    private final MetaRole meta;
    private final GatewayRole gateway;

    private EmbeddedServer(Path dataDirectory, Path secretFile, ProcessHost host) {
        this.dataDirectory = dataDirectory;
        this.secretFile = secretFile;
        this.host = host;
        this.mgmt = role(host, MgmtRole.class);
        this.storage = role(host, StorageRole.class);
        this.meta = role(host, MetaRole.class);
        this.gateway = role(host, GatewayRole.class);
    }

    private static <T extends Role> T role(ProcessHost host, Class<T> kind) {
        return host.roles().stream().filter(kind::isInstance).map(kind::cast).findFirst().orElse(null);
    }

    public static EmbeddedServer start(Path dataDirectory, Config config) {
        return start(dataDirectory, config, Clock.SYSTEM);
    }

    /** As above, its roles reading deadlines and leases against {@code clock} (a test's, to move them forward). */
    public static EmbeddedServer start(Path dataDirectory, Config config, Clock clock) {
        dev.plinth.common.log.LogContext.node("server");
        Path directory = requireNonNull(dataDirectory, "dataDirectory is null").toAbsolutePath();
        Path secretFile = directory.resolve("cluster.secret");
        ClusterSecret secret;
        List<Path> targets;
        try {
            Files.createDirectories(directory);
            secret = ClusterSecret.readOrCreate(secretFile);
            targets = targetDirectories(directory.resolve("targets"), config);
        } catch (IOException e) {
            throw new PlinthException(ErrorCode.IO_ERROR, "server failed to start: " + e.getMessage(), e);
        }
        String s3Listen = config.get(Settings.S3_LISTEN);
        ProcessHost host = ProcessHost.run(new ProcessHost("server", config, secret, clock), true, directory.resolve("endpoints.json"),
                Map.of("secretFile", secretFile.toString()), server -> {
                    MgmtRole.add(server, directory, List.of(), 0);
                    StorageRole.add(server, targets, IntStream.rangeClosed(1, targets.size()).boxed().toList(), NODE_ID, List.of());
                    MetaRole.add(server, directory, 0, List.of());
                    if (!s3Listen.isEmpty()) {
                        GatewayRole.add(server, null, HostPort.parse(s3Listen), directory.resolve("s3-credentials"));
                    }
                    if (config.get(Settings.SERVER_MOVER)) {
                        MoverRole.add(server, defaultArchives(directory, config));
                    }
                });
        KnownServers.remember(host.rpcAddress(), secretFile);
        return new EmbeddedServer(directory, secretFile, host);
    }

    /** What server.archives names, else DIR/archive: added as archives 1, 2, ... where mgmt has none yet. */
    private static List<String> defaultArchives(Path directory, Config config) {
        String listed = config.get(Settings.SERVER_ARCHIVES).trim();
        return listed.isEmpty() ? List.of(directory.resolve("archive").toUri().toString()) : List.of(listed.split("\\s+"));
    }

    /** The targets there are (those formatted), else t1..tN for N = server.targets. */
    private static List<Path> targetDirectories(Path targetsDirectory, Config config) throws IOException {
        Files.createDirectories(targetsDirectory);
        try (Stream<Path> children = Files.list(targetsDirectory)) {
            List<Path> existing = children.filter(p -> Files.exists(p.resolve("target.properties"))).sorted().toList();
            if (!existing.isEmpty()) {
                return existing;
            }
        }
        int count = config.get(Settings.SERVER_TARGETS);
        if (count < 1 || count > 256) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "server.targets must be 1..256");
        }
        List<Path> fresh = new ArrayList<>();
        for (int id = 1; id <= count; id++) {
            fresh.add(targetsDirectory.resolve("t" + id));
        }
        return fresh;
    }

    public HostPort rpcAddress() {
        return host.rpcAddress();
    }

    public HostPort httpAddress() {
        return host.httpAddress();
    }

    /** The S3 gateway's address, or null when it is off ({@code s3.listen} empty). */
    public HostPort s3Address() {
        return gateway == null ? null : gateway.gateway().address();
    }

    /** The S3 endpoint URL, or null when the gateway is off. */
    public String s3Url() {
        return gateway == null ? null : gateway.url();
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
        return host.metrics();
    }

    public MgmtService mgmt() {
        return mgmt.service();
    }

    public StorageService storage() {
        return storage.node().service();
    }

    public MetaService meta() {
        return meta.service();
    }

    /** Stops the roles, newest first, then the listeners. */
    @Override
    public void close() {
        HostPort address = host.rpcAddress();
        try {
            host.close();
        } finally {
            if (address != null) {
                KnownServers.forget(address);
            }
        }
    }

}
