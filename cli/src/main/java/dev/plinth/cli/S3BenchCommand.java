package dev.plinth.cli;

import dev.plinth.common.ErrorCode;
import dev.plinth.common.PlinthException;
import dev.plinth.common.Sizes;
import dev.plinth.gateway.S3Credentials;
import dev.plinth.gateway.S3RequestSigner;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * A load generator for S3 endpoints: large-object PUT and GET throughput and small-object
 * request rates, for the endpoint under test and optionally a peer server (s3proxy in
 * bench/s3-compare.sh) in the same run, each printed beside the local disk and loopback TCP as
 * ratios. Requests are signed with Signature V4 over an unsigned payload, the same for every
 * server, through the JDK's HTTP client with one connection per worker.
 */
@Command(name = "bench", mixinStandardHelpOptions = true,
        description = {"Measure S3 endpoints: PUT and GET of large objects (MiB/s) and of small ones (requests/s),",
                "beside the local disk and loopback TCP measured in the same run, and beside a peer S3 server if given."})
final class S3BenchCommand implements Callable<Integer> {
    private static final int BLOCK_BYTES = 1 << 20;

    @Option(names = "--endpoint", required = true, paramLabel = "URL", description = "The S3 endpoint under test, e.g. http://127.0.0.1:9000.")
    URI endpoint;

    @Option(names = "--credentials", required = true, paramLabel = "FILE", description = "Its key, in the AWS credentials-file format ([default]).")
    Path credentials;

    @Option(names = "--name", defaultValue = "plinth", description = "What to call it in the table (default ${DEFAULT-VALUE}).")
    String name;

    @Option(names = "--peer-endpoint", paramLabel = "URL", description = "Another S3 server to measure the same way in the same run.")
    URI peerEndpoint;

    @Option(names = "--peer-credentials", paramLabel = "FILE", description = "The peer's key (AWS credentials-file format).")
    Path peerCredentials;

    @Option(names = "--peer-name", defaultValue = "peer", description = "What to call the peer (default ${DEFAULT-VALUE}).")
    String peerName;

    @Option(names = "--size", defaultValue = "64M", description = "Size of the large objects (default ${DEFAULT-VALUE}).")
    String size;

    @Option(names = "--objects", defaultValue = "16", description = "Large objects to PUT and GET (default ${DEFAULT-VALUE}).")
    int objects;

    @Option(names = "--threads", defaultValue = "4", description = "Concurrent large-object requests (default ${DEFAULT-VALUE}).")
    int threads;

    @Option(names = "--small-size", defaultValue = "4K", description = "Size of the small objects (default ${DEFAULT-VALUE}).")
    String smallSize;

    @Option(names = "--small-objects", defaultValue = "2000", description = "Small objects to PUT and GET (default ${DEFAULT-VALUE}).")
    int smallObjects;

    @Option(names = "--small-threads", defaultValue = "16", description = "Concurrent small-object requests (default ${DEFAULT-VALUE}).")
    int smallThreads;

    @Option(names = "--local-dir", paramLabel = "DIR", description = "Local directory for the disk baselines; use the servers' disk (default: the temp dir).")
    Path localDirectory;

    @Option(names = "--bucket", defaultValue = "plinth-s3-bench", description = "Scratch bucket, created and removed (default ${DEFAULT-VALUE}).")
    String bucket;

    /** One server's figures. */
    record Figures(double putMibPerSecond, double getMibPerSecond, double smallPutPerSecond, double smallGetPerSecond) {}

    @Override
    public Integer call() throws Exception {
        long objectBytes = Sizes.parseBytes(size);
        long smallBytes = Sizes.parseBytes(smallSize);
        if (objectBytes < 1 || objectBytes > (1L << 30) || smallBytes < 1 || smallBytes > (16L << 20) || objects < 1 || threads < 1
                || smallObjects < 1 || smallThreads < 1 || threads > 256 || smallThreads > 1024 || (peerEndpoint == null) != (peerCredentials == null)) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "sizes up to 1 GiB (small up to 16 MiB), counts and threads positive "
                    + "(threads <= 256, small threads <= 1024), and --peer-endpoint with --peer-credentials");
        }
        byte[] large = new byte[(int) objectBytes];
        new Random(1).nextBytes(large);
        byte[] small = new byte[(int) smallBytes];
        new Random(2).nextBytes(small);
        BenchCommand.progress("plinth s3 bench: %d x %s objects with %d threads, %d x %s objects with %d threads",
                objects, Sizes.format(objectBytes), threads, smallObjects, Sizes.format(smallBytes), smallThreads);
        boolean cold = BenchCommand.dropCaches();
        if (!cold) {
            BenchCommand.progress("note: cannot drop the page cache (not root?): GET figures are warm-cache figures");
        }

        Path local = Files.createTempDirectory(localDirectory == null ? Path.of(System.getProperty("java.io.tmpdir")) : localDirectory, "s3-bench");
        double localWrite;
        double localRead;
        try {
            byte[] block = java.util.Arrays.copyOf(large, BLOCK_BYTES);
            Path file = local.resolve("seq.dat");
            long total = Math.max(objectBytes * objects, BLOCK_BYTES);
            localWrite = BenchCommand.localSequentialWrite(file, total, block);
            BenchCommand.progress("local disk buffered write+fsync  %9.1f MiB/s", localWrite);
            if (cold) {
                BenchCommand.dropCaches();
            }
            localRead = BenchCommand.localSequentialRead(file, total);
            BenchCommand.progress("local disk read%s              %9.1f MiB/s", cold ? "" : " (warm)", localRead);
        } finally {
            BenchCommand.deleteTree(local);
        }
        double[] network = BenchCommand.loopback();
        BenchCommand.progress("loopback TCP (%s)           %9.1f MiB/s", network[1] == 1 ? "iperf3" : "java socket", network[0]);

        Figures figures = measure(name, endpoint, S3Credentials.read(credentials), large, small, cold);
        Figures peer = peerEndpoint == null ? null : measure(peerName, peerEndpoint, S3Credentials.read(peerCredentials), large, small, cold);

        double readBound = Math.min(localRead, network[0]);
        String readBaseline = localRead <= network[0] ? "local disk read" : "loopback TCP";
        System.out.println();
        System.out.printf(Locale.ROOT, "%-26s %10s %10s %10s %9s %9s  %s%n", "benchmark", "baseline", name, peer == null ? "" : peerName,
                "/baseline", peer == null ? "" : "/" + peerName, "baseline is");
        String large64 = Sizes.format(objectBytes);
        row("PUT " + large64 + " (MiB/s)", localWrite, figures.putMibPerSecond(), peer == null ? Double.NaN : peer.putMibPerSecond(),
                "local disk buffered write+fsync");
        row("GET " + large64 + (cold ? "" : " warm") + " (MiB/s)", readBound, figures.getMibPerSecond(),
                peer == null ? Double.NaN : peer.getMibPerSecond(), "min(disk read, loopback): " + readBaseline);
        String smallName = Sizes.format(smallBytes);
        row("PUT " + smallName + " (req/s)", Double.NaN, figures.smallPutPerSecond(), peer == null ? Double.NaN : peer.smallPutPerSecond(), "-");
        row("GET " + smallName + " (req/s)", Double.NaN, figures.smallGetPerSecond(), peer == null ? Double.NaN : peer.smallGetPerSecond(), "-");
        return 0;
    }

    private static void row(String label, double baseline, double value, double peer, String baselineIs) {
        System.out.printf(Locale.ROOT, "%-26s %10s %10.1f %10s %9s %9s  %s%n", label, Double.isNaN(baseline) ? "-" : String.format(Locale.ROOT, "%.1f", baseline),
                value, Double.isNaN(peer) ? "" : String.format(Locale.ROOT, "%.1f", peer),
                Double.isNaN(baseline) ? "-" : String.format(Locale.ROOT, "%.2f", value / baseline),
                Double.isNaN(peer) ? "" : String.format(Locale.ROOT, "%.2f", value / peer), baselineIs);
    }

    /** Warm-up (untimed), then the four timed phases, then the scratch bucket is emptied and removed. */
    private Figures measure(String label, URI server, S3Credentials.KeyPair key, byte[] large, byte[] small, boolean cold) throws Exception {
        S3 s3 = new S3(server, new S3RequestSigner(key.accessKeyId(), key.secretKey(), "us-east-1"));
        s3.expect(s3.send("PUT", "/" + bucket, null), 200, 409);
        try {
            BenchCommand.progress("%s: warming up", label);
            parallel(threads, Math.min(objects, 4), i -> s3.expect(s3.send("PUT", "/" + bucket + "/warm-" + i, large), 200));
            parallel(threads, Math.min(objects, 4), i -> s3.get("/" + bucket + "/warm-" + i, large.length));
            parallel(smallThreads, Math.min(smallObjects, 500), i -> s3.expect(s3.send("PUT", "/" + bucket + "/warm-s" + i, small), 200));
            parallel(smallThreads, Math.min(smallObjects, 500), i -> s3.get("/" + bucket + "/warm-s" + i, small.length));

            long start = System.nanoTime();
            parallel(threads, objects, i -> s3.expect(s3.send("PUT", "/" + bucket + "/large-" + i, large), 200));
            double put = BenchCommand.mibPerSecond((long) large.length * objects, System.nanoTime() - start);
            BenchCommand.progress("%s: PUT %d x %s  %9.1f MiB/s", label, objects, Sizes.format(large.length), put);
            if (cold) {
                BenchCommand.dropCaches();
            }
            start = System.nanoTime();
            parallel(threads, objects, i -> s3.get("/" + bucket + "/large-" + i, large.length));
            double get = BenchCommand.mibPerSecond((long) large.length * objects, System.nanoTime() - start);
            BenchCommand.progress("%s: GET %d x %s  %9.1f MiB/s", label, objects, Sizes.format(large.length), get);

            start = System.nanoTime();
            parallel(smallThreads, smallObjects, i -> s3.expect(s3.send("PUT", "/" + bucket + "/small/" + i, small), 200));
            double smallPut = smallObjects / ((System.nanoTime() - start) / 1e9);
            start = System.nanoTime();
            parallel(smallThreads, smallObjects, i -> s3.get("/" + bucket + "/small/" + i, small.length));
            double smallGet = smallObjects / ((System.nanoTime() - start) / 1e9);
            BenchCommand.progress("%s: PUT/GET %d x %s  %9.0f / %.0f requests/s", label, smallObjects, Sizes.format(small.length), smallPut, smallGet);
            return new Figures(put, get, smallPut, smallGet);
        } finally {
            parallel(smallThreads, Math.min(objects, 4), i -> s3.send("DELETE", "/" + bucket + "/warm-" + i, null));
            parallel(smallThreads, Math.min(smallObjects, 500), i -> s3.send("DELETE", "/" + bucket + "/warm-s" + i, null));
            parallel(smallThreads, objects, i -> s3.send("DELETE", "/" + bucket + "/large-" + i, null));
            parallel(smallThreads, smallObjects, i -> s3.send("DELETE", "/" + bucket + "/small/" + i, null));
            s3.send("DELETE", "/" + bucket, null);
        }
    }

    interface Task {
        void run(int index) throws Exception;
    }

    /** Runs {@code count} tasks on {@code workers} threads, each taking the next index; fails on the first failure. */
    private static void parallel(int workers, int count, Task task) throws Exception {
        AtomicInteger next = new AtomicInteger();
        ExecutorService pool = Executors.newFixedThreadPool(Math.min(workers, count), Thread.ofPlatform().daemon().factory());
        try {
            List<Future<?>> running = new ArrayList<>();
            for (int w = 0; w < Math.min(workers, count); w++) {
                running.add(pool.submit(() -> {
                    for (int i = next.getAndIncrement(); i < count; i = next.getAndIncrement()) {
                        task.run(i);
                    }
                    return null;
                }));
            }
            for (Future<?> future : running) {
                future.get();
            }
        } finally {
            pool.shutdownNow();
        }
    }

    /** A minimal signed S3 client over the JDK's HTTP/1.1 client. */
    private static final class S3 {
        private final URI server;
        private final S3RequestSigner signer;
        private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(Duration.ofSeconds(10)).build();

        S3(URI server, S3RequestSigner signer) {
            this.server = server;
            this.signer = signer;
        }

        private HttpRequest.Builder request(String method, String path, HttpRequest.BodyPublisher body) {
            URI uri = server.resolve(path);
            HttpRequest.Builder builder = HttpRequest.newBuilder(uri).timeout(Duration.ofMinutes(5)).method(method, body);
            for (Map.Entry<String, String> header : signer.sign(method, uri, Map.of(), S3RequestSigner.UNSIGNED_PAYLOAD, Instant.now()).entrySet()) {
                builder.header(header.getKey(), header.getValue());
            }
            return builder;
        }

        int send(String method, String path, byte[] body) throws IOException, InterruptedException {
            HttpRequest.BodyPublisher publisher = body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofByteArray(body);
            HttpResponse<String> response = http.send(request(method, path, publisher).build(), HttpResponse.BodyHandlers.ofString());
            return response.statusCode();
        }

        void expect(int status, int... allowed) {
            for (int ok : allowed) {
                if (status == ok) {
                    return;
                }
            }
            throw new PlinthException(ErrorCode.IO_ERROR, "the server answered HTTP " + status);
        }

        void get(String path, long expectedBytes) throws IOException, InterruptedException {
            HttpResponse<InputStream> response = http.send(request("GET", path, HttpRequest.BodyPublishers.noBody()).build(),
                    HttpResponse.BodyHandlers.ofInputStream());
            long total = 0;
            try (InputStream in = response.body()) {
                byte[] buffer = new byte[BLOCK_BYTES];
                int n;
                while ((n = in.read(buffer)) > 0) {
                    total += n;
                }
            }
            if (response.statusCode() != 200 || total != expectedBytes) {
                throw new PlinthException(ErrorCode.IO_ERROR, "GET " + path + " answered HTTP " + response.statusCode() + " with " + total + " bytes");
            }
        }
    }
}
