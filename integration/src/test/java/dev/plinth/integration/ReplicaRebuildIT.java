package dev.plinth.integration;

import static org.assertj.core.api.Assertions.assertThat;

import dev.plinth.client.PlinthClient;
import dev.plinth.client.PlinthFile;
import dev.plinth.common.Config;
import dev.plinth.common.FileTrees;
import dev.plinth.integration.ProcessCluster.MetaProcess;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
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
 * One replica of a running three-replica MDT loses its directory (a replaced disk): it is rebuilt
 * from a backup taken afterwards (`plinth backup restore --rejoin`), started with its old Raft
 * address, catches up from the leader's log while a writer keeps creating files, and then leads:
 * every file the writer was told it created reads back through it, and fsck finds nothing.
 */
class ReplicaRebuildIT {
    @TempDir
    Path directory;

    @Test
    void aReplicaRebuiltFromABackupCatchesUpAndServes() throws Exception {
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

            MetaProcess lost = cluster.metaReplicas().stream().filter(m -> !m.leads()).findFirst().orElseThrow();
            lost.kill();
            FileTrees.delete(lost.data);
            awaitCount(created, created.size() + 200);
            Path backup = directory.resolve("after-the-loss.tar");
            TestProcesses.run(cluster.cli("backup", "create", "--out", backup.toString()),
                    Duration.ofMinutes(2));
            awaitCount(created, created.size() + 200);
            System.out.println(TestProcesses.run(TestProcesses.plinth(List.of("-Xmx256m"),
                    List.of("backup", "restore", backup.toString(), "--data", lost.data.toString(), "--rejoin")), Duration.ofMinutes(2)).trim());
            lost.start();
            awaitCount(created, created.size() + 200);
            stop.set(true);
            writer.join(60_000);

            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            long target = cluster.metaReplicas().stream().mapToLong(MetaProcess::appliedIndex).max().orElseThrow();
            while (lost.appliedIndex() < target) {
                assertThat(System.nanoTime()).as("the rebuilt replica catches up to index %d (it is at %d)", target, lost.appliedIndex())
                        .isLessThan(deadline);
                Thread.sleep(100);
            }
            System.out.printf("rebuilt replica meta-%d caught up to index %d; %d files created%n", lost.index, lost.appliedIndex(), created.size());

            // make the rebuilt replica lead: kill whoever leads (restarting it) until it is chosen
            for (int attempt = 0; attempt < 8 && !lost.leads(); attempt++) {
                MetaProcess leader = ProcessCluster.awaitMetaLeader(cluster.metaReplicas());
                if (leader == lost) {
                    break;
                }
                leader.kill();
                ProcessCluster.awaitMetaLeader(cluster.metaReplicas().stream().filter(m -> m != leader).toList());
                leader.start();
                Thread.sleep(1000);
            }
            assertThat(lost.leads()).as("the rebuilt replica leads").isTrue();
            for (String path : created) {
                int n = Integer.parseInt(path.substring("/w/f-".length()));
                try (PlinthFile file = client.open(path, false)) {
                    ByteBuffer buffer = ByteBuffer.allocate((int) file.size());
                    file.read(0, buffer);
                    assertThat(Arrays.copyOf(buffer.array(), buffer.position())).as(path).isEqualTo(content(n));
                }
            }
            TestProcesses.Result fsck = TestProcesses.runAllowingFailure(cluster.cli("fsck"),
                    Map.of(), Duration.ofMinutes(2));
            assertThat(fsck.exitCode()).isZero();
            assertThat(Files.exists(lost.data.resolve("meta/mdt0/db"))).isTrue();
        }
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
