package dev.plinth.server;

import dev.plinth.common.Json;
import static java.util.Objects.requireNonNull;

import dev.plinth.common.Clock;
import dev.plinth.common.Config;
import dev.plinth.common.Settings;
import dev.plinth.wire.ClusterSecret;
import dev.plinth.wire.HostPort;
import dev.plinth.wire.RpcConnections;
import dev.plinth.wire.RpcDispatcher;
import dev.plinth.wire.RpcServer;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What every Plinth process that serves has, whichever roles it runs: one RPC listener (all the
 * process's services on one port, one dispatcher), outgoing connections with the cluster
 * secret, a metrics registry, an HTTP endpoint for metrics, health and (with mgmt) the status
 * page, its addresses written to an endpoints file (ports may be ephemeral), and a stop that
 * stops its roles, newest first, before its listeners.
 *
 * <p>Life ({@link #run}): roles are added (each registers its services), the host listens, the
 * roles start, the endpoints file is written; {@link #close} undoes whatever of that happened.
 */
public final class ProcessHost implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(ProcessHost.class);

    private final String name;
    private final Config config;
    private final ClusterSecret secret;
    private final Clock clock;
    private final PrometheusRegistry metrics = new PrometheusRegistry();
    private final RpcDispatcher dispatcher = new RpcDispatcher(metrics);
    private final List<Role> roles = new ArrayList<>();
    /** The host's own listeners and connections: closed after every role. */
    private final List<AutoCloseable> resources = new ArrayList<>();
    private RpcConnections connections;
    private HostPort rpcAddress;
    private HostPort httpAddress;

    public ProcessHost(String name, Config config, ClusterSecret secret) {
        this(name, config, secret, Clock.SYSTEM);
    }

    /** As above, with the clock the roles read deadlines and leases against (a test's, to move them forward). */
    public ProcessHost(String name, Config config, ClusterSecret secret, Clock clock) {
        this.clock = requireNonNull(clock, "clock is null");
        this.name = requireNonNull(name, "name is null");
        this.config = requireNonNull(config, "config is null");
        this.secret = requireNonNull(secret, "secret is null");
    }

    public String name() {
        return name;
    }

    public Config config() {
        return config;
    }

    public Clock clock() {
        return clock;
    }

    public ClusterSecret secret() {
        return secret;
    }

    /** The registry every role of this process counts into; /metrics shows it. */
    public PrometheusRegistry metrics() {
        return metrics;
    }

    public RpcDispatcher dispatcher() {
        return dispatcher;
    }

    /** Connections to other processes (and to this one's own listener), shared by the roles. */
    public synchronized RpcConnections connections() {
        if (connections == null) {
            connections = own(new RpcConnections(secret, name, config));
        }
        return connections;
    }

    /** Adds a role made on this host; it is started by {@link #start} and stopped (before the listeners) by {@link #close}. */
    public <T extends Role> T add(T role) {
        roles.add(requireNonNull(role, "role is null"));
        return role;
    }

    /** Closed with the host, after its roles. */
    public <T extends AutoCloseable> T own(T resource) {
        resources.add(resource);
        return resource;
    }

    /**
     * Makes a process of roles and runs them: {@code addRoles} adds them (each registers its
     * services), then the host listens (RPC unless {@code rpc} is false, as for a gateway of its
     * own, which serves only S3), starts them, and writes its endpoints file (if given). A failure
     * anywhere stops what started.
     */
    public static ProcessHost run(String name, Config config, ClusterSecret secret, boolean rpc, Path endpointsFile,
                                  Map<String, String> moreEndpoints, java.util.function.Consumer<ProcessHost> addRoles) {
        return run(new ProcessHost(name, config, secret), rpc, endpointsFile, moreEndpoints, addRoles);
    }

    /** As above, on a host made already (with its own clock). */
    public static ProcessHost run(ProcessHost host, boolean rpc, Path endpointsFile, Map<String, String> moreEndpoints,
                                  java.util.function.Consumer<ProcessHost> addRoles) {
        try {
            addRoles.accept(host);
            host.listen(rpc);
            host.start();
            if (endpointsFile != null) {
                host.writeEndpoints(endpointsFile, moreEndpoints);
            }
            return host;
        } catch (RuntimeException e) {
            host.close();
            throw e;
        }
    }

    /**
     * Starts the RPC listener ({@code rpc.listen}; the node id on the wire is its storage role's,
     * else 0) and the HTTP endpoint ({@code http.listen}; a warning, not a failure, where its port
     * is taken), with the status page where a role has one.
     */
    private void listen(boolean rpc) {
        if (rpc) {
            int nodeId = roles.stream().mapToInt(Role::nodeId).max().orElse(0);
            RpcServer server = own(new RpcServer(dispatcher, secret, nodeId, config));
            rpcAddress = server.start(HostPort.parse(config.get(Settings.RPC_LISTEN)));
        }
        HttpEndpoint http = HttpEndpoint.startOrWarn(config.get(Settings.HTTP_LISTEN), metrics, this::ready);
        if (http != null) {
            own(http);
            httpAddress = http.address();
            for (Role role : roles) {
                Supplier<Map<String, Object>> page = rpcAddress == null ? null : role.statusPage(rpcAddress);
                if (page != null) {
                    http.serveStatusPage(page);
                }
            }
        }
    }

    /** Starts the roles, in the order they were added, once the host listens. */
    private void start() {
        for (Role role : roles) {
            role.start(this);
        }
    }

    private boolean ready() {
        return roles.stream().allMatch(Role::ready);
    }

    public HostPort rpcAddress() {
        return rpcAddress;
    }

    /** The roles this process runs, in the order they were added. */
    public List<Role> roles() {
        return List.copyOf(roles);
    }

    /** The HTTP endpoint's address, or null when its port was taken. */
    public HostPort httpAddress() {
        return httpAddress;
    }

    /** Writes {"role": name, "rpc": ..., "http": ..., what each role adds, more...} to {@code file} atomically. */
    private void writeEndpoints(Path file, Map<String, String> more) {
        Map<String, String> fields = new LinkedHashMap<>();
        fields.put("role", name);
        if (rpcAddress != null) {
            fields.put("rpc", rpcAddress.toString());
        }
        if (httpAddress != null) {
            fields.put("http", httpAddress.toString());
        }
        for (Role role : roles) {
            fields.putAll(role.endpoints());
        }
        fields.putAll(more);
        writeEndpointsFile(file, fields);
    }

    /**
     * Where a process listens, as JSON with one field per line (scripts grep it), replaced
     * atomically: a reader never sees half a file.
     */
    static void writeEndpointsFile(Path file, Map<String, String> fields) {
        StringBuilder json = new StringBuilder("{\n");
        int i = 0;
        for (Map.Entry<String, String> field : fields.entrySet()) {
            json.append("  ").append(Json.write(field.getKey())).append(": ").append(Json.write(field.getValue()))
                    .append(++i < fields.size() ? ",\n" : "\n");
        }
        json.append("}\n");
        try {
            Files.createDirectories(file.toAbsolutePath().getParent());
            Path temporary = file.resolveSibling(file.getFileName() + ".tmp");
            Files.writeString(temporary, json);
            Files.move(temporary, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Stops the roles, newest first (the RPC listener still up: a storage node's last heartbeat, a cleaner's last call), then the listeners. */
    @Override
    public void close() {
        for (int i = roles.size() - 1; i >= 0; i--) {
            try {
                roles.get(i).close();
            } catch (RuntimeException e) {
                LOG.warn("{}: error while stopping a role: {}", name, e.toString());
            }
        }
        roles.clear();
        for (int i = resources.size() - 1; i >= 0; i--) {
            try {
                resources.get(i).close();
            } catch (Exception e) {
                LOG.warn("{}: error while stopping: {}", name, e.toString());
            }
        }
        resources.clear();
    }
}
