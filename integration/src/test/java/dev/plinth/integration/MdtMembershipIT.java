package dev.plinth.integration;

import static org.assertj.core.api.Assertions.assertThat;

import dev.plinth.client.PlinthClient;
import dev.plinth.client.PlinthFile;
import dev.plinth.common.Config;
import dev.plinth.integration.ProcessCluster.MetaProcess;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The members of a running MDT group change under a writer: a fourth replica started with
 * `plinth meta --join` is added (`plinth mdt add-replica`) and catches up, an original follower is
 * removed (`plinth mdt remove-replica`) and stopped, and then the leader is killed: the group of
 * three that is left (two originals and the added one) elects a leader and serves, the added
 * replica restarts as a member, clients follow every change through mgmt's map, and every file
 * the writer was told it created reads back.
 */
class MdtMembershipIT {
    @TempDir
    Path directory;

    @Test
    void aReplicaIsAddedAndAnotherRemovedWhileTheGroupServes() throws Exception {
        List<String> settings = List.of("rpc.timeout-millis=10000", "client.retry-timeout-millis=60000", "cluster.mdt-replica-timeout-millis=2000");
        Config clientConfig = Config.defaults().with("rpc.timeout-millis", "10000").with("client.retry-timeout-millis", "60000")
                .with("cluster.mdt-replica-timeout-millis", "2000");
        try (ProcessCluster cluster = ProcessCluster.start(directory.resolve("cluster"), 1, 3, 1, settings, Map.of());
             PlinthClient client = cluster.client(clientConfig)) {
            ProcessCluster.awaitMap(client, map -> map.mdt(0) != null && map.mdt(0).replicas().size() == 3, 30_000);
            client.mkdirs("/w", 0755);
            AtomicBoolean stop = new AtomicBoolean();
            ConcurrentLinkedQueue<String> created = new ConcurrentLinkedQueue<>();
            Thread writer = Thread.ofPlatform().start(() -> {
                for (int n = 0; !stop.get() && n < 100_000; n++) {
                    String path = "/w/f-" + n;
                    try (PlinthFile file = client.create(path, 0644, true, null)) {
                        file.write(0, ByteBuffer.wrap(content(n)));
                    }
                    created.add(path);
                }
            });
            awaitCount(created, 200);

            MetaProcess added = cluster.startJoiningMeta();
            String output = plinth(cluster.cli("mdt", "add-replica", "--mdt", "0", "--raft", added.raft.toString()));
            assertThat(output).contains(added.raft.toString());
            ProcessCluster.awaitMap(client, map -> map.mdt(0).replicas().size() == 4, 30_000);
            awaitCount(created, created.size() + 200);

            MetaProcess removed = cluster.metaReplicas().stream().filter(m -> m != added && !m.leads()).findFirst().orElseThrow();
            output = plinth(cluster.cli("mdt", "remove-replica", "--raft", removed.raft.toString()));
            assertThat(output).doesNotContain(removed.raft.toString());
            removed.kill();
            ProcessCluster.awaitMap(client, map -> map.mdt(0).replicas().size() == 3
                    && map.mdt(0).replicas().stream().noneMatch(r -> r.raftAddress().equals(removed.raft.toString())), 30_000);
            awaitCount(created, created.size() + 200);

            List<MetaProcess> members = cluster.metaReplicas().stream().filter(m -> m != removed).toList();
            MetaProcess leader = ProcessCluster.awaitMetaLeader(members);
            leader.kill();
            MetaProcess next = ProcessCluster.awaitMetaLeader(members.stream().filter(m -> m != leader).toList());
            System.out.printf("after adding meta-%d and removing meta-%d, leader meta-%d killed: meta-%d leads%n", added.index, removed.index,
                    leader.index, next.index);
            awaitCount(created, created.size() + 200);
            leader.start();
            if (leader != added) {
                added.kill();
                added.start(); // a restart of the added replica is a plain restart: its members are in its log
            }
            awaitCount(created, created.size() + 200);
            stop.set(true);
            writer.join(60_000);

            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (members.stream().mapToLong(MetaProcess::appliedIndex).distinct().count() > 1) {
                assertThat(System.nanoTime()).as("the members reach the same applied index").isLessThan(deadline);
                Thread.sleep(100);
            }
            for (String path : created) {
                int n = Integer.parseInt(path.substring("/w/f-".length()));
                try (PlinthFile file = client.open(path, false)) {
                    ByteBuffer buffer = ByteBuffer.allocate((int) file.size());
                    file.read(0, buffer);
                    assertThat(Arrays.copyOf(buffer.array(), buffer.position())).as(path).isEqualTo(content(n));
                }
            }
            System.out.printf("%d files created and read back; members at index %d%n", created.size(), added.appliedIndex());
            TestProcesses.Result fsck = TestProcesses.runAllowingFailure(cluster.cli("fsck"),
                    Map.of(), Duration.ofMinutes(2));
            assertThat(fsck.exitCode()).isZero();
        }
    }

    private static String plinth(List<String> command) throws Exception {
        return TestProcesses.run(command, Duration.ofMinutes(2));
    }

    private static byte[] content(int n) {
        return ("file " + n + " ").repeat(1 + n % 30).getBytes(StandardCharsets.UTF_8);
    }

    private static void awaitCount(ConcurrentLinkedQueue<String> created, int count) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
        while (created.size() < count) {
            assertThat(System.nanoTime()).as("the writer reaches %d files", count).isLessThan(deadline);
            Thread.sleep(50);
        }
    }
}
