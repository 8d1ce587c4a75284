package dev.plinth.server;

import dev.plinth.common.Json;
import static java.util.Objects.requireNonNull;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import dev.plinth.common.ErrorCode;
import dev.plinth.common.PlinthException;
import dev.plinth.wire.HostPort;
import io.prometheus.metrics.config.EscapingScheme;
import io.prometheus.metrics.expositionformats.PrometheusTextFormatWriter;
import io.prometheus.metrics.instrumentation.jvm.JvmMetrics;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import io.prometheus.metrics.model.snapshots.MetricSnapshot;
import io.prometheus.metrics.model.snapshots.MetricSnapshots;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.function.BooleanSupplier;

/**
 * The HTTP listener every Plinth process has: {@code /metrics} (Prometheus text format, the
 * process's registry plus JVM metrics), {@code /healthz} (the process runs) and {@code /readyz}
 * (it can serve). Two platform threads serve it; a scrape renders the whole registry.
 */
public final class HttpEndpoint implements AutoCloseable {
    private static final PrometheusTextFormatWriter TEXT_FORMAT = PrometheusTextFormatWriter.create();

    /**
     * The JVM's metrics, registered once per process in a registry of their own: {@code JvmMetrics}
     * keeps every registry it is given in a static set, so registering it in each server's registry
     * kept every server a JVM ever ran reachable, with its services, threads' state and read
     * buffers (a test JVM starts dozens: 37 MiB of direct memory each, until it ran out).
     */
    private static final class JvmRegistry {
        static final PrometheusRegistry REGISTRY = new PrometheusRegistry();

        static {
            JvmMetrics.builder().register(REGISTRY);
        }
    }

    private final HttpServer server;
    private final ExecutorService executor;
    private final HostPort address;

    private HttpEndpoint(HttpServer server, ExecutorService executor, HostPort address) {
        this.server = server;
        this.executor = executor;
        this.address = address;
    }

    /** Listens on {@code listen} (port 0: any free port); {@code ready} answers /readyz. */
    public static HttpEndpoint start(HostPort listen, PrometheusRegistry registry, BooleanSupplier ready) {
        requireNonNull(registry, "registry is null");
        HttpServer server;
        try {
            server = HttpServer.create(new InetSocketAddress(listen.host(), listen.port()), 64);
        } catch (IOException e) {
            throw new PlinthException(ErrorCode.UNAVAILABLE, "cannot listen for HTTP on " + listen + ": " + e.getMessage(), e);
        }
        server.createContext("/healthz", exchange -> answer(exchange, 200, "text/plain", "ok\n".getBytes(StandardCharsets.UTF_8)));
        server.createContext("/readyz", exchange -> {
            boolean isReady = ready.getAsBoolean();
            answer(exchange, isReady ? 200 : 503, "text/plain", (isReady ? "ready\n" : "not ready\n").getBytes(StandardCharsets.UTF_8));
        });
        server.createContext("/metrics", exchange -> {
            ByteArrayOutputStream text = new ByteArrayOutputStream(64 * 1024);
            java.util.List<MetricSnapshot> snapshots = new java.util.ArrayList<>();
            registry.scrape().forEach(snapshots::add);
            JvmRegistry.REGISTRY.scrape().forEach(snapshots::add);
            TEXT_FORMAT.write(text, new MetricSnapshots(snapshots), EscapingScheme.UNDERSCORE_ESCAPING);
            answer(exchange, 200, PrometheusTextFormatWriter.CONTENT_TYPE, text.toByteArray());
        });
        ExecutorService executor = Executors.newFixedThreadPool(2, Thread.ofPlatform().name("http-", 0).daemon().factory());
        server.setExecutor(executor);
        server.start();
        return new HttpEndpoint(server, executor, new HostPort(listen.host(), server.getAddress().getPort()));
    }

    /**
     * Adds the status page: {@code /} (one self-contained HTML page that fetches the next path
     * every two seconds) and {@code /status.json} (what {@code status} gives).
     */
    public void serveStatusPage(java.util.function.Supplier<java.util.Map<String, Object>> status) {
        byte[] page;
        try (var in = HttpEndpoint.class.getResourceAsStream("status.html")) {
            page = in.readAllBytes();
        } catch (IOException | NullPointerException e) {
            throw new IllegalStateException("status.html is missing from the build", e);
        }
        server.createContext("/status.json", exchange -> {
            byte[] json;
            try {
                json = Json.write(status.get()).getBytes(StandardCharsets.UTF_8);
            } catch (RuntimeException e) {
                answer(exchange, 503, "text/plain", ("status unavailable: " + e.getMessage() + "\n").getBytes(StandardCharsets.UTF_8));
                return;
            }
            exchange.getResponseHeaders().set("Cache-Control", "no-store");
            answer(exchange, 200, "application/json", json);
        });
        server.createContext("/", exchange -> {
            if (!exchange.getRequestURI().getPath().equals("/")) {
                answer(exchange, 404, "text/plain", "not found\n".getBytes(StandardCharsets.UTF_8));
                return;
            }
            answer(exchange, 200, "text/html; charset=utf-8", page);
        });
    }

    /**
     * For processes whose main job is elsewhere (a mount, a gateway): the endpoint on {@code listen},
     * or null with a warning when it cannot listen (port taken) or {@code listen} is empty (off).
     */
    public static HttpEndpoint startOrWarn(String listen, PrometheusRegistry registry, BooleanSupplier ready) {
        if (listen == null || listen.isBlank()) {
            return null;
        }
        try {
            return start(HostPort.parse(listen), registry, ready);
        } catch (PlinthException e) {
            org.slf4j.LoggerFactory.getLogger(HttpEndpoint.class).warn("no /metrics for this process: {}", e.getMessage());
            return null;
        }
    }

    private static void answer(HttpExchange exchange, int status, String contentType, byte[] body) throws IOException {
        try (exchange) {
            exchange.getResponseHeaders().set("Content-Type", contentType);
            exchange.sendResponseHeaders(status, body.length);
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(body);
            }
        }
    }

    public HostPort address() {
        return address;
    }

    @Override
    public void close() {
        server.stop(0);
        executor.shutdownNow();
    }
}
