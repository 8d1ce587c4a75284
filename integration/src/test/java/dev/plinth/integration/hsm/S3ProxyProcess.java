package dev.plinth.integration.hsm;

import java.io.IOException;
import java.net.HttpURLConnection;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * s3proxy, a real S3 server over a directory, as a process of its own (its class path is
 * resolved by the peers/s3proxy module). Stopping and starting it again keeps its objects: the
 * tests use that for an archive that goes away and comes back.
 */
final class S3ProxyProcess implements AutoCloseable {
    static final String IDENTITY = "local-identity";
    static final String CREDENTIAL = "local-credential";
    private final Path directory;
    private final int port;
    private Process process;

    S3ProxyProcess(Path directory) throws IOException {
        this.directory = Files.createDirectories(directory);
        Files.createDirectories(directory.resolve("blobs"));
        try (ServerSocket socket = new ServerSocket(0)) {
            port = socket.getLocalPort();
        }
        Files.writeString(directory.resolve("s3proxy.conf"), String.join("\n",
                "s3proxy.endpoint=" + endpoint(),
                "s3proxy.authorization=aws-v2-or-v4",
                "s3proxy.identity=" + IDENTITY,
                "s3proxy.credential=" + CREDENTIAL,
                "jclouds.provider=filesystem-nio2",
                "jclouds.filesystem.basedir=" + directory.resolve("blobs")) + "\n");
        Files.writeString(credentialsFile(), "[default]\naws_access_key_id = " + IDENTITY + "\naws_secret_access_key = " + CREDENTIAL + "\n");
    }

    String endpoint() {
        return "http://127.0.0.1:" + port;
    }

    Path credentialsFile() {
        return directory.resolve("credentials");
    }

    /** The archive URI of {@code bucket}/{@code prefix} on this server. */
    String archiveUri(String bucket, String prefix) {
        return "s3://" + bucket + "/" + prefix + "?endpoint=" + endpoint() + "&path-style=true&credentials=" + credentialsFile();
    }

    S3ProxyProcess start() throws IOException, InterruptedException {
        Path peer = Path.of("..", "peers", "s3proxy").toAbsolutePath().normalize();
        if (!Files.isDirectory(peer.resolve("target").resolve("lib"))) {
            throw new IllegalStateException(peer.resolve("target/lib") + " is missing: build the peers/s3proxy module first (./mvnw install)");
        }
        String java = ProcessHandle.current().info().command().orElse("java");
        ProcessBuilder builder = new ProcessBuilder(List.of(java, "-Xmx256m", "-XX:+UseSerialGC",
                "-Dlogback.configurationFile=" + peer.resolve("logback.xml"), "-cp", peer.resolve("target").resolve("lib") + "/*",
                "org.gaul.s3proxy.Main", "--properties", directory.resolve("s3proxy.conf").toString()))
                .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.appendTo(directory.resolve("s3proxy.log").toFile()));
        process = builder.start();
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (System.nanoTime() < deadline) {
            if (!process.isAlive()) {
                throw new IllegalStateException("s3proxy exited: " + Files.readString(directory.resolve("s3proxy.log")));
            }
            try {
                HttpURLConnection connection = (HttpURLConnection) URI.create(endpoint() + "/").toURL().openConnection();
                connection.setConnectTimeout(500);
                connection.getResponseCode(); // any answer (403 unsigned) means it listens
                connection.disconnect();
                return this;
            } catch (IOException e) {
                Thread.sleep(100);
            }
        }
        throw new IllegalStateException("s3proxy did not start within 60 s");
    }

    void stop() throws InterruptedException {
        if (process != null) {
            process.destroyForcibly();
            process.waitFor();
            process = null;
        }
    }

    S3Client sdk() {
        return S3Client.builder().endpointOverride(URI.create(endpoint())).region(Region.US_EAST_1).forcePathStyle(true)
                .credentialsProvider(StaticCredentialsProvider.create(AwsBasicCredentials.create(IDENTITY, CREDENTIAL))).build();
    }

    @Override
    public void close() throws InterruptedException {
        stop();
    }
}
