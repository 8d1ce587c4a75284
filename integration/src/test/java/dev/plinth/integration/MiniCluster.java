package dev.plinth.integration;

import dev.plinth.server.EmbeddedServer;
import dev.plinth.client.ClientOptions;
import dev.plinth.client.PlinthClient;
import dev.plinth.common.Config;
import dev.plinth.common.Credentials;
import dev.plinth.testing.AdjustableClock;
import dev.plinth.wire.ClusterSecret;
import java.nio.file.Path;

/**
 * The embedded server on ephemeral ports in a test directory, and clients for it, all reading
 * time from one {@link AdjustableClock}: a test moves it forward ({@link #clock()}) to let a lease
 * expire or an expiry pass instead of sleeping.
 */
public final class MiniCluster implements AutoCloseable {
    private final EmbeddedServer server;
    private final Config config;
    private final AdjustableClock clock;
    private final int leaksBefore;
    private final int reportsBefore;

    private MiniCluster(EmbeddedServer server, Config config, AdjustableClock clock, int leaksBefore, int reportsBefore) {
        this.server = server;
        this.clock = clock;
        this.config = config;
        this.leaksBefore = leaksBefore;
        this.reportsBefore = reportsBefore;
    }

    public static MiniCluster start(Path directory) {
        return start(directory, testConfig());
    }

    /** Whether this run's clusters take the in-JVM shortcut for calls (false: every call over TCP, the verify phase's second run). */
    public static boolean inProcessRpc() {
        return Boolean.parseBoolean(System.getProperty("plinth.test.rpc-in-process", "true"));
    }

    public static Config testConfig() {
        // plinth.test.rpc-in-process=false (the verify phase's second run of the suite): every call over TCP and its framing
        return Config.defaults().with("rpc.listen", "127.0.0.1:0").with("http.listen", "127.0.0.1:0").with("s3.listen", "127.0.0.1:0")
                .with("meta.session-lease-millis", "5000").with("rpc.in-process", Boolean.toString(inProcessRpc()));
    }

    public static MiniCluster start(Path directory, Config config) {
        int leaksBefore = LeakCounter.collect();
        AdjustableClock clock = new AdjustableClock();
        return new MiniCluster(EmbeddedServer.start(directory, config, clock), config, clock, leaksBefore, LeakCounter.REPORTS.length());
    }

    /** The clock the server and every client of this cluster read. */
    public AdjustableClock clock() {
        return clock;
    }

    public EmbeddedServer server() {
        return server;
    }

    public PlinthClient client() {
        return client(Credentials.ROOT);
    }

    public PlinthClient client(Credentials credentials) {
        return client(credentials, config);
    }

    public PlinthClient client(Credentials credentials, Config clientConfig) {
        return PlinthClient.connect(new ClientOptions(server.rpcAddress(), ClusterSecret.read(server.secretFile()), credentials,
                clientConfig, "test").withClock(clock));
    }

    /** The value of one series on the server's /metrics page, named as it is printed: {@code plinth_meta_inodes{mdt="0"}}. */
    public double metric(String series) {
        return find(series).orElseThrow(() -> new AssertionError("no series " + series + " on /metrics"));
    }

    /** As above, or {@code absent} where the page has no such series (a counter nothing has counted yet). */
    public double metric(String series, double absent) {
        return find(series).orElse(absent);
    }

    /** The sum of every series on /metrics whose name and labels begin with {@code prefix}: {@code plinth_target_io_bytes_total{direction="write"}. */
    public double metricSum(String prefix) {
        return metricsPage().lines().filter(line -> line.startsWith(prefix) && !line.startsWith("#"))
                .mapToDouble(line -> Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1))).sum();
    }

    private java.util.OptionalDouble find(String series) {
        return metricsPage().lines().filter(line -> line.startsWith(series + " "))
                .mapToDouble(line -> Double.parseDouble(line.substring(series.length()).strip())).findFirst();
    }

    private String metricsPage() {
        try (var http = java.net.http.HttpClient.newHttpClient()) {
            return http.send(java.net.http.HttpRequest.newBuilder(java.net.URI.create("http://" + server.httpAddress() + "/metrics")).build(),
                    java.net.http.HttpResponse.BodyHandlers.ofString()).body();
        } catch (java.io.IOException | InterruptedException e) {
            throw new AssertionError("could not read /metrics", e);
        }
    }

    /** Stops the server, then fails if any network buffer was leaked (by client or server). */
    @Override
    public void close() {
        server.close();
        int leaks = LeakCounter.collect() - leaksBefore;
        if (leaks > 0) {
            throw new AssertionError(leaks + " Netty buffer leak(s):\n" + LeakCounter.REPORTS.substring(reportsBefore));
        }
    }
}
