package dev.plinth.integration;

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
 * A cluster of separate JVMs on 127.0.0.1: `plinth mgmt` (one, or a group of replicas),
 * `plinth meta` and storage nodes (`plinth storage`, one target each), each with a small heap,
 * for failure tests that kill (SIGKILL), pause (SIGSTOP) and restart nodes for real. Logs go to
 * files under the directory. An isolated cluster runs in a network namespace of its own
 * ({@link IsolatedNetwork}), each process on its own address, so that the link between two
 * nodes can be cut while both still reach everyone else.
 */
final class ProcessCluster implements AutoCloseable {

    private final Path directory;
    private final List<String> settings;
    private final List<MetaProcess> metas = new ArrayList<>();
    /** MDTs other than 0 ({@link #addMdt}). */
    private final List<MetaProcess> otherMdts = new ArrayList<>();
    private GatewayProcess gateway;
    private final List<StorageNodeProcess> storage = new ArrayList<>();
    private final List<MgmtReplica> mgmt = new ArrayList<>();
    private Path secretFile;
    private java.util.Map<Integer, List<String>> nodeSettings = java.util.Map.of();
    private IsolatedNetwork network;

    /**
     * A network namespace made for one cluster, reached from the test through a veth pair:
     * every process gets its own address on the namespace's side, and a cut between two of them
     * is a pair of blackhole routing rules (the local routing table is consulted after them), so
     * their packets vanish as on a broken link while each still reaches every other process.
     */
    static final class IsolatedNetwork implements AutoCloseable {
        final String namespace;
        private final String prefix;
        private final String insideLink;
        private int nextHost = 2;
        /** Namespaces of single processes, joined to the cluster's link by the bridge in its namespace. */
        private final List<String> ownNamespaces = new ArrayList<>();

        private IsolatedNetwork(String namespace, String prefix, String insideLink) {
            this.namespace = namespace;
            this.prefix = prefix;
            this.insideLink = insideLink;
        }

        static IsolatedNetwork create() throws IOException, InterruptedException {
            String id = Integer.toHexString(0x1000 + new java.util.Random().nextInt(0xe000));
            String namespace = "plinth-test-" + id;
            String prefix = "10.251." + (Integer.parseInt(id, 16) % 250 + 1) + ".";
            IsolatedNetwork network = new IsolatedNetwork(namespace, prefix, "plns" + id);
            try {
                ip("netns", "add", namespace);
                ip("-n", namespace, "link", "set", "lo", "up");
                ip("link", "add", "plrt" + id, "type", "veth", "peer", "name", network.insideLink, "netns", namespace);
                ip("addr", "add", prefix + "1/24", "dev", "plrt" + id);
                ip("link", "set", "plrt" + id, "up");
                ip("-n", namespace, "link", "set", network.insideLink, "up");
                // the addresses live on a bridge, so that processes in namespaces of their own can join the link (ownNamespace)
                ip("-n", namespace, "link", "add", "plbr", "type", "bridge");
                // a bridge without an address of its own takes its ports' lowest, so adding a port could change it; the
                // test's ARP entry for the addresses on the bridge would then name the old one, and packets to them
                // would be dropped until the entry expired (connects timed out after a group of MDT replicas joined)
                ip("-n", namespace, "link", "set", "plbr", "address", "02:00:00:00:" + id.substring(0, 2) + ":" + id.substring(2));
                ip("-n", namespace, "link", "set", network.insideLink, "master", "plbr");
                ip("-n", namespace, "link", "set", "plbr", "up");
                // the local table moves behind the rules a cut adds, or it would deliver local packets before they are seen
                ip("-n", namespace, "rule", "add", "pref", "100", "table", "local");
                ip("-n", namespace, "rule", "del", "pref", "0", "table", "local");
                return network;
            } catch (IOException | RuntimeException e) {
                network.close();
                throw e;
            }
        }

        /** A new address inside the namespace, for one process. */
        String addAddress() throws IOException, InterruptedException {
            String address = prefix + nextHost++;
            ip("-n", namespace, "addr", "add", address + "/24", "dev", "plbr");
            return address;
        }

        /**
         * A network namespace of its own for one process, with one address on the cluster's link
         * (a veth pair to the bridge): its packets carry that address as their source whatever
         * they connect to, so {@link #cutOwn} can cut it off from chosen peers even where the
         * process cannot choose its source address (Ratis's connections). Returns {namespace, address}.
         */
        String[] ownNamespace() throws IOException, InterruptedException {
            int index = ownNamespaces.size();
            String own = namespace + "-" + index;
            ip("netns", "add", own);
            ownNamespaces.add(own);
            ip("-n", own, "link", "set", "lo", "up");
            String outside = "plv" + insideLink.substring(4) + index;
            String inside = "plw" + insideLink.substring(4) + index;
            ip("link", "add", outside, "netns", namespace, "type", "veth", "peer", "name", inside, "netns", own);
            ip("-n", namespace, "link", "set", outside, "master", "plbr");
            ip("-n", namespace, "link", "set", outside, "up");
            String address = prefix + nextHost++;
            ip("-n", own, "addr", "add", address + "/24", "dev", inside);
            ip("-n", own, "link", "set", inside, "up");
            return new String[] {own, address};
        }

        /** Drops every packet from the process in namespace {@code own} to {@code peer}. */
        void cutOwn(String own, String peer) throws IOException, InterruptedException {
            ip("-n", own, "rule", "add", "pref", "10", "to", peer, "blackhole");
        }

        void healOwn(String own, String peer) throws IOException, InterruptedException {
            ip("-n", own, "rule", "del", "pref", "10", "to", peer, "blackhole");
        }

        /** Drops every packet between {@code a} and {@code b}, both ways. */
        void cut(String a, String b) throws IOException, InterruptedException {
            ip("-n", namespace, "rule", "add", "pref", "10", "from", a, "to", b, "blackhole");
            ip("-n", namespace, "rule", "add", "pref", "10", "from", b, "to", a, "blackhole");
        }

        void heal(String a, String b) throws IOException, InterruptedException {
            ip("-n", namespace, "rule", "del", "pref", "10", "from", a, "to", b, "blackhole");
            ip("-n", namespace, "rule", "del", "pref", "10", "from", b, "to", a, "blackhole");
        }

        private static void ip(String... arguments) throws IOException, InterruptedException {
            List<String> command = new ArrayList<>(List.of("ip"));
            command.addAll(List.of(arguments));
            Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
            String output = new String(process.getInputStream().readAllBytes());
            if (process.waitFor() != 0) {
                throw new IOException(String.join(" ", command) + " failed: " + output.trim());
            }
        }

        /** Deleting the namespace deletes the veth pair with it. */
        @Override
        public void close() {
            for (String own : ownNamespaces) {
                try {
                    ip("netns", "delete", own);
                } catch (IOException | InterruptedException e) {
                    System.err.println("cannot delete network namespace " + own + ": " + e.getMessage());
                }
            }
            try {
                ip("netns", "delete", namespace);
            } catch (IOException | InterruptedException e) {
                System.err.println("cannot delete network namespace " + namespace + ": " + e.getMessage());
            }
        }
    }

    /**
     * mgmt, meta and {@code storageNodes} storage nodes in a network namespace of their own, each
     * on its own address (needs root and iproute2), so that {@link #cut} can break single links.
     */
    static ProcessCluster startIsolated(Path directory, int storageNodes, List<String> settings) throws IOException, InterruptedException {
        return startIsolated(directory, 1, storageNodes, settings);
    }

    /** As above, with {@code metaReplicas} replicas of MDT 0, each on its own address too. */
    static ProcessCluster startIsolated(Path directory, int metaReplicas, int storageNodes, List<String> settings)
            throws IOException, InterruptedException {
        ProcessCluster cluster = new ProcessCluster(directory, settings);
        try {
            cluster.network = IsolatedNetwork.create();
            cluster.startRoles(1, metaReplicas, storageNodes);
            return cluster;
        } catch (IOException | InterruptedException | RuntimeException e) {
            cluster.close();
            throw e;
        }
    }

    /** Breaks the link between two processes of an isolated cluster: packets between them are dropped, both ways. */
    void cut(Member a, Member b) throws IOException, InterruptedException {
        if (a.ownNamespace != null && b.ownNamespace != null) {
            network.cutOwn(a.ownNamespace, b.host);
            network.cutOwn(b.ownNamespace, a.host);
        } else {
            network.cut(a.host, b.host);
        }
    }

    void heal(Member a, Member b) throws IOException, InterruptedException {
        if (a.ownNamespace != null && b.ownNamespace != null) {
            network.healOwn(a.ownNamespace, b.host);
            network.healOwn(b.ownNamespace, a.host);
        } else {
            network.heal(a.host, b.host);
        }
    }

    /** A process of the cluster that the nemesis may kill, pause and resume. */
    abstract static class Member {
        Process process;
        /** The address this process listens on and connects from. */
        String host = "127.0.0.1";
        /** Fault points the process starts with ({@code plinth.faults}: NAME[=VALUE],...); null for none. */
        String faults;
        /** The network namespace this process has to itself in an isolated cluster; null: the cluster's. */
        String ownNamespace;

        /** The JVM options this member's next start gets. */
        List<String> jvmOptions() {
            List<String> options = new ArrayList<>(List.of("-Xmx256m", "-XX:TieredStopAtLevel=1"));
            if (faults != null && !faults.isEmpty()) {
                options.add("-Dplinth.faults=" + faults);
            }
            return options;
        }

        /** Starts the process (again: a restart keeps its data and its RPC address where it has one). */
        abstract void start() throws IOException, InterruptedException;

        /** SIGKILL: no shutdown hook, no flush. */
        void kill() throws InterruptedException {
            process.destroyForcibly();
            process.waitFor(30, TimeUnit.SECONDS);
        }

        /** SIGSTOP: the process hangs with its sockets open, as a stuck machine does. */
        void pause() throws IOException, InterruptedException {
            signal("STOP");
        }

        void resume() throws IOException, InterruptedException {
            signal("CONT");
        }

        private void signal(String name) throws IOException, InterruptedException {
            if (!process.isAlive()) {
                return;
            }
            new ProcessBuilder("kill", "-" + name, Long.toString(process.pid())).inheritIO().start().waitFor();
        }
    }

    /** One replica of mgmt: its data directory, Raft address (with several replicas) and RPC address once started. */
    final class MgmtReplica extends Member {
        final int index;
        final Path data;
        final HostPort raft;
        HostPort rpc;

        MgmtReplica(int index, Path data, HostPort raft) {
            this.index = index;
            this.data = data;
            this.raft = raft;
        }

        @Override
        void start() throws IOException, InterruptedException {
            List<String> arguments = new ArrayList<>(List.of("mgmt", "--data", data.toString(), "--secret-file", secretFile.toString()));
            if (raft != null) {
                arguments.addAll(List.of("--raft", raft.toString(), "--peers",
                        String.join(",", mgmt.stream().map(replica -> replica.raft.toString()).toList())));
            }
            // a restarted replica keeps its RPC address: clients and nodes were given it
            arguments.addAll(List.of("--listen", rpc == null ? host + ":0" : rpc.toString()));
            Launched launched = launch("mgmt-" + index, data.resolve("endpoints.json"), host, jvmOptions(), arguments.toArray(String[]::new));
            process = launched.process();
            rpc = launched.rpc();
        }

        /** This replica's HTTP endpoint (metrics and the status page). */
        HostPort http() throws IOException {
            Matcher matcher = Pattern.compile("\"http\"\\s*:\\s*\"([^\"]+)\"").matcher(Files.readString(data.resolve("endpoints.json")));
            if (!matcher.find()) {
                throw new IllegalStateException("mgmt has no HTTP endpoint");
            }
            return HostPort.parse(matcher.group(1));
        }

        /** This replica's status page data, as JSON text. */
        String status() throws IOException, InterruptedException {
            var request = java.net.http.HttpRequest.newBuilder(java.net.URI.create("http://" + http() + "/status.json"))
                    .timeout(java.time.Duration.ofSeconds(5)).build();
            try (var http = java.net.http.HttpClient.newHttpClient()) {
                return http.send(request, java.net.http.HttpResponse.BodyHandlers.ofString()).body();
            }
        }
    }

    /** A metadata service replica (of MDT 0 unless {@link #mdt} says otherwise): its data directory and RPC address, which a restart keeps. */
    final class MetaProcess extends Member {
        final int index;
        final Path data;
        /** The MDT it serves. */
        int mdt;
        /** Its Raft address where MDT 0 has several replicas; null for a single one. */
        final HostPort raft;
        HostPort rpc;
        /** A replica added to the running group (`plinth meta --join`) rather than one of its first members. */
        boolean join;
        /** The replicas of its MDT's Raft group (MDT 0's, unless {@link #addMdtGroup} made it). */
        List<MetaProcess> group = metas;

        MetaProcess(int index, Path data, HostPort raft) {
            this.index = index;
            this.data = data;
            this.raft = raft;
        }

        @Override
        void start() throws IOException, InterruptedException {
            List<String> arguments = new ArrayList<>(List.of("meta", "--data", data.toString(), "--mgmt", mgmtAddresses(),
                    "--secret-file", secretFile.toString(), "--listen", rpc == null ? host + ":0" : rpc.toString(), "--mdt", Integer.toString(mdt)));
            if (join) {
                arguments.addAll(List.of("--raft", raft.toString(), "--join"));
            } else if (raft != null) {
                arguments.addAll(List.of("--raft", raft.toString(), "--peers",
                        String.join(",", group.stream().filter(replica -> !replica.join).map(replica -> replica.raft.toString()).toList())));
            }
            Launched launched = launch((raft == null ? "meta" : "meta-" + index) + (mdt == 0 ? "" : "-mdt" + mdt), ownNamespace, data.resolve("endpoints.json"), host, jvmOptions(),
                    arguments.toArray(String[]::new));
            process = launched.process();
            rpc = launched.rpc();
        }

        /** Whether this replica leads its MDT's Raft group now, as its metrics say (false when it does not answer). */
        boolean leads() {
            return metric("plinth_meta_raft_leader") == 1;
        }

        /** The index of the last log entry this replica applied, as its metrics say (-1 when it does not answer). */
        long appliedIndex() {
            return (long) metric("plinth_meta_raft_applied_index");
        }

        /** The value of one of this replica's MDT gauges, or -1 when it does not answer. */
        double metric(String name) {
            try {
                Matcher http = Pattern.compile("\"http\"\\s*:\\s*\"([^\"]+)\"").matcher(Files.readString(data.resolve("endpoints.json")));
                if (!http.find()) {
                    return -1;
                }
                var request = java.net.http.HttpRequest.newBuilder(java.net.URI.create("http://" + http.group(1) + "/metrics"))
                        .timeout(java.time.Duration.ofSeconds(2)).build();
                try (var client = java.net.http.HttpClient.newBuilder().connectTimeout(java.time.Duration.ofSeconds(2)).build()) {
                    String metrics = client.send(request, java.net.http.HttpResponse.BodyHandlers.ofString()).body();
                    return metrics.lines().filter(line -> line.startsWith(name + "{")).map(line -> Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1)))
                            .findFirst().orElse(-1.0);
                }
            } catch (IOException e) {
                return -1;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return -1;
            }
        }
    }

    /** An S3 gateway (`plinth gateway`) on a port of its own, which a restart keeps. */
    final class GatewayProcess extends Member {
        final HostPort s3;

        GatewayProcess(HostPort s3) {
            this.s3 = s3;
        }

        @Override
        void start() throws IOException, InterruptedException {
            List<String> command = new ArrayList<>();
            if (network != null) {
                command.addAll(List.of("ip", "netns", "exec", network.namespace));
            }
            command.addAll(TestProcesses.plinth(jvmOptions(),
                    List.of("gateway", "--listen", s3.toString(), "--http", host + ":0", "--server", mgmtAddresses(),
                            "--secret-file", secretFile.toString())));
            for (String setting : settings) {
                command.addAll(List.of("--set", setting));
            }
            Path log = directory.resolve("gateway.log");
            process = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile())).start();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (true) {
                try (var socket = new java.net.Socket(s3.host(), s3.port())) {
                    return;
                } catch (IOException e) {
                    if (!process.isAlive() || System.nanoTime() > deadline) {
                        throw new IOException("the gateway did not start; see " + log, e);
                    }
                    Thread.sleep(100);
                }
            }
        }

        String endpoint() {
            return "http://" + s3;
        }
    }

    /** Starts MDT {@code mdt} as one more `plinth meta` (a single replica) and waits until the cluster map lists it. */
    MetaProcess addMdt(int mdt) throws IOException, InterruptedException {
        return addMdt(mdt, null);
    }

    /** As above, started with fault points {@code faults} (null: none). */
    MetaProcess addMdt(int mdt, String faults) throws IOException, InterruptedException {
        MetaProcess meta = new MetaProcess(0, directory.resolve("meta-mdt" + mdt), null);
        meta.mdt = mdt;
        meta.faults = faults;
        meta.host = network == null ? "127.0.0.1" : network.addAddress();
        meta.rpc = new HostPort(meta.host, freePort());
        meta.start();
        otherMdts.add(meta);
        try (PlinthClient client = client(MiniCluster.testConfig())) {
            awaitMap(client, map -> map.mdt(mdt) != null, 30_000);
        }
        return meta;
    }

    /**
     * Starts MDT {@code mdt} as a Raft group of {@code replicas} `plinth meta` processes, each in a
     * network namespace of its own where the cluster is isolated (so that links between them can be
     * cut), and waits until the cluster map lists every replica.
     */
    List<MetaProcess> addMdtGroup(int mdt, int replicas) throws IOException, InterruptedException {
        List<MetaProcess> group = new ArrayList<>();
        for (int i = 0; i < replicas; i++) {
            String[] own = network != null ? network.ownNamespace() : null;
            String host = own != null ? own[1] : "127.0.0.1";
            MetaProcess meta = new MetaProcess(i, directory.resolve("meta-mdt" + mdt + "-" + i), new HostPort(host, freePort()));
            meta.mdt = mdt;
            meta.host = host;
            meta.ownNamespace = own == null ? null : own[0];
            meta.rpc = new HostPort(host, freePort());
            meta.group = group;
            group.add(meta);
        }
        for (MetaProcess meta : group) {
            meta.start();
            otherMdts.add(meta);
        }
        try (PlinthClient client = client(MiniCluster.testConfig())) {
            awaitMap(client, map -> map.mdt(mdt) != null && map.mdt(mdt).replicas().size() == replicas, 60_000);
        }
        return List.copyOf(group);
    }

    /** MDT 0's first (or only) replica. */
    MetaProcess meta() {
        return metas.getFirst();
    }

    /** Every replica of MDT 0. */
    List<MetaProcess> metaReplicas() {
        return metas;
    }

    /** The replica among {@code replicas} (of one MDT) that leads, once one does (60 s at most); killed ones are skipped. */
    static MetaProcess awaitMetaLeader(List<MetaProcess> replicas) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (System.nanoTime() < deadline) {
            for (MetaProcess replica : replicas) {
                if (replica.process != null && replica.process.isAlive() && replica.leads()) {
                    return replica;
                }
            }
            Thread.sleep(100);
        }
        throw new AssertionError("no MDT replica leads");
    }

    /** The command line of a `plinth` command run against this cluster: {@code arguments}, then its mgmt addresses and secret. */
    List<String> cli(String... arguments) {
        List<String> all = new ArrayList<>(List.of(arguments));
        all.addAll(List.of("--server", mgmtAddresses(), "--secret-file", secretFile.toString()));
        return TestProcesses.plinth(List.of("-Xmx256m"), all);
    }

    /** Starts a new replica of MDT 0 that waits to be added to the running group (`plinth meta --join`). */
    MetaProcess startJoiningMeta() throws IOException, InterruptedException {
        String host = network == null ? "127.0.0.1" : network.addAddress();
        MetaProcess meta = new MetaProcess(metas.size(), directory.resolve("meta-" + metas.size()), new HostPort(host, freePort()));
        meta.host = host;
        meta.rpc = new HostPort(host, freePort());
        meta.join = true;
        metas.add(meta);
        meta.start();
        return meta;
    }

    /** Starts an S3 gateway process for this cluster (once). */
    GatewayProcess startGateway() throws IOException, InterruptedException {
        gateway = new GatewayProcess(new HostPort(network == null ? "127.0.0.1" : network.addAddress(), freePort()));
        gateway.start();
        return gateway;
    }

    /** One storage node: its target directory and, while it runs, its process. */
    final class StorageNodeProcess extends Member {
        final int index;
        final Path target;
        /** Settings for this node only, on top of the cluster's. */
        List<String> ownSettings = List.of();
        int targetId;

        StorageNodeProcess(int index, Path target) {
            this.index = index;
            this.target = target;
        }

        @Override
        void start() throws IOException, InterruptedException {
            Path endpoints = directory.resolve("storage-" + index + ".json");
            Files.deleteIfExists(endpoints);
            List<String> arguments = new ArrayList<>(List.of("storage", "--target", target.toString(), "--mgmt", mgmtAddresses(),
                    "--secret-file", secretFile.toString(), "--endpoints", endpoints.toString()));
            for (String setting : ownSettings) {
                arguments.addAll(List.of("--set", setting));
            }
            process = launch("storage-" + index, endpoints, host, jvmOptions(), arguments.toArray(String[]::new)).process();
            Matcher matcher = Pattern.compile("\"targets\"\\s*:\\s*\"(\\d+)").matcher(Files.readString(endpoints));
            targetId = matcher.find() ? Integer.parseInt(matcher.group(1)) : -1;
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
        return start(directory, 1, storageNodes, settings, nodeSettings);
    }

    /** As above, with {@code mgmtReplicas} mgmt processes: a Raft group when more than one. */
    static ProcessCluster start(Path directory, int mgmtReplicas, int storageNodes, List<String> settings,
                                java.util.Map<Integer, List<String>> nodeSettings) throws IOException, InterruptedException {
        return start(directory, mgmtReplicas, 1, storageNodes, settings, nodeSettings);
    }

    /** As above, with {@code metaReplicas} replicas of MDT 0 (a Raft group when more than one). */
    static ProcessCluster start(Path directory, int mgmtReplicas, int metaReplicas, int storageNodes, List<String> settings,
                                java.util.Map<Integer, List<String>> nodeSettings) throws IOException, InterruptedException {
        ProcessCluster cluster = new ProcessCluster(directory, settings);
        cluster.nodeSettings = nodeSettings;
        try {
            cluster.startRoles(mgmtReplicas, metaReplicas, storageNodes);
            return cluster;
        } catch (IOException | InterruptedException | RuntimeException e) {
            cluster.close();
            throw e;
        }
    }

    private void startRoles(int mgmtReplicas, int metaReplicas, int storageNodes) throws IOException, InterruptedException {
        secretFile = directory.resolve("cluster.secret");
        Files.createDirectories(directory);
        ClusterSecret.readOrCreate(secretFile);
        for (int i = 0; i < mgmtReplicas; i++) {
            Path data = directory.resolve(i == 0 ? "mgmt" : "mgmt-" + i);
            MgmtReplica replica = new MgmtReplica(i, data, mgmtReplicas == 1 ? null : new HostPort("127.0.0.1", freePort()));
            if (network != null) {
                replica.host = network.addAddress();
            }
            replica.rpc = new HostPort(replica.host, freePort());
            mgmt.add(replica);
        }
        for (MgmtReplica replica : mgmt) {
            replica.start();
        }
        for (int i = 0; i < metaReplicas; i++) {
            // in an isolated cluster, replicas of a group each get a namespace of their own, so that links between them can be cut
            String[] own = network != null && metaReplicas > 1 ? network.ownNamespace() : null;
            String host = network == null ? "127.0.0.1" : own != null ? own[1] : network.addAddress();
            MetaProcess meta = new MetaProcess(i, directory.resolve(i == 0 ? "meta" : "meta-" + i),
                    metaReplicas == 1 ? null : new HostPort(host, freePort()));
            meta.host = host;
            meta.ownNamespace = own == null ? null : own[0];
            meta.rpc = new HostPort(meta.host, freePort());
            metas.add(meta);
        }
        for (MetaProcess meta : metas) {
            meta.start(); // each registers with mgmt before its group has a leader
        }
        for (int i = 0; i < storageNodes; i++) {
            StorageNodeProcess node = new StorageNodeProcess(i, directory.resolve("node-" + i).resolve("target"));
            if (network != null) {
                node.host = network.addAddress();
            }
            node.ownSettings = nodeSettings.getOrDefault(i, List.of());
            storage.add(node);
            node.start();
        }
    }

    /** A started role and the RPC address it wrote to its endpoints file. */
    private record Launched(Process process, HostPort rpc) {}

    /** Starts a role on {@code host} (inside the cluster's namespace, if it has one) and waits for its endpoints file. */
    private Launched launch(String name, Path endpoints, String host, List<String> jvmOptions, String... arguments)
            throws IOException, InterruptedException {
        return launch(name, null, endpoints, host, jvmOptions, arguments);
    }

    /** As above, in network namespace {@code ownNamespace} where it is not null. */
    private Launched launch(String name, String ownNamespace, Path endpoints, String host, List<String> jvmOptions, String... arguments)
            throws IOException, InterruptedException {
        Files.deleteIfExists(endpoints);
        List<String> command = new ArrayList<>();
        if (network != null) {
            command.addAll(List.of("ip", "netns", "exec", ownNamespace != null ? ownNamespace : network.namespace));
        }
        command.addAll(TestProcesses.plinth(jvmOptions, List.of(arguments)));
        if (!command.contains("--listen")) {
            command.addAll(List.of("--listen", host + ":0"));
        }
        command.addAll(List.of("--http", host + ":0", "--set", "rpc.source-address=" + host));
        for (String setting : settings) {
            command.addAll(List.of("--set", setting));
        }
        Path log = directory.resolve(name + ".log");
        Process process = new ProcessBuilder(command).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile())).start();
        return new Launched(process, TestProcesses.awaitEndpoints(process, name, endpoints, log));
    }

    /** Ports {@link #freePort} has given out in this JVM. */
    private static final java.util.Set<Integer> HANDED_OUT = java.util.concurrent.ConcurrentHashMap.newKeySet();

    /**
     * A free port for a process that keeps it across restarts: below the kernel's ephemeral range
     * (32768 and up), which outgoing connections draw their local ports from, so that no client
     * connection can hold it while its process is down and keep the restart from listening there.
     */
    private static int freePort() throws IOException {
        java.util.concurrent.ThreadLocalRandom random = java.util.concurrent.ThreadLocalRandom.current();
        for (int attempt = 0; attempt < 1000; attempt++) {
            int port = random.nextInt(20_000, 32_000);
            // a probe frees the port at once, so two calls could give one port to two processes of a cluster
            // (say one replica's Raft port and another's RPC port): each port goes out once per test JVM
            if (HANDED_OUT.size() >= 6_000) {
                HANDED_OUT.clear(); // half the range: the clusters that got the early ones are long gone
            }
            if (!HANDED_OUT.add(port)) {
                continue;
            }
            try (var probe = new java.net.ServerSocket(port, 1, java.net.InetAddress.getLoopbackAddress())) {
                return probe.getLocalPort();
            } catch (IOException e) {
                // taken: try another
            }
        }
        throw new IOException("no free port in 20000-31999");
    }

    /** Every mgmt replica's RPC address, comma-separated: what clients and nodes are given. */
    String mgmtAddresses() {
        return String.join(",", mgmt.stream().map(replica -> replica.rpc.toString()).toList());
    }

    List<MgmtReplica> mgmtReplicas() {
        return mgmt;
    }

    List<StorageNodeProcess> storageNodes() {
        return storage;
    }

    /** mgmt's HTTP endpoint (metrics and the status page). */
    HostPort mgmtHttp() throws IOException {
        return mgmt.getFirst().http();
    }

    Path secretFile() {
        return secretFile;
    }

    PlinthClient client(Config config) {
        return PlinthClient.connect(new ClientOptions(HostPort.parseList(mgmtAddresses()), ClusterSecret.read(secretFile), Credentials.ROOT,
                config, "failure-test"));
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
        List<Member> others = new ArrayList<>(metas);
        others.addAll(otherMdts);
        others.add(gateway);
        for (Member member : others) {
            if (member != null && member.process != null) {
                try {
                    member.resume();
                } catch (IOException | InterruptedException e) {
                    // killed below anyway
                }
                member.process.destroyForcibly();
            }
        }
        for (MgmtReplica replica : mgmt) {
            if (replica.process != null) {
                try {
                    replica.resume();
                } catch (IOException | InterruptedException e) {
                    // killed below anyway
                }
                replica.process.destroyForcibly();
            }
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
        if (network != null) {
            network.close();
        }
    }
}
