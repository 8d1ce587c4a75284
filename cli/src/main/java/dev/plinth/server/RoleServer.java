package dev.plinth.server;

import static java.util.Objects.requireNonNull;

import dev.plinth.common.Config;
import dev.plinth.common.Settings;
import dev.plinth.wire.ClusterSecret;
import dev.plinth.wire.HostPort;
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
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What every role run on its own ({@code plinth mgmt}, {@code meta}, {@code storage}) has: one
 * RPC listener (all the process's services on one port), an HTTP endpoint for metrics and
 * health, its actual addresses written to a JSON file (ports may be ephemeral), and a stop that
 * closes what the role started in reverse order.
 */
public final class RoleServer implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(RoleServer.class);

    private final String role;
    private final PrometheusRegistry metrics;
    private final RpcDispatcher dispatcher;
    private final List<AutoCloseable> resources = new ArrayList<>();
    private HostPort rpcAddress;
    private HostPort httpAddress;

    RoleServer(String role) {
        this.role = requireNonNull(role, "role is null");
        this.metrics = new PrometheusRegistry();
        this.dispatcher = new RpcDispatcher(metrics);
    }

    PrometheusRegistry metrics() {
        return metrics;
    }

    RpcDispatcher dispatcher() {
        return dispatcher;
    }

    /** Closed (in reverse order of adding) when the role stops. */
    <T extends AutoCloseable> T own(T resource) {
        resources.add(resource);
        return resource;
    }

    /** Starts the RPC listener ({@code rpc.listen}) and the HTTP endpoint ({@code http.listen}, a warning if taken). */
    HostPort listen(ClusterSecret secret, int nodeId, Config config, BooleanSupplier ready) {
        return listen(secret, nodeId, config, ready, null);
    }

    /** As above, with the status page on the HTTP endpoint (mgmt). */
    HostPort listen(ClusterSecret secret, int nodeId, Config config, BooleanSupplier ready,
                    java.util.function.Function<HostPort, java.util.function.Supplier<Map<String, Object>>> statusPage) {
        RpcServer server = own(new RpcServer(dispatcher, secret, nodeId, config));
        rpcAddress = server.start(HostPort.parse(config.get(Settings.RPC_LISTEN)));
        HttpEndpoint http = HttpEndpoint.startOrWarn(config.get(Settings.HTTP_LISTEN), metrics, ready);
        if (http != null) {
            own(http);
            httpAddress = http.address();
            if (statusPage != null) {
                http.serveStatusPage(statusPage.apply(rpcAddress));
            }
        }
        return rpcAddress;
    }

    public String role() {
        return role;
    }

    public HostPort rpcAddress() {
        return rpcAddress;
    }

    /** The HTTP endpoint's address, or null when its port was taken. */
    public HostPort httpAddress() {
        return httpAddress;
    }

    /** Writes {"role": ..., "rpc": ..., "http": ..., more...} to {@code file} atomically. */
    void writeEndpoints(Path file, Map<String, String> more) {
        Map<String, String> fields = new LinkedHashMap<>();
        fields.put("role", role);
        fields.put("rpc", rpcAddress.toString());
        if (httpAddress != null) {
            fields.put("http", httpAddress.toString());
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

    @Override
    public void close() {
        for (int i = resources.size() - 1; i >= 0; i--) {
            try {
                resources.get(i).close();
            } catch (Exception e) {
                LOG.warn("{}: error while stopping: {}", role, e.toString());
            }
        }
        resources.clear();
    }
}
