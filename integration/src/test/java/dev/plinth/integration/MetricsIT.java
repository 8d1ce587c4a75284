package dev.plinth.integration;

import static org.assertj.core.api.Assertions.assertThat;

import dev.plinth.client.PlinthClient;
import dev.plinth.client.PlinthFile;
import dev.plinth.common.Config;
import dev.plinth.common.Credentials;
import dev.plinth.fuse.FuseMount;
import dev.plinth.fuse.MountOptions;
import dev.plinth.integration.s3.S3Testing;
import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * /metrics of a running cluster: it passes `promtool check metrics`, the figures move with a
 * workload through the native client, S3 and a mount, and a real Prometheus (Debian's, started
 * here on 127.0.0.1) scrapes it and sees the target up and its counters growing.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class MetricsIT {
    @TempDir
    static Path directory;

    private MiniCluster cluster;
    private PlinthClient plinth;
    private final HttpClient http = HttpClient.newHttpClient();

    @BeforeAll
    void start() {
        dev.plinth.testing.Prerequisites.require(dev.plinth.testing.Prerequisites.PROMTOOL, dev.plinth.testing.Prerequisites.PROMETHEUS);
        cluster = MiniCluster.start(directory.resolve("data"));
        plinth = cluster.client();
    }

    @AfterAll
    void stop() {
        if (plinth != null) {
            plinth.close();
        }
        if (cluster != null) {
            cluster.close();
        }
    }

    private String get(String url) throws IOException, InterruptedException {
        HttpResponse<String> response = http.send(HttpRequest.newBuilder(URI.create(url)).build(), HttpResponse.BodyHandlers.ofString());
        assertThat(response.statusCode()).as("GET %s", url).isEqualTo(200);
        return response.body();
    }

    private String scrape() throws IOException, InterruptedException {
        return get("http://" + cluster.server().httpAddress() + "/metrics");
    }

    /** The value of the first sample whose line starts with {@code series} (name and labels as exposed), or 0. */
    private static double value(String exposition, String series) {
        for (String line : exposition.lines().toList()) {
            if (line.startsWith(series + " ")) {
                return Double.parseDouble(line.substring(series.length() + 1).strip());
            }
        }
        return 0;
    }

    /** The sum of a per-target byte counter's series in one direction. */
    private static double sumOverTargets(String metrics, String name, String direction) {
        double sum = 0;
        Matcher matcher = Pattern.compile("^" + name + "\\{direction=\"" + direction + "\",target=\"\\d+\"} (\\S+)$", Pattern.MULTILINE)
                .matcher(metrics);
        while (matcher.find()) {
            sum += Double.parseDouble(matcher.group(1));
        }
        return sum;
    }

    private void workload(int megabytes) {
        byte[] block = new byte[1 << 20];
        try (PlinthFile file = plinth.create("/metrics-" + System.nanoTime(), 0644, true, null)) {
            long start = file.layout().mdtBytes(); // past the file's Data-on-MDT part, so that every byte goes to a target
            for (int i = 0; i < megabytes; i++) {
                file.write(start + ((long) i << 20), ByteBuffer.wrap(block));
            }
        }
    }

    @Test
    void metricsPassPromtoolAndMoveWithWork() throws Exception {
        workload(2);
        Path mountpoint = Files.createDirectories(directory.resolve("mnt"));
        Config config = MiniCluster.testConfig();
        try (PlinthClient mountClient = cluster.client(Credentials.ROOT, config);
             FuseMount mount = FuseMount.mount(mountClient, mountpoint, MountOptions.parse("", config, true), cluster.server().metrics());
             S3Client s3 = S3Testing.sdk(S3Testing.endpoint(cluster), S3Testing.ownerKey(cluster))) {
            Files.writeString(mount.mountpoint().resolve("through-fuse.txt"), "hello");
            s3.createBucket(b -> b.bucket("metrics"));
            s3.putObject(b -> b.bucket("metrics").key("k"), RequestBody.fromString("v"));
            s3.getObjectAsBytes(b -> b.bucket("metrics").key("k"));
        }
        String metrics = scrape();
        Path file = Files.writeString(directory.resolve("metrics.txt"), metrics);
        TestProcesses.run(List.of("/bin/sh", "-c", "/usr/bin/promtool check metrics < " + file), Duration.ofSeconds(30));

        assertThat(sumOverTargets(metrics, "plinth_target_io_bytes_total", "write")).isGreaterThanOrEqualTo(2 << 20);
        assertThat(sumOverTargets(metrics, "plinth_target_direct_io_bytes_total", "write"))
                .as("the aligned megabytes went past the page cache (the temp dir's file system takes O_DIRECT)").isPositive();
        assertThat(value(metrics, "plinth_rpc_server_requests_total{code=\"OK\",message=\"WriteChunk\"}")).isPositive();
        assertThat(value(metrics, "plinth_rpc_server_request_duration_seconds_count{message=\"Create\"}")).isPositive();
        assertThat(value(metrics, "plinth_storage_queue_wait_seconds_count{queue=\"io\"}"))
                .as("every chunk write waited for a storage thread, if only a moment").isGreaterThanOrEqualTo(value(metrics,
                        "plinth_rpc_server_requests_total{code=\"OK\",message=\"WriteChunk\"}"));
        assertThat(value(metrics, "plinth_s3_requests_total{operation=\"PutObject\",status=\"200\"}")).isEqualTo(1);
        assertThat(value(metrics, "plinth_s3_requests_total{operation=\"GetObject\",status=\"200\"}")).isEqualTo(1);
        assertThat(value(metrics, "plinth_fuse_operations_total{operation=\"create\",result=\"OK\"}")).isPositive();
        assertThat(value(metrics, "plinth_meta_raft_leader{mdt=\"0\"}")).isEqualTo(1);
        assertThat(value(metrics, "plinth_meta_raft_commit_index{mdt=\"0\"}")).isPositive();
        assertThat(value(metrics, "plinth_meta_inodes{mdt=\"0\"}")).isGreaterThan(2);
        assertThat(value(metrics, "plinth_meta_data_bytes{mdt=\"0\"}")).as("the small files' bytes, on the MDT").isGreaterThanOrEqualTo(6);
        assertThat(metrics).contains("plinth_target_capacity_bytes{target=\"1\"}").contains("jvm_memory_used_bytes");
        // a pool's figures are its targets' as their heartbeats (every second) last reported them
        String pools = metrics;
        for (long deadline = System.nanoTime() + 15_000_000_000L; value(pools, "plinth_pool_used_bytes{pool=\"default\"}") < 2 << 20
                && System.nanoTime() < deadline; pools = scrape()) {
            Thread.sleep(200);
        }
        assertThat(value(pools, "plinth_pool_used_bytes{pool=\"default\"}")).as("the chunks written").isGreaterThanOrEqualTo(2 << 20);
        assertThat(value(pools, "plinth_pool_capacity_bytes{pool=\"default\"}")).isGreaterThan(value(pools, "plinth_pool_used_bytes{pool=\"default\"}"));
        assertThat(get("http://" + cluster.server().httpAddress() + "/readyz")).isEqualTo("ready\n");
        java.util.Set<String> registered = checkReference();
        checkDeployFiles(metrics, registered);
        assertThat(get("http://" + cluster.server().httpAddress() + "/healthz")).isEqualTo("ok\n");
    }

    /**
     * docs/metrics.md lists every plinth_* metric of a server with a mount, from the registry itself
     * (names, types, help), so the reference cannot drift from the code.
     */
    private java.util.Set<String> checkReference() throws IOException {
        java.util.Set<String> names = new java.util.TreeSet<>();
        StringBuilder markdown = new StringBuilder("# Metrics reference\n\n")
                .append("Every `plinth_*` metric a `plinth server` (with `--mount`) exposes at `/metrics`, beside the JVM's `jvm_*`.\n")
                .append("Generated from the registry by `MetricsIT`; regenerate with ")
                .append("`cd integration && ../mvnw verify -Dtest=none -Dsurefire.failIfNoSpecifiedTests=false -Dit.test=MetricsIT -Dplinth.write-docs=true`. `plinth gateway` exposes the `plinth_s3_*` ")
                .append("families and `plinth mount` the `plinth_fuse_*` ones.\n\n")
                .append("| metric | type | what it counts |\n|---|---|---|\n");
        cluster.server().metrics().scrape().stream()
                .filter(snapshot -> snapshot.getMetadata().getPrometheusName().startsWith("plinth_"))
                .sorted(java.util.Comparator.comparing(snapshot -> snapshot.getMetadata().getPrometheusName()))
                .forEach(snapshot -> {
                    String type = snapshot.getClass().getSimpleName().replace("Snapshot", "").toLowerCase(java.util.Locale.ROOT);
                    String name = snapshot.getMetadata().getPrometheusName() + (type.equals("counter") ? "_total" : "");
                    names.add(name);
                    markdown.append("| `").append(name).append("` | ").append(type).append(" | ")
                            .append(snapshot.getMetadata().getHelp()).append(" |\n");
                });
        Path docs = Path.of("").toAbsolutePath();
        while (docs != null && !Files.exists(docs.resolve("docs"))) {
            docs = docs.getParent();
        }
        Path reference = docs.resolve("docs").resolve("metrics.md");
        if (Boolean.getBoolean("plinth.write-docs")) {
            Files.writeString(reference, markdown.toString());
        }
        assertThat(Files.exists(reference) ? Files.readString(reference) : "")
                .as("docs/metrics.md is stale: run cd integration && ../mvnw verify -Dtest=none -Dsurefire.failIfNoSpecifiedTests=false -Dit.test=MetricsIT -Dplinth.write-docs=true")
                .isEqualTo(markdown.toString());
        return names;
    }

    /**
     * deploy/: the Prometheus config is valid, and the Grafana dashboard asks only for metrics a
     * cluster exposes: Plinth's as registered (a family with no samples yet is not in the scrape),
     * the JVM's as scraped.
     */
    private void checkDeployFiles(String exposition, java.util.Set<String> registered) throws Exception {
        Path deploy = Path.of("").toAbsolutePath();
        while (deploy != null && !Files.exists(deploy.resolve("deploy"))) {
            deploy = deploy.getParent();
        }
        deploy = deploy.resolve("deploy");
        TestProcesses.run(List.of("/usr/bin/promtool", "check", "config", deploy.resolve("prometheus/prometheus.yml").toString()),
                Duration.ofSeconds(30));
        String dashboard = Files.readString(deploy.resolve("grafana/plinth-dashboard.json"));
        Matcher expressions = Pattern.compile("\"expr\":\\s*\"((?:[^\"\\\\]|\\\\.)*)\"").matcher(dashboard);
        java.util.Set<String> names = new java.util.TreeSet<>();
        while (expressions.find()) {
            Matcher metric = Pattern.compile("\\b((?:plinth|jvm)_[a-z0-9_]+)").matcher(expressions.group(1));
            while (metric.find()) {
                names.add(metric.group(1).replaceAll("_(bucket|count|sum)$", ""));
            }
        }
        assertThat(names).as("metrics the dashboard uses").hasSizeGreaterThan(10);
        List<String> samples = exposition.lines().filter(line -> !line.startsWith("#")).toList();
        for (String name : names) {
            if (name.startsWith("plinth_")) {
                assertThat(registered).as("the dashboard's %s is registered", name).contains(name);
            } else {
                assertThat(samples).as("the dashboard's %s is exposed", name)
                        .anyMatch(line -> line.startsWith(name + "{") || line.startsWith(name + " ") || line.startsWith(name + "_"));
            }
        }
    }

    @Test
    void aRealPrometheusScrapesTheCluster() throws Exception {
        int port;
        try (ServerSocket probe = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            port = probe.getLocalPort();
        }
        Path config = Files.writeString(directory.resolve("prometheus.yml"), """
                global:
                  scrape_interval: 1s
                  evaluation_interval: 1s
                scrape_configs:
                  - job_name: plinth
                    static_configs:
                      - targets: ['%s']
                """.formatted(cluster.server().httpAddress()));
        Process prometheus = new ProcessBuilder("/usr/bin/prometheus", "--config.file=" + config,
                "--storage.tsdb.path=" + directory.resolve("tsdb"), "--web.listen-address=127.0.0.1:" + port)
                .redirectErrorStream(true).redirectOutput(directory.resolve("prometheus.log").toFile()).start();
        try {
            String api = "http://127.0.0.1:" + port + "/api/v1/query?query=";
            String up = awaitValue(api + encode("up{job=\"plinth\"}"), value -> value == 1, Duration.ofSeconds(90));
            assertThat(up).isEqualTo("1");
            double before = Double.parseDouble(awaitValue(api + encode("sum(plinth_target_io_bytes_total{direction=\"write\"})"),
                    value -> value >= 0, Duration.ofSeconds(30)));
            workload(3);
            String after = awaitValue(api + encode("sum(plinth_target_io_bytes_total{direction=\"write\"})"),
                    value -> value >= before + (3 << 20), Duration.ofSeconds(30));
            assertThat(Double.parseDouble(after)).isGreaterThanOrEqualTo(before + (3 << 20));
        } finally {
            prometheus.destroy();
            if (!prometheus.waitFor(20, TimeUnit.SECONDS)) {
                prometheus.destroyForcibly();
            }
            System.out.println(Files.readString(directory.resolve("prometheus.log")).lines().filter(line -> line.contains("level=error"))
                    .reduce("prometheus errors:", (a, b) -> a + "\n" + b));
        }
    }

    private static String encode(String query) {
        return URLEncoder.encode(query, StandardCharsets.UTF_8);
    }

    private static final Pattern RESULT_VALUE = Pattern.compile("\"value\":\\[[^,]+,\"([^\"]+)\"]");

    /** Polls a Prometheus instant query until its first result's value passes {@code accept}; returns it. */
    private String awaitValue(String url, java.util.function.DoublePredicate accept, Duration limit) throws Exception {
        long deadline = System.nanoTime() + limit.toNanos();
        String last = "(no answer)";
        while (System.nanoTime() < deadline) {
            try {
                last = http.send(HttpRequest.newBuilder(URI.create(url)).build(), HttpResponse.BodyHandlers.ofString()).body();
                Matcher matcher = RESULT_VALUE.matcher(last);
                if (matcher.find() && accept.test(Double.parseDouble(matcher.group(1)))) {
                    return matcher.group(1);
                }
            } catch (IOException e) {
                last = e.toString(); // not listening yet
            }
            Thread.sleep(250);
        }
        throw new AssertionError("Prometheus query " + url + " did not reach the expected value in " + limit + "; last answer: " + last);
    }
}
