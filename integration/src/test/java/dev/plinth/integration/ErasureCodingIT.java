package dev.plinth.integration;

import static org.assertj.core.api.Assertions.assertThat;

import dev.plinth.client.PlinthClient;
import dev.plinth.client.PlinthFile;
import dev.plinth.common.Config;
import dev.plinth.common.Layout;
import dev.plinth.wire.messages.MgmtMessages.ClusterMap;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Erasure-coded 2+1 files on three storage nodes, each a process of its own, while the nodes are
 * killed (SIGKILL) and restarted one after another: a reader keeps verifying one file and must
 * never see an error or a wrong byte (a dead node's cells are decoded from the other two), and a
 * writer keeps overwriting parts of another file, fsyncing each write; once mgmt has a cell's
 * node offline its writes go on without that cell (named stale in the layout), rows it left
 * half-written when the node died are repaired, and at the end the file holds every acknowledged
 * write, and the mgmt leader has rebuilt its stale cells from the others.
 */
class ErasureCodingIT {
    private static final int NODE_TIMEOUT_MILLIS = 2000;
    private static final int CELL = 64 << 10;

    @TempDir
    Path directory;

    @Test
    void readsDecodeAndAcknowledgedWritesSurviveNodesKilledOneAfterAnother() throws Exception {
        List<String> settings = List.of("mgmt.node-timeout-millis=" + NODE_TIMEOUT_MILLIS, "rpc.timeout-millis=4000",
                "client.retry-timeout-millis=60000");
        Config clientConfig = Config.defaults().with("rpc.timeout-millis", "4000").with("client.retry-timeout-millis", "60000");
        try (ProcessCluster cluster = ProcessCluster.start(directory, 3, settings); PlinthClient client = cluster.client(clientConfig);
             PlinthClient readerClient = cluster.client(clientConfig)) {
            ProcessCluster.awaitMap(client, map -> map.nodes().size() == 3 && map.nodes().stream().allMatch(n -> n.online()), 30_000);
            Layout layout = new Layout(1, CELL, CELL, Layout.DEFAULT_POOL, 1, List.of(), 0).withErasureCoding(2, 1);
            client.mkdir("/ec", 0755);
            client.setLayout("/ec", layout, false);
            Random random = new Random(17);
            byte[] still = new byte[6 << 20];
            random.nextBytes(still);
            byte[] model = new byte[4 << 20];
            random.nextBytes(model);
            write(client, "/ec/still", still, 0, still.length);
            write(client, "/ec/changing", model, 0, model.length);
            Layout placed = client.stat("/ec/still").layout();
            assertThat(placed.chainIds()).hasSize(3);
            List<Integer> nodes = new ArrayList<>();
            ClusterMap map = client.clusterMap();
            for (int chain : placed.chainIds()) {
                nodes.add(map.target(map.chain(chain).targetIds().getFirst()).nodeId());
            }
            assertThat(nodes).as("cells on distinct nodes").doesNotHaveDuplicates();

            AtomicBoolean stop = new AtomicBoolean();
            ConcurrentLinkedQueue<String> readerFailures = new ConcurrentLinkedQueue<>();
            AtomicInteger reads = new AtomicInteger();
            Thread reader = Thread.ofPlatform().name("verifier").start(() -> {
                Random own = new Random(3);
                while (!stop.get()) {
                    int offset = own.nextInt(still.length);
                    int length = Math.min(still.length - offset, 1 + own.nextInt(1 << 20));
                    try {
                        byte[] back = ErasureCodingTest.read(readerClient, "/ec/still", offset, length);
                        if (!Arrays.equals(back, Arrays.copyOfRange(still, offset, offset + length))) {
                            readerFailures.add("wrong bytes at " + offset + " (" + length + " bytes)");
                        }
                        reads.incrementAndGet();
                    } catch (RuntimeException e) {
                        readerFailures.add("read at " + offset + " failed: " + e);
                    }
                }
            });
            ConcurrentLinkedQueue<String> writerFailures = new ConcurrentLinkedQueue<>();
            AtomicInteger acknowledged = new AtomicInteger();
            AtomicBoolean staleSeen = new AtomicBoolean();
            Thread writer = Thread.ofPlatform().name("writer").start(() -> {
                Random own = new Random(4);
                while (!stop.get()) {
                    int offset = own.nextInt(model.length);
                    int length = Math.min(model.length - offset, 1 + own.nextInt(3 * CELL));
                    byte[] bytes = new byte[length];
                    own.nextBytes(bytes);
                    try {
                        write(client, "/ec/changing", bytes, offset, length);
                        synchronized (model) {
                            System.arraycopy(bytes, 0, model, offset, length);
                        }
                        acknowledged.incrementAndGet();
                        if (client.stat("/ec/changing").layout().staleCells() != 0) {
                            staleSeen.set(true);
                        }
                    } catch (RuntimeException e) {
                        writerFailures.add("write at " + offset + " failed: " + e);
                        return; // what it left is unknown: the model can no longer say what the file holds
                    }
                }
            });
            for (ProcessCluster.StorageNodeProcess node : cluster.storageNodes()) {
                Thread.sleep(1500);
                int readsBefore = reads.get();
                node.kill();
                Thread.sleep(3 * NODE_TIMEOUT_MILLIS / 2); // marked offline on the way
                assertThat(reads.get()).as("reads go on while node " + node.index + " is down").isGreaterThan(readsBefore);
                node.start();
                ProcessCluster.awaitMap(client, m -> m.nodes().stream().allMatch(n -> n.online()), 60_000);
            }
            Thread.sleep(1500);
            stop.set(true);
            reader.join(120_000);
            writer.join(120_000);
            // the writer went on without a down node's cell at least once; with every node back, the upkeep rebuilds it
            assertThat(staleSeen.get()).as("a write went on without a cell").isTrue();
            long mendDeadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(120);
            while (client.stat("/ec/changing").layout().staleCells() != 0) {
                if (System.nanoTime() > mendDeadline) {
                    throw new AssertionError("stale cells not rebuilt within 120 s; the logs say:\n" + logLines("stale|upkeep|Exception"));
                }
                Thread.sleep(250);
            }
            System.out.printf("ErasureCodingIT: %d verified reads, %d acknowledged writes%n", reads.get(), acknowledged.get());
            assertThat(readerFailures).as("reads while nodes died").isEmpty();
            assertThat(writerFailures).as("writes while nodes died").isEmpty();
            assertThat(acknowledged.get()).isPositive();
            try (PlinthClient fresh = cluster.client(clientConfig)) {
                ErasureCodingTest.assertSameBytes(ErasureCodingTest.read(fresh, "/ec/changing", 0, model.length), model, "every acknowledged write");
                ErasureCodingTest.assertSameBytes(ErasureCodingTest.read(fresh, "/ec/still", 0, still.length), still, "the file only read");
            }
            // and again with one node down: the rows written while nodes came and went decode
            ProcessCluster.StorageNodeProcess down = cluster.storageNodes().get(1);
            down.kill();
            try (PlinthClient fresh = cluster.client(clientConfig)) {
                ErasureCodingTest.assertSameBytes(ErasureCodingTest.read(fresh, "/ec/changing", 0, model.length), model, "decoded with node 1 down");
            }
            down.start();
        }
    }

    /** A node killed for good: once mgmt declares its target lost, the leader's upkeep moves every cell it held, with no operator. */
    @Test
    void aDeadNodesCellsAreRebuiltElsewhereWithoutAnOperator() throws Exception {
        List<String> settings = List.of("mgmt.node-timeout-millis=" + NODE_TIMEOUT_MILLIS, "mgmt.target-lost-millis=3000",
                "rpc.timeout-millis=4000", "client.retry-timeout-millis=60000");
        Config clientConfig = Config.defaults().with("rpc.timeout-millis", "4000").with("client.retry-timeout-millis", "60000");
        try (ProcessCluster cluster = ProcessCluster.start(directory, 4, settings); PlinthClient client = cluster.client(clientConfig)) {
            ProcessCluster.awaitMap(client, map -> map.nodes().size() == 4 && map.nodes().stream().allMatch(n -> n.online()), 30_000);
            client.mkdir("/ec", 0755);
            client.setLayout("/ec", new Layout(1, CELL, CELL, Layout.DEFAULT_POOL, 1, List.of(), 0).withErasureCoding(2, 1), false);
            Random random = new Random(23);
            List<byte[]> contents = new ArrayList<>();
            for (int n = 0; n < 8; n++) {
                byte[] content = new byte[(1 << 20) + random.nextInt(1 << 20)];
                random.nextBytes(content);
                write(client, "/ec/f" + n, content, 0, content.length);
                contents.add(content);
            }
            ProcessCluster.StorageNodeProcess victim = cluster.storageNodes().getFirst();
            int victimChain = victim.targetId; // a target's own one-replica chain has the target's id
            long onVictim = java.util.stream.IntStream.range(0, contents.size())
                    .filter(n -> client.stat("/ec/f" + n).layout().chainIds().contains(victimChain)).count();
            assertThat(onVictim).as("files with a cell on the node to kill").isPositive();
            victim.kill();
            long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(90);
            for (int n = 0; n < contents.size(); n++) {
                while (client.stat("/ec/f" + n).layout().chainIds().contains(victimChain)) {
                    assertThat(System.nanoTime()).as("f" + n + "'s cell left the dead node within 90 s").isLessThan(deadline);
                    Thread.sleep(250);
                }
            }
            try (PlinthClient fresh = cluster.client(clientConfig)) {
                for (int n = 0; n < contents.size(); n++) {
                    var file = fresh.stat("/ec/f" + n);
                    assertThat(fresh.checkParity(file, false).problems()).as("f" + n + " whole without the dead node").isEmpty();
                    ErasureCodingTest.assertSameBytes(ErasureCodingTest.read(fresh, "/ec/f" + n, 0, contents.get(n).length),
                            contents.get(n), "f" + n + " after the rebuild");
                }
            }
        }
    }

    /** The lines of the cluster's process logs that match {@code pattern}. */
    private String logLines(String pattern) throws java.io.IOException {
        java.util.regex.Pattern matching = java.util.regex.Pattern.compile(pattern);
        StringBuilder lines = new StringBuilder();
        try (var logs = java.nio.file.Files.newDirectoryStream(directory, "*.log")) {
            for (Path log : logs) {
                java.nio.file.Files.readAllLines(log).stream().filter(line -> matching.matcher(line).find())
                        .forEach(line -> lines.append(log.getFileName()).append(": ").append(line).append('\n'));
            }
        }
        return lines.toString();
    }

    private static void write(PlinthClient client, String path, byte[] bytes, int offset, int length) {
        try (PlinthFile file = client.exists(path) ? client.open(path, true) : client.create(path, 0644, true, null)) {
            file.write(offset, ByteBuffer.wrap(bytes, 0, length));
            file.fsync();
        }
    }
}
