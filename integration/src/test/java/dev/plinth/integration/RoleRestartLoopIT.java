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
import java.util.concurrent.ConcurrentHashMap;
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
 * (mgmt, meta, a storage node, the S3 gateway), under three applications at once: one appending
 * and fsyncing through a hard mount, one writing and fsyncing files through the native client,
 * one PUTting objects through S3. None of them sees an error (the mount and the client wait for
 * the cluster; the S3 client retries, as SDKs do, through the gateway's own restarts), and
 * everything they were told was stored reads back as it was written.
 */
class RoleRestartLoopIT {
    private static final int ROUNDS_PER_ROLE = 3;
    private static final int RECORD_BYTES = 16 * 1024;

    @TempDir
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
                Process appender = startAppender(mountPoint.resolve("journal"), stop);
                Map<String, byte[]> nativeFiles = new ConcurrentHashMap<>();
                Map<String, byte[]> objects = new ConcurrentHashMap<>();
                ConcurrentLinkedQueue<String> errors = new ConcurrentLinkedQueue<>();
                AtomicBoolean running = new AtomicBoolean(true);
                Thread nativeWriter = Thread.ofPlatform().name("native-writer").start(() -> {
                    Random bytes = new Random(1);
                    for (int i = 0; running.get(); i++) {
                        byte[] content = new byte[64 * 1024 + bytes.nextInt(256 * 1024)];
                        bytes.nextBytes(content);
                        try (PlinthFile file = client.create("/native-" + i, 0644, true, new Layout(1, 1 << 20, 1 << 20, "default", 1, List.of()))) {
                            file.write(0, ByteBuffer.wrap(content));
                            file.fsync();
                            nativeFiles.put("/native-" + i, content);
                        } catch (RuntimeException e) {
                            errors.add("native client: " + e);
                            return;
                        }
                    }
                });
                Thread s3Writer = Thread.ofPlatform().name("s3-writer").start(() -> {
                    Random bytes = new Random(2);
                    for (int i = 0; running.get(); i++) {
                        byte[] content = new byte[1 + bytes.nextInt(200 * 1024)];
                        bytes.nextBytes(content);
                        String objectKey = "object-" + i;
                        try {
                            s3.putObject(b -> b.bucket("loop").key(objectKey), RequestBody.fromBytes(content));
                            objects.put(objectKey, content);
                        } catch (RuntimeException e) {
                            errors.add("S3: " + e);
                            return;
                        }
                    }
                });

                List<String> roles = List.of("storage", "meta", "mgmt", "gateway");
                for (int round = 0; round < ROUNDS_PER_ROLE * roles.size(); round++) {
                    String role = roles.get(round % roles.size());
                    Thread.sleep(500 + random.nextInt(1500));
                    assertThat(appender.isAlive()).as("the appender still runs before round %d", round).isTrue();
                    assertThat(errors).as("errors the applications saw before round %d", round).isEmpty();
                    switch (role) {
                        case "storage" -> {
                            ProcessCluster.StorageNodeProcess node = cluster.storageNodes().get(random.nextInt(2));
                            node.kill();
                            node.start();
                        }
                        case "meta" -> {
                            cluster.meta().kill();
                            cluster.meta().start();
                        }
                        case "mgmt" -> {
                            ProcessCluster.MgmtReplica mgmt = cluster.mgmtReplicas().getFirst();
                            mgmt.kill();
                            mgmt.start();
                        }
                        default -> {
                            gateway.kill();
                            gateway.start();
                        }
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
                List<String> lines = Files.readAllLines(mountPoint.resolve("journal"));
                assertThat(lines.size()).as("every fsynced line is there").isGreaterThanOrEqualTo(acknowledged);
                for (int i = 0; i < lines.size(); i++) {
                    assertThat(lines.get(i)).hasSize(RECORD_BYTES - 1).startsWith(String.format("line %08d x", i));
                }
                for (Map.Entry<String, byte[]> file : nativeFiles.entrySet()) {
                    assertThat(ClusterSmokeTest.readAll(client, file.getKey())).as(file.getKey()).isEqualTo(file.getValue());
                }
                for (Map.Entry<String, byte[]> object : objects.entrySet()) {
                    assertThat(s3.getObjectAsBytes(b -> b.bucket("loop").key(object.getKey())).asByteArray()).as(object.getKey())
                            .isEqualTo(object.getValue());
                }
                assertThat(nativeFiles).as("the native client got work done").isNotEmpty();
                assertThat(objects).as("the S3 client got work done").isNotEmpty();
                System.out.printf("%d kills and restarts: %d lines fsynced through the mount, %d files through the client, %d objects"
                        + " through S3; none lost, no error seen%n", ROUNDS_PER_ROLE * roles.size(), acknowledged, nativeFiles.size(), objects.size());
            }
        }
    }

    /** Appends fsynced records through the mount until {@code stop} exists; prints how many were acknowledged. */
    private static Process startAppender(Path journal, Path stop) throws java.io.IOException {
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
                """.replace("RECORD_BYTES", Integer.toString(RECORD_BYTES)), journal.toString(), stop.toString()).redirectErrorStream(true).start();
    }

    /** An S3 client that retries for as long as a gateway takes to start again, as an application's would be set up to. */
    private static S3Client patientSdk(String endpoint, MgmtMessages.AccessKey key) {
        return S3Client.builder().endpointOverride(URI.create(endpoint)).region(Region.US_EAST_1)
                .credentialsProvider(StaticCredentialsProvider.create(AwsBasicCredentials.create(key.accessKeyId(), key.secretKey())))
                .serviceConfiguration(S3Configuration.builder().pathStyleAccessEnabled(true).build())
                .overrideConfiguration(o -> o.retryStrategy(r -> r.maxAttempts(60)
                        .backoffStrategy(software.amazon.awssdk.retries.api.BackoffStrategy.fixedDelay(java.time.Duration.ofMillis(500)))))
                .build();
    }
}
