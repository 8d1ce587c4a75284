package dev.plinth.integration.s3;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.plinth.gateway.S3Credentials;
import dev.plinth.client.PlinthClient;
import dev.plinth.common.Config;
import dev.plinth.common.Credentials;
import dev.plinth.fuse.FuseMount;
import dev.plinth.fuse.MountOptions;
import dev.plinth.integration.MiniCluster;
import dev.plinth.integration.TestProcesses;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * The gateway under the S3 clients users have, from Debian: the AWS CLI, s3cmd, boto3 and rclone
 * (`.ci/run` installs them), and the same files through a FUSE mount of the cluster, byte for byte.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class S3ClientsIT {
    private static final Duration LIMIT = Duration.ofMinutes(3);

    @TempDir
    static Path directory;

    private MiniCluster cluster;
    private String endpoint;
    private S3Credentials.KeyPair key;
    private final Random random = new Random(7);

    @BeforeAll
    void start() {
        dev.plinth.testing.Prerequisites.require(dev.plinth.testing.Prerequisites.AWS_CLI, dev.plinth.testing.Prerequisites.S3CMD,
                dev.plinth.testing.Prerequisites.RCLONE, dev.plinth.testing.Prerequisites.PYTHON, dev.plinth.testing.Prerequisites.BOTO3);
        cluster = MiniCluster.start(directory.resolve("data"));
        endpoint = S3Testing.endpoint(cluster);
        key = S3Testing.ownerKey(cluster);
    }

    @AfterAll
    void stop() {
        if (cluster != null) {
            cluster.close();
        }
    }

    private Path randomFile(Path path, int size) throws IOException {
        byte[] data = new byte[size];
        random.nextBytes(data);
        Files.createDirectories(path.getParent());
        return Files.write(path, data);
    }

    private static void assertSameFiles(Path expected, Path actual) throws IOException {
        assertThat(Files.mismatch(expected, actual)).as("%s and %s differ", expected, actual).isEqualTo(-1L);
    }

    // ---- the AWS CLI

    private Map<String, String> awsEnvironment() throws IOException {
        Path config = Files.writeString(directory.resolve("aws-config"),
                "[default]\nregion = us-east-1\ns3 =\n  addressing_style = path\n  multipart_threshold = 8MB\n  multipart_chunksize = 5MB\n");
        Map<String, String> environment = new HashMap<>();
        environment.put("AWS_SHARED_CREDENTIALS_FILE", cluster.server().s3CredentialsFile().toString());
        environment.put("AWS_CONFIG_FILE", config.toString());
        environment.put("AWS_EC2_METADATA_DISABLED", "true");
        environment.put("AWS_PAGER", "");
        return environment;
    }

    private String aws(String... arguments) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>(List.of("/usr/bin/aws", "--endpoint-url", endpoint));
        command.addAll(List.of(arguments));
        return TestProcesses.run(command, awsEnvironment(), LIMIT);
    }

    @Test
    void awsCli() throws Exception {
        Path local = directory.resolve("aws-local");
        Path big = randomFile(local.resolve("big.bin"), 23 << 20); // multipart: 5 parts
        randomFile(local.resolve("tree/a.txt"), 1000);
        randomFile(local.resolve("tree/sub/b.bin"), 300_000);
        randomFile(local.resolve("tree/sub/deeper/c d.bin"), 10);
        aws("s3", "mb", "s3://aws-cli");
        aws("s3", "cp", "--no-progress", big.toString(), "s3://aws-cli/uploads/big.bin");
        assertThat(aws("s3api", "head-object", "--bucket", "aws-cli", "--key", "uploads/big.bin")).contains("\"ContentLength\": " + (23 << 20))
                .contains("-5\\\"");
        aws("s3", "cp", "--no-progress", "s3://aws-cli/uploads/big.bin", local.resolve("big.out").toString());
        assertSameFiles(big, local.resolve("big.out"));

        aws("s3", "sync", "--no-progress", local.resolve("tree").toString(), "s3://aws-cli/tree");
        assertThat(aws("s3", "ls", "--recursive", "s3://aws-cli/tree/")).contains("tree/a.txt", "tree/sub/b.bin", "tree/sub/deeper/c d.bin");
        assertThat(aws("s3", "ls", "s3://aws-cli/")).contains("PRE tree/", "PRE uploads/");
        // a second sync has nothing to do; a sync down gets the same tree back
        assertThat(aws("s3", "sync", "--no-progress", local.resolve("tree").toString(), "s3://aws-cli/tree")).doesNotContain("upload:");
        aws("s3", "sync", "--no-progress", "s3://aws-cli/tree", local.resolve("tree-back").toString());
        assertSameFiles(local.resolve("tree/sub/b.bin"), local.resolve("tree-back/sub/b.bin"));
        assertSameFiles(local.resolve("tree/sub/deeper/c d.bin"), local.resolve("tree-back/sub/deeper/c d.bin"));

        aws("s3api", "put-object", "--bucket", "aws-cli", "--key", "meta.txt", "--body", local.resolve("tree/a.txt").toString(),
                "--metadata", "team=vision,run=42", "--content-type", "text/plain");
        assertThat(aws("s3api", "head-object", "--bucket", "aws-cli", "--key", "meta.txt")).contains("\"team\": \"vision\"")
                .contains("\"ContentType\": \"text/plain\"");

        // server-side encryption, tags and flexible checksums through the s3 and s3api verbs
        aws("s3", "cp", "--no-progress", "--sse", "AES256", local.resolve("tree/a.txt").toString(), "s3://aws-cli/encrypted.txt");
        assertThat(aws("s3api", "head-object", "--bucket", "aws-cli", "--key", "encrypted.txt")).contains("\"ServerSideEncryption\": \"AES256\"");
        aws("s3", "cp", "--no-progress", "s3://aws-cli/encrypted.txt", local.resolve("encrypted.out").toString());
        assertSameFiles(local.resolve("tree/a.txt"), local.resolve("encrypted.out"));
        aws("s3api", "put-object-tagging", "--bucket", "aws-cli", "--key", "meta.txt", "--tagging", "TagSet=[{Key=owner,Value=vision team}]");
        assertThat(aws("s3api", "get-object-tagging", "--bucket", "aws-cli", "--key", "meta.txt")).contains("\"Value\": \"vision team\"");
        aws("s3api", "put-object", "--bucket", "aws-cli", "--key", "summed.txt", "--body", local.resolve("tree/a.txt").toString(),
                "--checksum-algorithm", "SHA256");
        String sha256 = java.util.Base64.getEncoder().encodeToString(java.security.MessageDigest.getInstance("SHA-256")
                .digest(Files.readAllBytes(local.resolve("tree/a.txt"))));
        assertThat(aws("s3api", "get-object-attributes", "--bucket", "aws-cli", "--key", "summed.txt", "--object-attributes", "Checksum",
                "ObjectSize")).contains("\"ChecksumSHA256\": \"" + sha256 + "\"").contains("\"ObjectSize\": 1000");

        String url = aws("s3", "presign", "s3://aws-cli/meta.txt", "--expires-in", "300").strip();
        HttpResponse<byte[]> fetched = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create(url)).build(),
                HttpResponse.BodyHandlers.ofByteArray());
        assertThat(fetched.statusCode()).isEqualTo(200);
        assertThat(fetched.body()).isEqualTo(Files.readAllBytes(local.resolve("tree/a.txt")));

        aws("s3", "rm", "--recursive", "s3://aws-cli/");
        assertThat(aws("s3", "ls", "--recursive", "s3://aws-cli/")).isBlank();
        aws("s3", "rb", "s3://aws-cli");
        assertThat(aws("s3", "ls")).doesNotContain("aws-cli");
    }

    // ---- s3cmd

    private String s3cmd(String... arguments) throws IOException, InterruptedException {
        URI uri = URI.create(endpoint);
        Path config = Files.writeString(directory.resolve("s3cfg"), "[default]\naccess_key = " + key.accessKeyId() + "\nsecret_key = "
                + key.secretKey() + "\nhost_base = " + uri.getHost() + ":" + uri.getPort() + "\nhost_bucket = " + uri.getHost() + ":"
                + uri.getPort() + "\nuse_https = False\nsignature_v2 = False\nbucket_location = us-east-1\n");
        List<String> command = new ArrayList<>(List.of("/usr/bin/s3cmd", "-c", config.toString(), "--no-progress"));
        command.addAll(List.of(arguments));
        return TestProcesses.run(command, Map.of(), LIMIT);
    }

    @Test
    void s3cmd() throws Exception {
        Path local = directory.resolve("s3cmd-local");
        Path small = randomFile(local.resolve("small.bin"), 4096);
        Path big = randomFile(local.resolve("big.bin"), 12 << 20);
        s3cmd("mb", "s3://s3cmd");
        s3cmd("put", small.toString(), "s3://s3cmd/small.bin");
        s3cmd("put", "--multipart-chunk-size-mb=5", big.toString(), "s3://s3cmd/dir/big.bin");
        String listing = s3cmd("ls", "--recursive", "s3://s3cmd");
        assertThat(listing).contains("s3://s3cmd/small.bin", "s3://s3cmd/dir/big.bin").contains(String.valueOf(12 << 20));
        s3cmd("get", "--force", "s3://s3cmd/dir/big.bin", local.resolve("big.out").toString());
        s3cmd("get", "--force", "s3://s3cmd/small.bin", local.resolve("small.out").toString());
        assertSameFiles(big, local.resolve("big.out"));
        assertSameFiles(small, local.resolve("small.out"));
        assertThat(s3cmd("info", "s3://s3cmd/dir/big.bin")).contains("File size: " + (12 << 20));
        s3cmd("del", "s3://s3cmd/small.bin", "s3://s3cmd/dir/big.bin");
        assertThat(s3cmd("ls", "--recursive", "s3://s3cmd")).isBlank();
        s3cmd("rb", "s3://s3cmd");
    }

    // ---- boto3

    @Test
    void boto3() throws Exception {
        String script = Path.of("target", "test-classes", "s3", "boto3_suite.py").toAbsolutePath().toString();
        String output = TestProcesses.run(List.of("/usr/bin/python3", script, endpoint, key.accessKeyId(), key.secretKey(), "boto3"),
                Map.of("AWS_EC2_METADATA_DISABLED", "true"), LIMIT);
        assertThat(output).contains("boto3 suite: all checks passed");
    }

    /** The cases where gateways are easy to get wrong (S3 as AWS documents it), through boto3 with two keys of different uids. */
    @Test
    void boto3Conformance() throws Exception {
        assertThat(runWithTwoKeys("conformance_suite.py", 4343, "conformance")).contains("conformance suite: all checks passed");
    }

    /** Every implemented operation over the errors AWS documents for it (error_sweep.py). */
    @Test
    void boto3ErrorSweep() throws Exception {
        assertThat(runWithTwoKeys("error_sweep.py", 4344, "error-sweep")).contains(" 0 answered otherwise than AWS");
    }

    /**
     * Runs a Python script of {@code s3/} as {@code script ENDPOINT OWNER_KEY OWNER_SECRET
     * OTHER_KEY OTHER_SECRET BUCKET}, the other key a new one for {@code otherUid}; returns its output.
     */
    private String runWithTwoKeys(String script, int otherUid, String bucket) throws Exception {
        dev.plinth.wire.messages.MgmtMessages.AccessKey other;
        try (PlinthClient plinth = cluster.client()) {
            other = plinth.createAccessKey(new dev.plinth.wire.messages.MgmtMessages.CreateAccessKey(null, null, otherUid, otherUid, List.of(),
                    bucket));
        }
        String path = Path.of("target", "test-classes", "s3", script).toAbsolutePath().toString();
        return TestProcesses.run(List.of("/usr/bin/python3", path, endpoint, key.accessKeyId(), key.secretKey(), other.accessKeyId(),
                other.secretKey(), bucket), Map.of("AWS_EC2_METADATA_DISABLED", "true"), LIMIT);
    }

    // ---- rclone

    @Test
    void rcloneCopyAndCheck() throws Exception {
        Path local = directory.resolve("rclone-local");
        for (int i = 0; i < 20; i++) {
            randomFile(local.resolve("shard-" + (i % 4) + "/sample-" + i + ".bin"), 1000 + random.nextInt(200_000));
        }
        randomFile(local.resolve("large.bin"), 9 << 20);
        Path config = Files.writeString(directory.resolve("rclone.conf"), "[plinth]\ntype = s3\nprovider = Other\naccess_key_id = "
                + key.accessKeyId() + "\nsecret_access_key = " + key.secretKey() + "\nendpoint = " + endpoint
                + "\nregion = us-east-1\nforce_path_style = true\n");
        List<String> rclone = List.of("/usr/bin/rclone", "--config", config.toString(), "--s3-upload-cutoff", "5M", "--s3-chunk-size", "5M");
        // rclone fails outright on a CA bundle variable (set on some machines) even for plain HTTP
        Map<String, String> environment = new HashMap<>();
        environment.put("AWS_CA_BUNDLE", null);
        TestProcesses.run(concat(rclone, "mkdir", "plinth:rclone"), environment, LIMIT);
        TestProcesses.run(concat(rclone, "copy", local.toString(), "plinth:rclone/data"), environment, LIMIT);
        String check = TestProcesses.run(concat(rclone, "check", local.toString(), "plinth:rclone/data"), environment, LIMIT);
        assertThat(check).contains("0 differences found").contains("21 matching files");
        TestProcesses.run(concat(rclone, "copy", "plinth:rclone/data", directory.resolve("rclone-back").toString()), environment, LIMIT);
        assertSameFiles(local.resolve("large.bin"), directory.resolve("rclone-back/large.bin"));
        assertSameFiles(local.resolve("shard-3/sample-7.bin"), directory.resolve("rclone-back/shard-3/sample-7.bin"));
    }

    private static List<String> concat(List<String> base, String... more) {
        List<String> all = new ArrayList<>(base);
        all.addAll(List.of(more));
        return all;
    }

    // ---- `plinth gateway`: a gateway in its own process, as on a gateway node

    @Test
    void standaloneGatewayProcess() throws Exception {
        Process gateway = new ProcessBuilder(dev.plinth.integration.TestProcesses.plinth(List.of("-Xmx256m"), List.of("gateway",
                "--server", cluster.server().rpcAddress().toString(), "--secret-file", cluster.server().secretFile().toString(),
                "--listen", "127.0.0.1:0"))).redirectErrorStream(true).start();
        try {
            java.io.BufferedReader out = new java.io.BufferedReader(new java.io.InputStreamReader(gateway.getInputStream(), StandardCharsets.UTF_8));
            String url = null;
            while (url == null) {
                String line = out.readLine();
                if (line == null) {
                    break;
                }
                System.out.println("gateway: " + line);
                java.util.regex.Matcher matcher = java.util.regex.Pattern.compile("s3:\\s+(http://\\S+)").matcher(line);
                if (matcher.find()) {
                    url = matcher.group(1);
                }
            }
            assertThat(url).as("the gateway printed its address").isNotNull();
            List<String> command = new ArrayList<>(List.of("/usr/bin/aws", "--endpoint-url", url, "s3", "mb", "s3://standalone"));
            TestProcesses.run(command, awsEnvironment(), LIMIT);
            command = new ArrayList<>(List.of("/usr/bin/aws", "--endpoint-url", url, "s3", "ls"));
            assertThat(TestProcesses.run(command, awsEnvironment(), LIMIT)).contains("standalone");
            try (var client = cluster.client()) {
                assertThat(client.exists("/standalone")).isTrue();
            }
        } finally {
            gateway.destroy(); // SIGTERM: stops cleanly
            assertThat(gateway.waitFor(30, java.util.concurrent.TimeUnit.SECONDS)).isTrue();
        }
        assertThat(gateway.exitValue()).isIn(0, 143);
    }

    // ---- the same files through a FUSE mount

    @Test
    void filesWrittenThroughTheMountAreObjectsAndBack() throws Exception {
        assertThat(Path.of("/dev/fuse")).as("the interop test mounts with FUSE (.ci/run installs fuse3)").exists();
        Path mountpoint = Files.createDirectories(directory.resolve("mnt"));
        Config config = MiniCluster.testConfig();
        try (PlinthClient client = cluster.client(Credentials.ROOT, config);
             FuseMount mount = FuseMount.mount(client, mountpoint, MountOptions.parse("", config, true));
             var s3 = S3Testing.sdk(endpoint, key)) {
            Path bucket = Files.createDirectories(mount.mountpoint().resolve("interop"));
            Path viaMount = randomFile(bucket.resolve("from-fuse/data.bin"), 5 << 20 | 123);
            byte[] viaS3 = s3.getObjectAsBytes(b -> b.bucket("interop").key("from-fuse/data.bin")).asByteArray();
            assertThat(viaS3).isEqualTo(Files.readAllBytes(viaMount));

            byte[] uploaded = new byte[(7 << 20) + 9];
            random.nextBytes(uploaded);
            s3.putObject(b -> b.bucket("interop").key("from-s3/ünïcode name.bin"), software.amazon.awssdk.core.sync.RequestBody.fromBytes(uploaded));
            assertThat(Files.readAllBytes(bucket.resolve("from-s3/ünïcode name.bin"))).isEqualTo(uploaded);

            // an SSE-S3 object reads as its plaintext through the mount, and is not written in place there
            s3.putObject(b -> b.bucket("interop").key("from-s3/encrypted.bin")
                    .serverSideEncryption(software.amazon.awssdk.services.s3.model.ServerSideEncryption.AES256),
                    software.amazon.awssdk.core.sync.RequestBody.fromBytes(uploaded));
            assertThat(Files.readAllBytes(bucket.resolve("from-s3/encrypted.bin"))).isEqualTo(uploaded);
            assertThatThrownBy(() -> Files.write(bucket.resolve("from-s3/encrypted.bin"), new byte[10]))
                    .isInstanceOf(java.nio.file.FileSystemException.class).hasMessageContaining("Operation not permitted");
            s3.deleteObject(b -> b.bucket("interop").key("from-s3/encrypted.bin"));

            // a file changed through the mount gets a new ETag and the new bytes
            String before = s3.headObject(b -> b.bucket("interop").key("from-s3/ünïcode name.bin")).eTag();
            Files.write(bucket.resolve("from-s3/ünïcode name.bin"), "rewritten".getBytes(StandardCharsets.UTF_8));
            var after = s3.getObjectAsBytes(b -> b.bucket("interop").key("from-s3/ünïcode name.bin"));
            assertThat(after.asUtf8String()).isEqualTo("rewritten");
            assertThat(after.response().eTag()).isNotEqualTo(before);
            // deleting through S3 removes the file from the mount, once the kernel's entry cache (mount.entry-timeout-millis) lapses
            s3.deleteObject(b -> b.bucket("interop").key("from-fuse/data.bin"));
            long deadline = System.nanoTime() + Duration.ofMillis(config.get(dev.plinth.common.Settings.MOUNT_ENTRY_TIMEOUT_MILLIS) + 5_000).toNanos();
            while (Files.exists(bucket.resolve("from-fuse/data.bin")) && System.nanoTime() < deadline) {
                Thread.sleep(100);
            }
            assertThat(Files.exists(bucket.resolve("from-fuse/data.bin"))).isFalse();
            assertThat(s3.listObjectsV2(b -> b.bucket("interop")).contents()).extracting(o -> o.key())
                    .containsExactly("from-s3/ünïcode name.bin");
        }
    }
}
