package dev.plinth.integration;

import static org.assertj.core.api.Assertions.assertThat;

import dev.plinth.client.PlinthClient;
import dev.plinth.client.PlinthFile;
import dev.plinth.common.Config;
import dev.plinth.common.Layout;
import dev.plinth.fuse.FuseMount;
import dev.plinth.fuse.MountOptions;
import dev.plinth.integration.s3.S3Testing;
import dev.plinth.wire.messages.MgmtMessages;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.S3Configuration;

/**
 * Every role killed with SIGKILL and started again, round after round, each a process of its own
 * (mgmt, meta, a storage node, the S3 gateway), then roles paused (SIGSTOP) and restarted with
 * fault points on (a slow disk, short writes, lost replies), under three applications at once:
 * one appending and fsyncing through a hard mount, one writing and fsyncing files through the
 * native client, one PUTting objects through S3. None of them sees an error (the mount and the
 * client wait for the cluster; the S3 client retries, as SDKs do, through the gateway's own
 * restarts), and everything they were told was stored reads back as it was written.
 *
 * <p>With {@code -Dplinth.soak.minutes=N} it is the soak run ({@code bench/soak.sh}): faults
 * drawn at random from the same list until N minutes have passed, with a progress line a minute.
 */
class RoleRestartLoopIT {
    private static final int ROUNDS_PER_ROLE = 3;
    private static final int RECORD_BYTES = 16 * 1024;
    /** Files and objects kept at once; older ones are checked and removed. */
    private static final int ITEMS_KEPT = 500;
    private static final List<String> KILLS = List.of("kill storage", "kill meta", "kill mgmt", "kill gateway");
    /** Faults beyond kills: each once in the normal run, drawn with the kills in a soak. */
    private static final List<String> OTHER_FAULTS = List.of("pause storage", "pause meta", "slow disk", "short writes",
            "lost WriteChunk reply", "lost Create reply", "lost Publish reply", "lost PutWhole reply", "lost Close reply");

    @TempDir(cleanup = org.junit.jupiter.api.io.CleanupMode.ON_SUCCESS) // a failure leaves the processes' logs
    Path directory;

    @Test
    void noApplicationSeesAnErrorAcrossKillsOfEveryRole() throws Exception {
        FuseMountIT.FuseTesting.requireFuse();
        // a short node timeout, so a killed storage node's place is noticed within a round
        List<String> settings = List.of("mgmt.node-timeout-millis=3000");
        Config config = MiniCluster.testConfig().with("rpc.timeout-millis", "2000").with("client.retry-timeout-millis", "120000");
        MountOptions options = MountOptions.parse("", config, true);
        Path mountPoint = Files.createDirectories(directory.resolve("mnt"));
        Path stop = directory.resolve("stop");
        Random random = new Random(37);
        try (ProcessCluster cluster = ProcessCluster.start(directory.resolve("cluster"), 2, settings);
             PlinthClient client = cluster.client(options.config());
             FuseMount mount = FuseMount.mount(client, mountPoint, options)) {
            ProcessCluster.GatewayProcess gateway = cluster.startGateway();
            MgmtMessages.AccessKey key = client.createAccessKey(new MgmtMessages.CreateAccessKey(null, null, 0, 0, List.of(), "restart loop"));
            try (S3Client s3 = patientSdk(gateway.endpoint(), key)) {
                s3.createBucket(b -> b.bucket("loop"));
                Process appender = startAppender(mountPoint.resolve("journal"), stop, RECORD_BYTES);
                try {
                    // content is a function of the item's number, so nothing needs keeping to check it; the oldest items are
                    // checked and removed as new ones come, so a long soak holds a bounded amount
                    java.util.concurrent.atomic.AtomicInteger filesAcknowledged = new java.util.concurrent.atomic.AtomicInteger();
                    java.util.concurrent.atomic.AtomicInteger objectsAcknowledged = new java.util.concurrent.atomic.AtomicInteger();
                    ConcurrentLinkedQueue<String> errors = new ConcurrentLinkedQueue<>();
                    AtomicBoolean running = new AtomicBoolean(true);
                    Thread nativeWriter = Thread.ofPlatform().name("native-writer").start(() -> {
                        for (int i = 0; running.get(); i++) {
                            try (PlinthFile file = client.create("/native-" + i, 0644, true, new Layout(1, 1 << 20, 1 << 20, "default", 1, List.of()))) {
                                file.write(0, ByteBuffer.wrap(content(1, i, 320 * 1024)));
                                file.fsync();
                            } catch (RuntimeException e) {
                                errors.add("native client: " + e);
                                return;
                            }
                            filesAcknowledged.set(i + 1);
                            if (i >= ITEMS_KEPT) {
                                String old = "/native-" + (i - ITEMS_KEPT);
                                try {
                                    if (!java.util.Arrays.equals(ClusterSmokeTest.readAll(client, old), content(1, i - ITEMS_KEPT, 320 * 1024))) {
                                        errors.add("native client: " + old + " does not read back as written");
                                        return;
                                    }
                                    client.delete(old);
                                } catch (RuntimeException e) {
                                    errors.add("native client, checking " + old + ": " + e);
                                    return;
                                }
                            }
                        }
                    });
                    Thread s3Writer = Thread.ofPlatform().name("s3-writer").start(() -> {
                        for (int i = 0; running.get(); i++) {
                            int n = i;
                            try {
                                s3.putObject(b -> b.bucket("loop").key("object-" + n), RequestBody.fromBytes(content(2, n, 200 * 1024)));
                                objectsAcknowledged.set(i + 1);
                                if (i >= ITEMS_KEPT) {
                                    String old = "object-" + (i - ITEMS_KEPT);
                                    if (!java.util.Arrays.equals(s3.getObjectAsBytes(b -> b.bucket("loop").key(old)).asByteArray(),
                                            content(2, i - ITEMS_KEPT, 200 * 1024))) {
                                        errors.add("S3: " + old + " does not read back as written");
                                        return;
                                    }
                                    s3.deleteObject(b -> b.bucket("loop").key(old));
                                }
                            } catch (RuntimeException e) {
                                errors.add("S3: " + e);
                                return;
                            }
                        }
                    });

                    long soakMinutes = Long.getLong("plinth.soak.minutes", 0);
                    long soakEnd = System.nanoTime() + TimeUnit.MINUTES.toNanos(soakMinutes);
                    List<String> plan = new java.util.ArrayList<>();
                    for (int round = 0; round < ROUNDS_PER_ROLE * KILLS.size(); round++) {
                        plan.add(KILLS.get(round % KILLS.size()));
                    }
                    plan.addAll(OTHER_FAULTS);
                    List<String> everyFault = new java.util.ArrayList<>(KILLS);
                    everyFault.addAll(OTHER_FAULTS);
                    Map<String, Integer> injected = new java.util.TreeMap<>();
                    long lastProgress = System.nanoTime();
                    for (int round = 0; soakMinutes > 0 ? System.nanoTime() < soakEnd : round < plan.size(); round++) {
                        String fault = soakMinutes > 0 ? everyFault.get(random.nextInt(everyFault.size())) : plan.get(round);
                        Thread.sleep(500 + random.nextInt(1500));
                        if (!appender.isAlive()) {
                            throw new AssertionError("the appender stopped before round " + round + ": "
                                    + new String(appender.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip());
                        }
                        assertThat(errors).as("errors the applications saw before round %d", round).isEmpty();
                        inject(fault, cluster, gateway, random);
                        injected.merge(fault, 1, Integer::sum);
                        if (soakMinutes > 0 && System.nanoTime() - lastProgress > TimeUnit.MINUTES.toNanos(1)) {
                            lastProgress = System.nanoTime();
                            System.out.printf("soak: %d faults so far; %d files and %d objects acknowledged; errors seen: %d%n", round + 1,
                                    filesAcknowledged.get(), objectsAcknowledged.get(), errors.size());
                        }
                    }
                    Thread.sleep(1000);
                    running.set(false);
                    Files.writeString(stop, "");
                    nativeWriter.join(TimeUnit.MINUTES.toMillis(3));
                    s3Writer.join(TimeUnit.MINUTES.toMillis(3));
                    assertThat(appender.waitFor(3, TimeUnit.MINUTES)).as("the appender stops").isTrue();
                    String output = new String(appender.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
                    assertThat(errors).as("errors the applications saw").isEmpty();
                    assertThat(appender.exitValue()).as(output).isZero();

                    int acknowledged = Integer.parseInt(output.substring(output.lastIndexOf(' ') + 1));
                    int lines = 0;
                    try (var journal = Files.newBufferedReader(mountPoint.resolve("journal"), StandardCharsets.US_ASCII)) {
                        for (String line = journal.readLine(); line != null; line = journal.readLine(), lines++) {
                            assertThat(line).hasSize(RECORD_BYTES - 1).startsWith(String.format("line %08d x", lines));
                        }
                    }
                    assertThat(lines).as("every fsynced line is there").isGreaterThanOrEqualTo(acknowledged);
                    for (int i = Math.max(0, filesAcknowledged.get() - ITEMS_KEPT); i < filesAcknowledged.get(); i++) {
                        assertThat(ClusterSmokeTest.readAll(client, "/native-" + i)).as("/native-%d", i).isEqualTo(content(1, i, 320 * 1024));
                    }
                    for (int i = Math.max(0, objectsAcknowledged.get() - ITEMS_KEPT); i < objectsAcknowledged.get(); i++) {
                        int n = i;
                        assertThat(s3.getObjectAsBytes(b -> b.bucket("loop").key("object-" + n)).asByteArray()).as("object-%d", i)
                                .isEqualTo(content(2, i, 200 * 1024));
                    }
                    assertThat(filesAcknowledged.get()).as("the native client got work done").isPositive();
                    assertThat(objectsAcknowledged.get()).as("the S3 client got work done").isPositive();
                    System.out.printf("soak: faults injected: %d %s%n", injected.values().stream().mapToInt(Integer::intValue).sum(), injected);
                    System.out.printf("soak: operations acknowledged: %d lines fsynced through the mount, %d files through the client, %d objects"
                            + " through S3%n", acknowledged, filesAcknowledged.get(), objectsAcknowledged.get());
                    System.out.println("soak: violations: 0 (no error seen by an application, nothing acknowledged lost or changed)");
                } finally {
                    // a writer left running after the mount is gone would fill the local disk under the mount point
                    appender.destroyForcibly();
                }
            }
        }
    }

    /** Item {@code number} of writer {@code writer}: 1 to {@code bytesMax} bytes, the same every time. */
    private static byte[] content(int writer, int number, int bytesMax) {
        Random random = new Random(writer * 1_000_003L + number);
        byte[] content = new byte[1 + random.nextInt(bytesMax)];
        random.nextBytes(content);
        return content;
    }

    /**
     * Injects one fault: a role killed and restarted, a role paused for a few seconds, or a role
     * restarted with a fault point on (kept until its next restart; a lost reply happens once).
     */
    private static void inject(String fault, ProcessCluster cluster, ProcessCluster.GatewayProcess gateway, Random random) throws Exception {
        ProcessCluster.StorageNodeProcess node = cluster.storageNodes().get(random.nextInt(cluster.storageNodes().size()));
        switch (fault) {
            case "kill storage" -> restart(node, null);
            case "kill meta" -> restart(cluster.meta(), null);
            case "kill mgmt" -> restart(cluster.mgmtReplicas().getFirst(), null);
            case "kill gateway" -> restart(gateway, null);
            case "pause storage" -> pause(node, 2000 + random.nextInt(2000));
            case "pause meta" -> pause(cluster.meta(), 1000 + random.nextInt(2000));
            case "slow disk" -> restart(node, dev.plinth.common.FaultPoints.STORAGE_DISK_DELAY_MILLIS + "=20");
            case "short writes" -> restart(node, dev.plinth.common.FaultPoints.STORAGE_SHORT_WRITE + "=1000000");
            case "lost WriteChunk reply" -> restart(node, dev.plinth.common.FaultPoints.RPC_DROP_REPLY + "=WriteChunk");
            default -> restart(cluster.meta(), dev.plinth.common.FaultPoints.RPC_DROP_REPLY + "=" + fault.split(" ")[1]);
        }
    }

    private static void restart(ProcessCluster.Member member, String faults) throws Exception {
        member.kill();
        member.faults = faults;
        member.start();
    }

    private static void pause(ProcessCluster.Member member, long millis) throws Exception {
        member.pause();
        try {
            Thread.sleep(millis);
        } finally {
            member.resume();
        }
    }

    /**
     * Appends fsynced records of {@code recordBytes} ("line NNNNNNNN xxx...\n") to {@code journal}
     * until {@code stop} exists; prints how many were acknowledged, or the error that stopped it.
     */
    static Process startAppender(Path journal, Path stop, int recordBytes) throws java.io.IOException {
        return new ProcessBuilder("/usr/bin/python3", "-c", """
                import os, sys
                path, stop = sys.argv[1], sys.argv[2]
                PADDING = b"x" * (RECORD_BYTES - 15) + b"\\n"
                acknowledged = 0
                try:
                    while not os.path.exists(stop):
                        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
                        os.write(fd, b"line %08d " % acknowledged + PADDING)
                        os.fsync(fd)
                        os.close(fd)
                        acknowledged += 1
                except OSError as e:
                    print("error after %d lines: %s" % (acknowledged, e), flush=True)
                    sys.exit(1)
                print("acknowledged %d" % acknowledged, flush=True)
                """.replace("RECORD_BYTES", Integer.toString(recordBytes)), journal.toString(), stop.toString()).redirectErrorStream(true).start();
    }

    /** An S3 client that retries for as long as a gateway takes to start again, as an application's would be set up to. */
    private static S3Client patientSdk(String endpoint, MgmtMessages.AccessKey key) {
        return S3Client.builder().endpointOverride(URI.create(endpoint)).region(Region.US_EAST_1)
                .credentialsProvider(StaticCredentialsProvider.create(AwsBasicCredentials.create(key.accessKeyId(), key.secretKey())))
                .serviceConfiguration(S3Configuration.builder().pathStyleAccessEnabled(true).build())
                // without the circuit breaker: the standard strategy stops retrying once its token bucket is spent, which
                // a storage node's restart behind the gateway (503s for a few seconds) did in a soak
                .overrideConfiguration(o -> o.retryStrategy(software.amazon.awssdk.awscore.retry.AwsRetryStrategy.standardRetryStrategy()
                        .toBuilder().maxAttempts(60).circuitBreakerEnabled(false)
                        .backoffStrategy(software.amazon.awssdk.retries.api.BackoffStrategy.fixedDelay(java.time.Duration.ofMillis(500)))
                        .build()))
                .build();
    }
}
