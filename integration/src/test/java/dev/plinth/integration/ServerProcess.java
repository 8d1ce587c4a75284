package dev.plinth.integration;

import dev.plinth.client.ClientOptions;
import dev.plinth.client.PlinthClient;
import dev.plinth.common.Config;
import dev.plinth.common.Credentials;
import dev.plinth.wire.ClusterSecret;
import dev.plinth.wire.HostPort;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** `plinth server` as a separate JVM (small heap), for failure tests that kill it for real. */
final class ServerProcess implements AutoCloseable {
    private final Process process;
    private final Path data;
    private final HostPort address;

    private ServerProcess(Process process, Path data, HostPort address) {
        this.process = process;
        this.data = data;
        this.address = address;
    }

    static ServerProcess start(Path data, Path log) throws IOException, InterruptedException {
        return start(data, log, "127.0.0.1:0");
    }

    /** Starts on a given address, so that a restarted server is found where clients left it. */
    static ServerProcess start(Path data, Path log, String listen) throws IOException, InterruptedException {
        return start(data, log, listen, List.of("-Xmx512m"));
    }

    /** Starts with the given JVM memory options (heap, direct memory). */
    static ServerProcess start(Path data, Path log, String listen, List<String> memoryOptions) throws IOException, InterruptedException {
        return start(data, log, listen, memoryOptions, List.of());
    }

    /** As above, with more arguments for `plinth server` (settings: --set KEY=VALUE). */
    static ServerProcess start(Path data, Path log, String listen, List<String> memoryOptions, List<String> arguments)
            throws IOException, InterruptedException {
        Files.createDirectories(data);
        Path endpoints = data.resolve("endpoints.json");
        Files.deleteIfExists(endpoints);
        List<String> all = new java.util.ArrayList<>(List.of("server", "--data", data.toString(), "--listen", listen,
                "--http", "127.0.0.1:0", "--s3", "127.0.0.1:0"));
        all.addAll(arguments);
        List<String> command = TestProcesses.plinth(memoryOptions, all);
        Process process = new ProcessBuilder(command)
                .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile())).start();
        return new ServerProcess(process, data, TestProcesses.awaitEndpoints(process, "server", endpoints, log));
    }

    /** The S3 endpoint URL the server wrote to endpoints.json. */
    String s3Url() throws IOException {
        Matcher matcher = Pattern.compile("\"s3\"\\s*:\\s*\"([^\"]+)\"").matcher(Files.readString(data.resolve("endpoints.json")));
        if (!matcher.find()) {
            throw new IllegalStateException("no S3 endpoint in " + data.resolve("endpoints.json"));
        }
        return matcher.group(1);
    }

    HostPort rpcAddress() {
        return address;
    }

    Path dataDirectory() {
        return data;
    }

    PlinthClient client(Config config) {
        return PlinthClient.connect(new ClientOptions(address, ClusterSecret.read(data.resolve("cluster.secret")), Credentials.ROOT,
                config, "failure-test"));
    }

    /** SIGKILL: no shutdown hook, no flush, nothing. */
    void kill() throws InterruptedException {
        process.destroyForcibly();
        process.waitFor(30, TimeUnit.SECONDS);
    }

    /** SIGTERM, as an operator stops it; returns its exit status, or -1 if it did not stop within {@code seconds}. */
    int stop(long seconds) throws InterruptedException {
        process.destroy();
        return process.waitFor(seconds, TimeUnit.SECONDS) ? process.exitValue() : -1;
    }

    @Override
    public void close() throws InterruptedException {
        process.destroy();
        if (!process.waitFor(30, TimeUnit.SECONDS)) {
            process.destroyForcibly();
        }
    }
}
