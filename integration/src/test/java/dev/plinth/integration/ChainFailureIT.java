package dev.plinth.integration;

import static org.assertj.core.api.Assertions.assertThat;

import dev.plinth.server.ClusterStatus;
import dev.plinth.client.PlinthClient;
import dev.plinth.client.PlinthFile;
import dev.plinth.common.ChunkFormat;
import dev.plinth.common.Config;
import dev.plinth.common.Layout;
import dev.plinth.wire.messages.MgmtMessages.ChainInfo;
import dev.plinth.wire.messages.MgmtMessages.ClusterMap;
import dev.plinth.wire.messages.MgmtMessages.TargetInfo;
import dev.plinth.wire.messages.MetaMessages.Attributes;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Workload plus nemesis on a cluster of separate processes: writers write and rewrite files
 * (each acknowledged by fsync and close) in a replicated directory while storage nodes are
 * killed, paused past the node timeout, and restarted, one at a time. Afterwards every
 * acknowledged file must read back exactly, through the client and from the chunk files of every
 * replica once the chains have resynced.
 */
class ChainFailureIT {
    private static final int NODE_TIMEOUT_MILLIS = 2000;
    private static final int CHUNK_SIZE = 256 << 10;
    private static final int WRITERS = 2;
    /** Paths each writer cycles through, rewriting them, so that it writes for as long as the faults take. */
    private static final int FILES_PER_WRITER = 150;
    private static final int WRITES_PER_WRITER_MAX = 20_000;

    @TempDir
    Path directory;

    /** A file the workload wrote and the cluster acknowledged, with what it must hold. */
    private record Acknowledged(String path, byte[] content) {}

    /** One injected fault and how long writes took to resume after it. */
    private record Fault(String what, long resumedAfterMillis) {}

    /** What a nemesis does to the cluster while the writers write; it records each fault and how long writes took to resume. */
    private interface Nemesis {
        void run(ProcessCluster cluster, PlinthClient client, AtomicLong lastAcknowledgedNanos, List<Fault> faults) throws Exception;
    }

    @ParameterizedTest(name = "replicas={0}")
    @ValueSource(ints = {2, 3})
    void acknowledgedWritesSurviveNodeFailures(int replicas) throws Exception {
        List<String> settings = List.of("mgmt.node-timeout-millis=" + NODE_TIMEOUT_MILLIS, "rpc.timeout-millis=4000",
                "client.retry-timeout-millis=60000", "storage.resync-bytes-per-second=64m");
        try (ProcessCluster cluster = ProcessCluster.start(directory, 3, settings)) {
            workloadWithNemesis(cluster, replicas, (nodes, client, lastAcknowledgedNanos, faults) -> {
                for (ProcessCluster.StorageNodeProcess node : nodes.storageNodes()) {
                    node.kill();
                    faults.add(new Fault("SIGKILL node " + node.index, awaitWritesAfter(lastAcknowledgedNanos, 30_000)));
                    Thread.sleep(500);
                    node.start();
                    awaitHealthy(client, 60_000);
                }
                ProcessCluster.StorageNodeProcess paused = nodes.storageNodes().get(1);
                paused.pause();
                faults.add(new Fault("SIGSTOP node 1 for " + 2 * NODE_TIMEOUT_MILLIS + " ms",
                        awaitWritesAfter(lastAcknowledgedNanos, 30_000)));
                Thread.sleep(2L * NODE_TIMEOUT_MILLIS);
                paused.resume();
                awaitHealthy(client, 60_000);
            });
        }
    }

    /**
     * The link between two storage nodes breaks while both still reach mgmt and everyone else
     * (a network namespace of the test's own, packets between the two dropped): the member that
     * cannot forward tells mgmt, mgmt takes one of the two out of that chain, and writes go on.
     * While the cut lasts the member that left tries to rejoin and leaves again; once the link is
     * back it syncs and the chains are whole again.
     */
    @org.junit.jupiter.api.Test
    void acknowledgedWritesSurviveALinkCutBetweenTwoNodes() throws Exception {
        dev.plinth.testing.Prerequisites.require(dev.plinth.testing.Prerequisites.IP); // network namespaces of its own
        dev.plinth.testing.Prerequisites.requireRoot();
        int rejoinMillis = 3000;
        List<String> settings = List.of("mgmt.node-timeout-millis=" + NODE_TIMEOUT_MILLIS, "rpc.timeout-millis=4000",
                "client.retry-timeout-millis=60000", "storage.resync-bytes-per-second=64m", "mgmt.link-rejoin-millis=" + rejoinMillis);
        try (ProcessCluster cluster = ProcessCluster.startIsolated(directory, 3, settings)) {
            workloadWithNemesis(cluster, 2, (nodes, client, lastAcknowledgedNanos, faults) -> {
                ProcessCluster.StorageNodeProcess a = nodes.storageNodes().get(0);
                ProcessCluster.StorageNodeProcess b = nodes.storageNodes().get(1);
                nodes.cut(a, b);
                faults.add(new Fault("link cut between nodes 0 and 1", awaitWritesAfter(lastAcknowledgedNanos, 30_000)));
                ClusterMap decided = ProcessCluster.awaitMap(client, map -> map.nodes().stream().allMatch(n -> n.online())
                        && map.chains().stream().anyMatch(c -> c.replicas() == 2
                        && c.members().stream().anyMatch(m -> m.state() == dev.plinth.wire.messages.MgmtMessages.MemberState.OFFLINE)), 30_000);
                decided.chains().stream().filter(c -> c.replicas() == 2 && !c.healthy()).forEach(c -> System.out.printf(
                        "  with both nodes online, mgmt took a member out of chain %d: %s%n", c.chainId(), c.members()));
                assertThat(ClusterStatus.attention(decided)).anyMatch(line -> line.contains("is online but left this chain"));
                Thread.sleep(2L * rejoinMillis); // the member that left tries again, meets the cut, and leaves again
                nodes.heal(a, b);
                ClusterMap healed = awaitHealthy(client, 60_000);
                assertThat(healed.nodes()).allMatch(n -> n.online()); // nobody was declared dead: the decision was per chain
            });
        }
    }

    /**
     * Truncations and writes of the same chunks race from two handles: every replica must end
     * with the same bytes at the same version. (A cut sent to each replica on its own lands
     * before a write on one replica and after it on another; cut through the chain, it cannot.)
     */
    @org.junit.jupiter.api.Test
    void racingTruncatesAndWritesLeaveReplicasIdentical() throws Exception {
        List<String> settings = List.of("mgmt.node-timeout-millis=" + NODE_TIMEOUT_MILLIS, "rpc.timeout-millis=4000");
        try (ProcessCluster cluster = ProcessCluster.start(directory, 2, settings);
             PlinthClient client = cluster.client(Config.defaults().with("rpc.timeout-millis", "4000"))) {
            ProcessCluster.awaitMap(client, map -> map.chains().stream().anyMatch(c -> c.replicas() == 2), 10_000);
            ProcessCluster.replicatedDirectory(client, "/data", new Layout(1, CHUNK_SIZE, CHUNK_SIZE, Layout.DEFAULT_POOL, 2, List.of()));
            client.create("/data/raced", 0644, false, null).close();
            Random random = new Random(1);
            try (PlinthFile writer = client.open("/data/raced", true);
                 PlinthFile truncater = client.open("/data/raced", true)) {
                for (int round = 0; round < 60; round++) {
                    byte[] bytes = new byte[1 + random.nextInt(64 * 1024)];
                    random.nextBytes(bytes);
                    long writeAt = random.nextInt(2 * CHUNK_SIZE);
                    long cutAt = random.nextInt(2 * CHUNK_SIZE);
                    java.util.concurrent.CyclicBarrier start = new java.util.concurrent.CyclicBarrier(2);
                    Thread writing = Thread.ofPlatform().start(() -> {
                        await(start);
                        writer.write(writeAt, ByteBuffer.wrap(bytes));
                        writer.flush();
                    });
                    await(start);
                    truncater.truncate(cutAt);
                    writing.join(30_000);
                    assertReplicasIdentical(client, "/data/raced", round);
                }
            }
        }
    }

    private static void await(java.util.concurrent.CyclicBarrier barrier) {
        try {
            barrier.await(30, TimeUnit.SECONDS);
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    /** Every serving replica of the file's first three chunks holds the same bytes at the same version. */
    private static void assertReplicasIdentical(PlinthClient client, String path, int round) throws java.io.IOException {
        ClusterMap map = client.refreshClusterMap();
        Attributes attributes = client.stat(path);
        ChainInfo chain = map.chain(attributes.layout().chainIds().getFirst());
        for (int chunk = 0; chunk < 3; chunk++) {
            List<String> replicas = new ArrayList<>();
            for (int targetId : chain.targetIds()) {
                Path data = ChunkFormat.dataPath(Path.of(map.target(targetId).path()), attributes.inodeId(), 0, chunk);
                byte[] stored = Files.exists(data) ? Files.readAllBytes(data) : new byte[0];
                replicas.add(version(map, targetId, attributes.inodeId(), 0, chunk) + " " + Arrays.hashCode(stored));
            }
            assertThat(replicas).as("round " + round + ", chunk " + chunk + " on targets " + chain.targetIds()).containsOnly(replicas.getFirst());
        }
    }

    /**
     * Writers write checksummed files (each acknowledged by fsync and close) to a directory with
     * {@code replicas} replicas while {@code nemesis} injects faults; afterwards every acknowledged
     * file must read back exactly, through the client and from every replica's chunk files.
     */
    private void workloadWithNemesis(ProcessCluster cluster, int replicas, Nemesis nemesis) throws Exception {
        try (PlinthClient client = cluster.client(Config.defaults().with("rpc.timeout-millis", "4000")
                     .with("client.retry-timeout-millis", "60000"))) {
            ProcessCluster.awaitMap(client, map -> map.chains().stream().anyMatch(c -> c.replicas() == replicas), 10_000);
            ProcessCluster.replicatedDirectory(client, "/data", new Layout(1, CHUNK_SIZE, CHUNK_SIZE, Layout.DEFAULT_POOL, replicas, List.of()));

            Map<String, Acknowledged> acknowledged = new ConcurrentHashMap<>();
            AtomicLong lastAcknowledgedNanos = new AtomicLong(System.nanoTime());
            AtomicLong failedAttempts = new AtomicLong();
            AtomicLong acknowledgedWrites = new AtomicLong();
            AtomicBoolean stop = new AtomicBoolean();
            List<Thread> writers = new ArrayList<>();
            for (int w = 0; w < WRITERS; w++) {
                int writer = w;
                writers.add(Thread.ofPlatform().name("writer-" + w).start(() -> {
                    Random random = new Random(writer * 7919L + replicas);
                    for (int n = 0; n < WRITES_PER_WRITER_MAX && !stop.get(); n++) {
                        String path = "/data/w" + writer + "-" + n % FILES_PER_WRITER;
                        byte[] content = new byte[64 * 1024 + random.nextInt(CHUNK_SIZE * 5)];
                        random.nextBytes(content);
                        acknowledged.remove(path); // a rewrite that fails leaves no promise about the file's bytes
                        try {
                            writeFile(client, path, content, random);
                            acknowledged.put(path, new Acknowledged(path, content));
                            acknowledgedWrites.incrementAndGet();
                            lastAcknowledgedNanos.set(System.nanoTime());
                        } catch (RuntimeException e) {
                            if (failedAttempts.incrementAndGet() <= 3) { // not acknowledged: no promise was made, but say why
                                System.out.println("write of " + path + " failed: " + e);
                            }
                        }
                    }
                }));
            }

            List<Fault> faults = new ArrayList<>();
            Thread.sleep(1500);
            nemesis.run(cluster, client, lastAcknowledgedNanos, faults);
            Thread.sleep(1000);
            stop.set(true);
            for (Thread writer : writers) {
                writer.join(120_000);
            }
            ClusterMap map = awaitHealthy(client, 60_000);

            long bytesLost = 0;
            long bytesChecked = 0;
            for (Acknowledged file : acknowledged.values()) {
                byte[] read = ClusterSmokeTest.readAll(client, file.path());
                if (!Arrays.equals(read, file.content())) {
                    bytesLost += file.content().length;
                }
                bytesChecked += file.content().length;
                bytesLost += compareReplicas(client, map, file);
            }

            System.out.printf("%nfailure summary (replicas=%d): %d writes acknowledged, the last of %d files checked (%d MiB),"
                            + " %d attempts failed and were not acknowledged, %d faults injected, %d bytes lost%n", replicas,
                    acknowledgedWrites.get(), acknowledged.size(), bytesChecked >> 20, failedAttempts.get(),
                    faults.size(), bytesLost);
            faults.forEach(fault -> System.out.printf("  %-36s writes resumed after %5d ms%n", fault.what(), fault.resumedAfterMillis()));
            assertThat(acknowledged.size()).as("the workload made progress").isGreaterThan(20);
            if (bytesLost > 0) {
                keepLogs();
            }
            assertThat(bytesLost).as("bytes of acknowledged writes lost").isZero();
        }
    }

    @org.junit.jupiter.api.Test
    void aLostTargetIsReplacedAndItsChunksCopied() throws Exception {
        int lostMillis = 3000;
        List<String> settings = List.of("mgmt.node-timeout-millis=" + NODE_TIMEOUT_MILLIS, "mgmt.target-lost-millis=" + lostMillis,
                "rpc.timeout-millis=4000", "storage.resync-bytes-per-second=64m");
        try (ProcessCluster cluster = ProcessCluster.start(directory, 3, settings);
             PlinthClient client = cluster.client(Config.defaults().with("rpc.timeout-millis", "4000")
                     .with("client.retry-timeout-millis", "60000"))) {
            ProcessCluster.awaitMap(client, map -> map.chains().stream().anyMatch(c -> c.replicas() == 2), 10_000);
            ProcessCluster.replicatedDirectory(client, "/data", new Layout(1, CHUNK_SIZE, CHUNK_SIZE, Layout.DEFAULT_POOL, 2, List.of()));
            Random random = new Random(42);
            List<Acknowledged> files = new ArrayList<>();
            for (int n = 0; n < 60; n++) {
                byte[] content = new byte[256 * 1024 + random.nextInt(CHUNK_SIZE * 4)];
                random.nextBytes(content);
                writeFile(client, "/data/f" + n, content, random);
                files.add(new Acknowledged("/data/f" + n, content));
            }
            ProcessCluster.StorageNodeProcess victim = cluster.storageNodes().getFirst();
            ClusterMap before = client.refreshClusterMap();
            long affectedBytes = 0;
            for (Acknowledged file : files) {
                ChainInfo chain = before.chain(client.stat(file.path()).layout().chainIds().getFirst());
                if (chain.stateOf(victim.targetId) != null) {
                    affectedBytes += file.content().length;
                }
            }

            long killed = System.nanoTime();
            victim.kill();
            // two live nodes are enough for every chain of 2 (a chain of 3 waits, degraded, for a third)
            ClusterMap after = ProcessCluster.awaitMap(client, map -> map.chains().stream().filter(c -> c.replicas() == 2)
                    .allMatch(c -> c.healthy() && c.stateOf(victim.targetId) == null), 120_000);
            long rebuiltMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - killed);
            long copyMillis = Math.max(1, rebuiltMillis - NODE_TIMEOUT_MILLIS - lostMillis);

            long bytesLost = 0;
            for (Acknowledged file : files) {
                if (!Arrays.equals(ClusterSmokeTest.readAll(client, file.path()), file.content())) {
                    bytesLost += file.content().length;
                }
                bytesLost += compareReplicas(client, after, file);
            }
            System.out.printf("%nlost target %d: chains rebuilt %d ms after the kill (node timeout %d ms + lost after %d ms);"
                            + " %d MiB of replicated files on its chains re-replicated in about %d ms (%.0f MiB/s); %d bytes lost%n",
                    victim.targetId, rebuiltMillis, NODE_TIMEOUT_MILLIS, lostMillis, affectedBytes >> 20, copyMillis,
                    (affectedBytes / 1048576.0) / (copyMillis / 1000.0), bytesLost);
            if (bytesLost > 0) {
                keepLogs();
            }
            assertThat(affectedBytes).as("the lost target held some replicated data").isPositive();
            assertThat(bytesLost).isZero();

            // The lost target comes back: its copies of the chains it was replaced in are garbage, and its scrubber removes them.
            assertThat(orphanedChunks(after, victim)).as("chunks left on the lost target").isPositive();
            victim.ownSettings = List.of("storage.scrub-interval-millis=500");
            victim.start();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (orphanedChunks(client.refreshClusterMap(), victim) > 0) {
                assertThat(System.nanoTime()).as("orphaned chunks were not removed in 60 s").isLessThan(deadline);
                Thread.sleep(200);
            }
        }
    }

    /** Chunk files on {@code node}'s target whose chain no longer has the target. */
    private static long orphanedChunks(ClusterMap map, ProcessCluster.StorageNodeProcess node) throws java.io.IOException {
        long orphaned = 0;
        try (var files = Files.walk(node.target.resolve("chunks"))) {
            for (Path meta : files.filter(p -> p.toString().endsWith(".meta")).toList()) {
                try (var channel = java.nio.channels.FileChannel.open(meta)) {
                    ChainInfo chain = map.chain(ChunkFormat.readHeader(channel, meta).chainId());
                    if (chain != null && chain.stateOf(node.targetId) == null) {
                        orphaned++;
                    }
                } catch (java.nio.file.NoSuchFileException e) {
                    // removed while we looked
                }
            }
        }
        return orphaned;
    }

    @org.junit.jupiter.api.Test
    void aFullReplicaFailsWritesWithNoSpaceAndNewFilesMoveElsewhere() throws Exception {
        long capacity = 6L << 20;
        try (ProcessCluster cluster = ProcessCluster.start(directory, 3, List.of("mgmt.node-timeout-millis=" + NODE_TIMEOUT_MILLIS),
                Map.of(1, List.of("target.capacity=" + capacity)));
             PlinthClient client = cluster.client(Config.defaults().with("client.retry-timeout-millis", "60000"))) {
            ProcessCluster.awaitMap(client, map -> map.chains().stream().anyMatch(c -> c.replicas() == 2), 10_000);
            ProcessCluster.replicatedDirectory(client, "/data", new Layout(1, CHUNK_SIZE, CHUNK_SIZE, Layout.DEFAULT_POOL, 2, List.of()));
            int small = cluster.storageNodes().get(1).targetId;
            Random random = new Random(11);
            List<Acknowledged> written = new ArrayList<>();
            int noSpace = 0;
            for (int n = 0; n < 40; n++) {
                byte[] content = new byte[512 << 10];
                random.nextBytes(content);
                try {
                    writeFile(client, "/data/f" + n, content, random);
                    written.add(new Acknowledged("/data/f" + n, content));
                } catch (dev.plinth.common.PlinthException e) {
                    assertThat(e.code()).as("a write into a chain with a full member fails with ENOSPC: %s", e).isEqualTo(
                            dev.plinth.common.ErrorCode.NO_SPACE);
                    noSpace++;
                }
            }
            // once mgmt has the full target's usage (heartbeats), new files go to chains with room
            ProcessCluster.awaitMap(client, map -> map.target(small).freeBytes() < CHUNK_SIZE, 10_000);
            Thread.sleep(500);
            for (int n = 0; n < 5; n++) {
                byte[] content = new byte[512 << 10];
                random.nextBytes(content);
                writeFile(client, "/data/after" + n, content, random);
                written.add(new Acknowledged("/data/after" + n, content));
                ChainInfo chain = client.refreshClusterMap().chain(client.stat("/data/after" + n).layout().chainIds().getFirst());
                assertThat(chain.stateOf(small)).as("a new file avoids the full target").isNull();
            }
            // growing a file whose chain holds the full target: ENOSPC, and the bytes it had stay as they were
            ClusterMap full = client.refreshClusterMap();
            Acknowledged onFullChain = written.stream()
                    .filter(f -> full.chain(client.stat(f.path()).layout().chainIds().getFirst()).stateOf(small) != null)
                    .findFirst().orElseThrow();
            try (PlinthFile file = client.open(onFullChain.path(), true)) {
                org.assertj.core.api.Assertions.assertThatThrownBy(() -> {
                    file.write(onFullChain.content().length, ByteBuffer.wrap(new byte[4 << 20]));
                    file.fsync();
                }).isInstanceOfSatisfying(dev.plinth.common.PlinthException.class,
                        e -> assertThat(e.code()).isEqualTo(dev.plinth.common.ErrorCode.NO_SPACE));
                noSpace++;
            } catch (dev.plinth.common.PlinthException e) {
                assertThat(e.code()).isEqualTo(dev.plinth.common.ErrorCode.NO_SPACE); // reported again at close
            }
            client.setAttr(client.stat(onFullChain.path()).inodeId(), dev.plinth.wire.messages.MetaMessages.SET_SIZE, 0, 0, 0,
                    onFullChain.content().length, 0, 0);

            ClusterMap map = client.refreshClusterMap();
            assertThat(map.target(small).usedBytes()).isLessThanOrEqualTo(capacity);
            long bytesLost = 0;
            for (Acknowledged file : written) {
                if (!Arrays.equals(ClusterSmokeTest.readAll(client, file.path()), file.content())) {
                    bytesLost += file.content().length;
                }
                bytesLost += compareReplicas(client, map, file);
            }
            System.out.printf("%nfull replica: %d writes acknowledged, %d failed with ENOSPC, %d bytes lost%n", written.size(), noSpace, bytesLost);
            assertThat(bytesLost).isZero();
        }
    }

    /** Copies the processes' logs where they outlive the test's directory. */
    private void keepLogs() throws java.io.IOException {
        Path kept = Path.of(System.getProperty("java.io.tmpdir"), "chain-failure-logs-" + System.currentTimeMillis());
        Files.createDirectories(kept);
        try (var logs = Files.newDirectoryStream(directory, "*.log")) {
            for (Path log : logs) {
                Files.copy(log, kept.resolve(log.getFileName()));
            }
        }
        System.out.println("logs kept in " + kept);
    }

    /** Writes the file in 64 KiB pieces, rewrites a random range of it, and makes it durable; returns when acknowledged. */
    private static void writeFile(PlinthClient client, String path, byte[] content, Random random) {
        try (PlinthFile file = client.create(path, 0644, false, null)) {
            for (int offset = 0; offset < content.length; offset += 64 * 1024) {
                int length = Math.min(64 * 1024, content.length - offset);
                file.write(offset, ByteBuffer.wrap(content, offset, length));
            }
            file.flush();
            int start = random.nextInt(content.length);
            int length = Math.min(content.length - start, 1 + random.nextInt(100_000));
            file.write(start, ByteBuffer.wrap(content, start, length)); // a second version of some chunks: same bytes, new version
            file.fsync();
        }
    }

    /** Bytes of {@code file} that some serving replica's chunk files do not hold as acknowledged. */
    private long compareReplicas(PlinthClient client, ClusterMap map, Acknowledged file) throws java.io.IOException {
        Attributes attributes = client.stat(file.path());
        ChainInfo chain = map.chain(attributes.layout().chainIds().getFirst());
        long lost = 0;
        for (int targetId : chain.targetIds()) {
            TargetInfo target = map.target(targetId);
            for (int chunk = 0; (long) chunk * CHUNK_SIZE < file.content().length; chunk++) {
                int start = chunk * CHUNK_SIZE;
                byte[] expected = Arrays.copyOfRange(file.content(), start, Math.min(file.content().length, start + CHUNK_SIZE));
                Path data = ChunkFormat.dataPath(Path.of(target.path()), attributes.inodeId(), 0, chunk);
                byte[] stored = Files.exists(data) ? Files.readAllBytes(data) : new byte[0];
                if (!Arrays.equals(stored, expected)) {
                    int index = chunk;
                    System.out.printf("replica mismatch: %s (inode %x) chunk %d on target %d (%d bytes stored, %d expected); versions %s%n",
                            file.path(), attributes.inodeId(), chunk, targetId, stored.length, expected.length,
                            chain.targetIds().stream().map(t -> t + ":" + version(map, t, attributes.inodeId(), 0, index)).toList());
                    lost += expected.length;
                }
            }
        }
        return lost;
    }

    private static String version(ClusterMap map, int targetId, long inodeId, int object, int chunk) {
        Path data = ChunkFormat.dataPath(Path.of(map.target(targetId).path()), inodeId, object, chunk);
        Path meta = ChunkFormat.metaPath(data);
        try (var channel = java.nio.channels.FileChannel.open(meta)) {
            ChunkFormat.Header header = ChunkFormat.readHeader(channel, meta);
            return Long.toHexString(header.version()) + "/" + header.length();
        } catch (java.io.IOException | RuntimeException e) {
            return "absent";
        }
    }

    /** Milliseconds from now until the workload's next acknowledged write. */
    private static long awaitWritesAfter(AtomicLong lastAcknowledgedNanos, long timeoutMillis) throws InterruptedException {
        long fault = System.nanoTime();
        long deadline = fault + TimeUnit.MILLISECONDS.toNanos(timeoutMillis);
        while (lastAcknowledgedNanos.get() <= fault) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("no write was acknowledged within " + timeoutMillis + " ms of the fault");
            }
            Thread.sleep(10);
        }
        return TimeUnit.NANOSECONDS.toMillis(lastAcknowledgedNanos.get() - fault);
    }

    private static ClusterMap awaitHealthy(PlinthClient client, long timeoutMillis) throws InterruptedException {
        return ProcessCluster.awaitMap(client, map -> map.nodes().stream().allMatch(n -> n.online())
                && map.chains().stream().allMatch(ChainInfo::healthy), timeoutMillis);
    }
}
