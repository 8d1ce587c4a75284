package dev.plinth.integration;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.plinth.client.PlinthClient;
import dev.plinth.client.PlinthFile;
import dev.plinth.common.Config;
import dev.plinth.common.Layout;
import dev.plinth.common.PlinthException;
import dev.plinth.integration.ProcessCluster.MgmtReplica;
import dev.plinth.wire.messages.MgmtMessages.NodeInfo;
import dev.plinth.wire.messages.MgmtMessages.PoolOperation;
import dev.plinth.wire.messages.MgmtMessages.UpdatePool;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * mgmt as a group of three Raft replicas, each its own process: when the leader is killed
 * another takes over, and clients, meta and storage nodes follow it by themselves; the new
 * leader tracks liveness (a storage node killed afterwards leaves its chains); a replica that
 * was away catches up from the log; and without a majority no change to the cluster state is
 * made.
 */
class MgmtGroupIT {
    private static final Pattern LEADER = Pattern.compile("\"role\"\\s*:\\s*\"leader\"");
    private static final Pattern MAP_VERSION = Pattern.compile("\"map_version\"\\s*:\\s*(\\d+)");

    @TempDir
    Path directory;

    @Test
    void theClusterFollowsTheMgmtGroupThroughFailures() throws Exception {
        List<String> settings = List.of("mgmt.node-timeout-millis=3000", "rpc.timeout-millis=4000", "client.retry-timeout-millis=60000",
                "cluster.mgmt-replica-timeout-millis=1000");
        Config clientConfig = Config.defaults().with("rpc.timeout-millis", "4000").with("client.retry-timeout-millis", "60000")
                .with("cluster.mgmt-replica-timeout-millis", "1000");
        Map<String, byte[]> written = new LinkedHashMap<>();
        Random random = new Random(42);
        try (ProcessCluster cluster = ProcessCluster.start(directory, 3, 3, settings, Map.of());
             PlinthClient client = cluster.client(clientConfig)) {
            ProcessCluster.awaitMap(client, map -> map.chains().stream().anyMatch(c -> c.replicas() == 2), 20_000);
            ProcessCluster.replicatedDirectory(client, "/data", new Layout(1, 256 << 10, 256 << 10, Layout.DEFAULT_POOL, 2, List.of()));
            writeFiles(client, "before", written, random);

            MgmtReplica leader = awaitLeader(cluster.mgmtReplicas());
            long killed = System.nanoTime();
            leader.kill();
            MgmtReplica next = awaitLeader(cluster.mgmtReplicas().stream().filter(r -> r != leader).toList());
            client.refreshClusterMap();
            System.out.printf("mgmt leader %d killed; replica %d leads and answers after %d ms%n", leader.index, next.index,
                    TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - killed));
            writeFiles(client, "after-leader-change", written, random);
            assertThat(status(cluster)).contains("mgmt     3 replicas, " + next.rpc + " leads");

            // The new leader watches heartbeats: a storage node killed now goes offline and its chains go on without it.
            ProcessCluster.StorageNodeProcess victim = cluster.storageNodes().getFirst();
            victim.kill();
            ProcessCluster.awaitMap(client, map -> map.nodes().stream().filter(n -> !n.online()).count() == 1, 20_000);
            writeFiles(client, "node-down", written, random);
            victim.start();
            ProcessCluster.awaitMap(client, map -> map.nodes().stream().allMatch(NodeInfo::online), 20_000);

            // The replica that was away follows the log again: it shows the leader's map.
            leader.start();
            long version = client.refreshClusterMap().version();
            awaitTrue(() -> mapVersion(leader) >= version, 20_000, "the restarted replica did not catch up with map version " + version);
            assertThat(LEADER.matcher(leader.status()).find() || LEADER.matcher(next.status()).find()).isTrue();

            // A hung leader (SIGSTOP): another is elected, and callers give up on the hung one after
            // cluster.mgmt-replica-timeout-millis, so storage nodes' heartbeats go on and no node is marked offline.
            MgmtReplica hung = awaitLeader(List.of(leader, next));
            hung.pause();
            long paused = System.nanoTime();
            MgmtReplica elected = awaitLeader(cluster.mgmtReplicas().stream().filter(r -> r != hung).toList());
            writeFiles(client, "leader-hung", written, random);
            System.out.printf("mgmt leader %d paused; replica %d leads, and writes went on %d ms after the pause%n", hung.index, elected.index,
                    TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - paused));
            Thread.sleep(2 * 3000);
            assertThat(client.refreshClusterMap().nodes()).allMatch(NodeInfo::online);
            hung.resume();

            // Without a majority nothing changes; with one again, changes go through. The leader and one
            // follower go, so the survivor is a follower that never saw the change.
            MgmtReplica current = awaitLeader(cluster.mgmtReplicas());
            List<MgmtReplica> followers = cluster.mgmtReplicas().stream().filter(r -> r != current).toList();
            current.kill();
            followers.get(1).kill();
            assertThatThrownBy(() -> client.updatePool(new UpdatePool(PoolOperation.CREATE, "fast", List.of())))
                    .isInstanceOfSatisfying(PlinthException.class, e -> assertThat(e.code().retryable()).isTrue());
            assertThat(client.clusterMap().pools()).noneMatch(pool -> pool.name().equals("fast"));
            current.start();
            awaitLeader(List.of(current, followers.get(0)));
            awaitTrue(() -> {
                try {
                    client.updatePool(new UpdatePool(PoolOperation.CREATE, "fast", List.of()));
                    return true;
                } catch (PlinthException e) {
                    return false;
                }
            }, 20_000, "the pool could not be created once a majority was back");
            assertThat(client.refreshClusterMap().pools()).anyMatch(pool -> pool.name().equals("fast"));

            for (Map.Entry<String, byte[]> file : written.entrySet()) {
                assertThat(ClusterSmokeTest.readAll(client, file.getKey())).as(file.getKey()).isEqualTo(file.getValue());
            }
        }
    }

    /** What `plinth status` prints, given every mgmt replica. */
    private static String status(ProcessCluster cluster) {
        java.io.PrintStream out = System.out;
        java.io.ByteArrayOutputStream captured = new java.io.ByteArrayOutputStream();
        try {
            System.setOut(new java.io.PrintStream(captured, true, java.nio.charset.StandardCharsets.UTF_8));
            dev.plinth.cli.Main.run("status", "--server", cluster.mgmtAddresses(), "--secret-file", cluster.secretFile().toString());
        } finally {
            System.setOut(out);
        }
        return captured.toString(java.nio.charset.StandardCharsets.UTF_8);
    }

    private static void writeFiles(PlinthClient client, String prefix, Map<String, byte[]> written, Random random) {
        for (int i = 0; i < 5; i++) {
            String path = "/data/" + prefix + "-" + i;
            byte[] content = new byte[100_000 + random.nextInt(600_000)];
            random.nextBytes(content);
            try (PlinthFile file = client.create(path, 0644, false, null)) {
                file.write(0, ByteBuffer.wrap(content));
                file.fsync();
            }
            written.put(path, content);
        }
    }

    /** The replica among {@code candidates} whose status page says it leads, once one does (30 s at most). */
    private static MgmtReplica awaitLeader(List<MgmtReplica> candidates) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (System.nanoTime() < deadline) {
            for (MgmtReplica replica : candidates) {
                try {
                    if (LEADER.matcher(replica.status()).find()) {
                        return replica;
                    }
                } catch (java.io.IOException e) {
                    // not answering (yet)
                }
            }
            Thread.sleep(100);
        }
        throw new AssertionError("no mgmt replica leads after 30 s");
    }

    private static long mapVersion(MgmtReplica replica) {
        try {
            Matcher matcher = MAP_VERSION.matcher(replica.status());
            return matcher.find() ? Long.parseLong(matcher.group(1)) : -1;
        } catch (Exception e) {
            return -1;
        }
    }

    private interface Condition {
        boolean holds() throws Exception;
    }

    private static void awaitTrue(Condition condition, long timeoutMillis, String failure) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMillis);
        while (!condition.holds()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError(failure);
            }
            Thread.sleep(100);
        }
    }
}
