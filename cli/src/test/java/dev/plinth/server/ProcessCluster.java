package dev.plinth.server;

import dev.plinth.client.ClientOptions;
import dev.plinth.client.PlinthClient;
import dev.plinth.common.Config;
import dev.plinth.common.Credentials;
import dev.plinth.wire.ClusterSecret;
import dev.plinth.wire.HostPort;
import dev.plinth.wire.messages.MgmtMessages.ClusterMap;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A cluster of separate JVMs on 127.0.0.1: `plinth mgmt`, `plinth meta` and storage nodes
 * (`plinth storage`, one target each), each with a small heap, for failure tests that kill
 * (SIGKILL), pause (SIGSTOP) and restart nodes for real. Logs go to files under the directory.
 */
final class ProcessCluster implements AutoCloseable {
    private static final Pattern RPC = Pattern.compile("\"rpc\"\\s*:\\s*\"([^\"]+)\"");

    private final Path directory;
    private final List<String> settings;
    private final List<Process> roles = new ArrayList<>();
    private final List<StorageNodeProcess> storage = new ArrayList<>();
    private HostPort mgmtAddress;
    private Path secretFile;
    private java.util.Map<Integer, List<String>> nodeSettings = java.util.Map.of();

    /** One storage node: its target directory and, while it runs, its process. */
    final class StorageNodeProcess {
        final int index;
        final Path target;
        /** Settings for this node only, on top of the cluster's. */
        List<String> ownSettings = List.of();
        Process process;
        int targetId;

        StorageNodeProcess(int index, Path target) {
            this.index = index;
            this.target = target;
        }

        void start() throws IOException, InterruptedException {
            Path endpoints = directory.resolve("storage-" + index + ".json");
            Files.deleteIfExists(endpoints);
            List<String> arguments = new ArrayList<>(List.of("storage", "--target", target.toString(), "--mgmt", mgmtAddress.toString(),
                    "--secret-file", secretFile.toString(), "--endpoints", endpoints.toString()));
            for (String setting : ownSettings) {
                arguments.addAll(List.of("--set", setting));
            }
            process = launch("storage-" + index, endpoints, arguments.toArray(String[]::new));
            Matcher matcher = Pattern.compile("\"targets\"\\s*:\\s*\"(\\d+)").matcher(Files.readString(endpoints));
            targetId = matcher.find() ? Integer.parseInt(matcher.group(1)) : -1;
        }

        /** SIGKILL: no shutdown hook, no flush. */
        void kill() throws InterruptedException {
            process.destroyForcibly();
            process.waitFor(30, TimeUnit.SECONDS);
        }

        /** SIGSTOP: the node hangs with its sockets open, as a stuck machine does. */
        void pause() throws IOException, InterruptedException {
            signal("STOP");
        }

        void resume() throws IOException, InterruptedException {
            signal("CONT");
        }

        private void signal(String name) throws IOException, InterruptedException {
            new ProcessBuilder("kill", "-" + name, Long.toString(process.pid())).inheritIO().start().waitFor();
        }
    }

    private ProcessCluster(Path directory, List<String> settings) {
        this.directory = directory;
        this.settings = settings;
    }

    /** Starts mgmt, meta and {@code storageNodes} storage nodes; {@code settings} are KEY=VALUE for every process. */
    static ProcessCluster start(Path directory, int storageNodes, List<String> settings) throws IOException, InterruptedException {
        return start(directory, storageNodes, settings, java.util.Map.of());
    }

    /** As above; {@code nodeSettings} adds settings for single storage nodes (by index). */
    static ProcessCluster start(Path directory, int storageNodes, List<String> settings, java.util.Map<Integer, List<String>> nodeSettings)
            throws IOException, InterruptedException {
        ProcessCluster cluster = new ProcessCluster(directory, settings);
        cluster.nodeSettings = nodeSettings;
        try {
            cluster.startRoles(storageNodes);
            return cluster;
        } catch (IOException | InterruptedException | RuntimeException e) {
            cluster.close();
            throw e;
        }
    }

    private void startRoles(int storageNodes) throws IOException, InterruptedException {
        Path mgmtData = directory.resolve("mgmt");
        secretFile = mgmtData.resolve("cluster.secret");
        Files.createDirectories(mgmtData);
        ClusterSecret.readOrCreate(secretFile);
        roles.add(launch("mgmt", mgmtData.resolve("endpoints.json"), "mgmt", "--data", mgmtData.toString(), "--secret-file", secretFile.toString()));
        mgmtAddress = readRpc(mgmtData.resolve("endpoints.json"));
        Path metaData = directory.resolve("meta");
        roles.add(launch("meta", metaData.resolve("endpoints.json"), "meta", "--data", metaData.toString(), "--mgmt", mgmtAddress.toString(),
                "--secret-file", secretFile.toString()));
        for (int i = 0; i < storageNodes; i++) {
            StorageNodeProcess node = new StorageNodeProcess(i, directory.resolve("node-" + i).resolve("target"));
            node.ownSettings = nodeSettings.getOrDefault(i, List.of());
            storage.add(node);
            node.start();
        }
    }

    private Process launch(String name, Path endpoints, String... arguments) throws IOException, InterruptedException {
        Files.deleteIfExists(endpoints);
        String java = ProcessHandle.current().info().command().orElseThrow();
        List<String> command = new ArrayList<>(List.of(java, "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                "--enable-native-access=ALL-UNNAMED", "--sun-misc-unsafe-memory-access=allow",
                "-cp", System.getProperty("java.class.path"), "dev.plinth.cli.Main"));
        command.addAll(List.of(arguments));
        command.addAll(List.of("--listen", "127.0.0.1:0", "--http", "127.0.0.1:0"));
        for (String setting : settings) {
            command.addAll(List.of("--set", setting));
        }
        Path log = directory.resolve(name + ".log");
        Process process = new ProcessBuilder(command).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile())).start();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (System.nanoTime() < deadline) {
            if (!process.isAlive()) {
                throw new IllegalStateException(name + " exited with " + process.exitValue() + "; see " + log);
            }
            if (Files.exists(endpoints) && RPC.matcher(Files.readString(endpoints)).find()) {
                return process;
            }
            Thread.sleep(50);
        }
        process.destroyForcibly();
        throw new IllegalStateException(name + " did not start in 60 s; see " + log);
    }

    private static HostPort readRpc(Path endpoints) throws IOException {
        Matcher matcher = RPC.matcher(Files.readString(endpoints));
        if (!matcher.find()) {
            throw new IllegalStateException("no rpc address in " + endpoints);
        }
        return HostPort.parse(matcher.group(1));
    }

    List<StorageNodeProcess> storageNodes() {
        return storage;
    }

    /** mgmt's HTTP endpoint (metrics and the status page). */
    HostPort mgmtHttp() throws IOException {
        Matcher matcher = Pattern.compile("\"http\"\\s*:\\s*\"([^\"]+)\"").matcher(Files.readString(directory.resolve("mgmt").resolve("endpoints.json")));
        if (!matcher.find()) {
            throw new IllegalStateException("mgmt has no HTTP endpoint");
        }
        return HostPort.parse(matcher.group(1));
    }

    HostPort mgmtAddress() {
        return mgmtAddress;
    }

    Path secretFile() {
        return secretFile;
    }

    PlinthClient client(Config config) {
        return PlinthClient.connect(new ClientOptions(mgmtAddress, ClusterSecret.read(secretFile), Credentials.ROOT, config, "failure-test"));
    }

    /** Waits until the cluster map (as {@code client} fetches it) satisfies {@code condition}; returns that map. */
    static ClusterMap awaitMap(PlinthClient client, Predicate<ClusterMap> condition, long timeoutMillis) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMillis);
        while (true) {
            ClusterMap map = client.refreshClusterMap();
            if (condition.test(map)) {
                return map;
            }
            if (System.nanoTime() > deadline) {
                throw new AssertionError("cluster map did not reach the expected state in " + timeoutMillis + " ms: " + map);
            }
            Thread.sleep(100);
        }
    }

    /**
     * Gives {@code directory} (created if missing) {@code layout} once the metadata service can
     * place files with it: meta sees chains formed by mgmt within its map refresh (200 ms), so a
     * probe file is created until that works.
     */
    static void replicatedDirectory(PlinthClient client, String directory, dev.plinth.common.Layout layout) throws InterruptedException {
        client.mkdirs(directory, 0755);
        client.setLayout(directory, layout);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (true) {
            try {
                client.create(directory + "/.placement-probe", 0644, false, null).close();
                client.delete(directory + "/.placement-probe");
                return;
            } catch (dev.plinth.common.PlinthException e) {
                if (e.code() != dev.plinth.common.ErrorCode.NO_SPACE || System.nanoTime() > deadline) {
                    throw e;
                }
                Thread.sleep(100);
            }
        }
    }

    @Override
    public void close() {
        for (StorageNodeProcess node : storage) {
            if (node.process != null) {
                try {
                    node.resume(); // a paused process ignores SIGTERM until it runs again
                } catch (IOException | InterruptedException e) {
                    // it is killed below anyway
                }
                node.process.destroyForcibly();
            }
        }
        for (int i = roles.size() - 1; i >= 0; i--) {
            roles.get(i).destroyForcibly();
        }
        for (StorageNodeProcess node : storage) {
            if (node.process != null) {
                try {
                    node.process.waitFor(30, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        }
    }
}
