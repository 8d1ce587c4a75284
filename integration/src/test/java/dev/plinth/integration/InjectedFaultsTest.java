package dev.plinth.integration;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.plinth.client.PlinthClient;
import dev.plinth.client.PlinthFile;
import dev.plinth.common.ErrorCode;
import dev.plinth.common.FaultPoints;
import dev.plinth.common.Layout;
import dev.plinth.common.PlinthException;
import dev.plinth.storage.ChunkStore;
import dev.plinth.wire.messages.MgmtMessages.TargetState;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The named fault points of the disk and the network, injected deterministically: a reply lost
 * after its request was carried out, a write(2) that writes half, a slow disk, a failed fsync.
 * Each leaves every acknowledged byte and change as it was acknowledged, and a failed fsync takes
 * its target out of service for good instead of letting a later fsync vouch for lost pages.
 */
class InjectedFaultsTest {
    private static final Layout ONE_TARGET = new Layout(1, 1 << 20, 1 << 20, "default", 1, List.of());

    @TempDir
    Path directory;

    @AfterEach
    void clearFaults() {
        FaultPoints.clear();
    }

    private static byte[] bytes(int length, int seed) {
        byte[] bytes = new byte[length];
        new Random(seed).nextBytes(bytes);
        return bytes;
    }

    private static void write(PlinthClient client, String path, byte[] content) {
        try (PlinthFile file = client.create(path, 0644, true, ONE_TARGET)) {
            file.write(0, ByteBuffer.wrap(content));
            file.fsync();
        }
    }

    @Test
    void aChangeWhoseReplyWasLostIsAppliedOnceWhenRetried() {
        // a short timeout, so the retry after the lost reply comes soon
        var config = MiniCluster.testConfig().with("rpc.timeout-millis", "1000");
        try (MiniCluster cluster = MiniCluster.start(directory, config); PlinthClient client = cluster.client(dev.plinth.common.Credentials.ROOT, config)) {
            client.mkdir("/d", 0755);
            FaultPoints.set(FaultPoints.RPC_DROP_REPLY, "Create");
            try (PlinthFile file = client.create("/d/created", 0644, true, null)) {
                file.write(0, ByteBuffer.wrap(new byte[] {1, 2, 3}));
            }
            assertThat(FaultPoints.enabled(FaultPoints.RPC_DROP_REPLY)).as("the reply was dropped").isFalse();

            FaultPoints.set(FaultPoints.RPC_DROP_REPLY, "Rename");
            client.rename("/d/created", "/d/renamed");
            assertThat(FaultPoints.enabled(FaultPoints.RPC_DROP_REPLY)).isFalse();

            FaultPoints.set(FaultPoints.RPC_DROP_REPLY, "Mkdir");
            client.mkdir("/d/sub", 0755);
            assertThat(FaultPoints.enabled(FaultPoints.RPC_DROP_REPLY)).isFalse();

            FaultPoints.set(FaultPoints.RPC_DROP_REPLY, "Unlink");
            client.delete("/d/renamed");
            assertThat(FaultPoints.enabled(FaultPoints.RPC_DROP_REPLY)).isFalse();

            assertThat(client.list("/d")).extracting(e -> e.name()).containsExactly("sub");
            assertThat(client.stat("/d").linkCount()).isEqualTo(3);
        }
    }

    @Test
    void aLostWriteReplyIsRetriedAndTheBytesAreThereOnce() throws Exception {
        var config = MiniCluster.testConfig().with("rpc.timeout-millis", "1000");
        byte[] content = bytes(3 << 20, 1);
        try (MiniCluster cluster = MiniCluster.start(directory, config); PlinthClient client = cluster.client(dev.plinth.common.Credentials.ROOT, config)) {
            FaultPoints.set(FaultPoints.RPC_DROP_REPLY, "WriteChunk");
            write(client, "/written", content);
            assertThat(FaultPoints.enabled(FaultPoints.RPC_DROP_REPLY)).isFalse();
            assertThat(ClusterSmokeTest.readAll(client, "/written")).isEqualTo(content);
        }
    }

    @Test
    void shortWritesReachTheDiskWhole() throws Exception {
        byte[] content = bytes(5 << 20, 2);
        try (MiniCluster cluster = MiniCluster.start(directory); PlinthClient client = cluster.client()) {
            FaultPoints.set(FaultPoints.STORAGE_SHORT_WRITE, "1000");
            write(client, "/short", content);
            assertThat(FaultPoints.value(FaultPoints.STORAGE_SHORT_WRITE, 0)).as("short writes were injected").isLessThan(1000);
            FaultPoints.clear();
            assertThat(ClusterSmokeTest.readAll(client, "/short")).isEqualTo(content);
            for (ChunkStore target : cluster.server().storage().targets()) {
                target.scan(null, 10_000).forEach(stored -> target.verify(stored.chunk())); // every block against its stored CRC
            }
        }
    }

    @Test
    void aSlowDiskSlowsWritersAndReadersButLosesNothing() throws Exception {
        var config = MiniCluster.testConfig().with("rpc.timeout-millis", "2000");
        try (MiniCluster cluster = MiniCluster.start(directory, config); PlinthClient client = cluster.client(dev.plinth.common.Credentials.ROOT, config)) {
            FaultPoints.set(FaultPoints.STORAGE_DISK_DELAY_MILLIS, "150");
            List<Future<?>> done = new ArrayList<>();
            try (ExecutorService pool = Executors.newFixedThreadPool(4)) {
                for (int i = 0; i < 8; i++) {
                    int n = i;
                    done.add(pool.submit(() -> {
                        byte[] content = bytes((1 << 20) + n * 4097, 10 + n);
                        write(client, "/slow-" + n, content);
                        assertThat(ClusterSmokeTest.readAll(client, "/slow-" + n)).isEqualTo(content);
                        return null;
                    }));
                }
                for (Future<?> future : done) {
                    future.get();
                }
            }
        }
    }

    @Test
    void aFailedFsyncTakesItsTargetOutOfServiceForGood() throws Exception {
        // a short retry window: with one replica, the file on the failed target cannot be served by anyone
        var config = MiniCluster.testConfig().with("client.retry-timeout-millis", "3000");
        Path data = directory.resolve("data");
        byte[] before = bytes(2 << 20, 3);
        byte[] during = bytes(2 << 20, 4);
        int failedTarget;
        try (MiniCluster cluster = MiniCluster.start(data, config); PlinthClient client = cluster.client(dev.plinth.common.Credentials.ROOT, config)) {
            write(client, "/before", before);
            FaultPoints.set(FaultPoints.STORAGE_FSYNC_FAIL, "1");
            try (PlinthFile file = client.create("/during", 0644, true, ONE_TARGET)) {
                file.write(0, ByteBuffer.wrap(during));
                assertThatThrownBy(file::fsync).as("the application's fsync fails").isInstanceOf(PlinthException.class);
            } catch (PlinthException e) {
                // close after the failed fsync may fail as well
            }
            failedTarget = cluster.server().storage().targets().stream().filter(t -> t.failure() != null).mapToInt(ChunkStore::targetId)
                    .findFirst().orElseThrow(() -> new AssertionError("no target failed"));
            Path failedRoot = cluster.server().storage().targets().stream().filter(t -> t.targetId() == failedTarget).findFirst().orElseThrow()
                    .root();
            assertThat(Files.readString(failedRoot.resolve(ChunkStore.FAILED_FILE))).contains("fsync");
            ProcessCluster.awaitMap(client, map -> map.target(failedTarget).state() == TargetState.OFFLINE, 10_000);

            // new files go to the targets that still serve; files there read as written
            for (int i = 0; i < 6; i++) {
                write(client, "/after-" + i, during);
                assertThat(ClusterSmokeTest.readAll(client, "/after-" + i)).isEqualTo(during);
            }
            assertReadsAsWrittenOrFails(client, "/before", before, failedTarget);
        }
        // a restart keeps the failed target out of service
        try (MiniCluster cluster = MiniCluster.start(data, config); PlinthClient client = cluster.client(dev.plinth.common.Credentials.ROOT, config)) {
            assertThat(cluster.server().storage().targets().stream().filter(t -> t.targetId() == failedTarget).findFirst().orElseThrow()
                    .failure()).contains("fsync");
            ProcessCluster.awaitMap(client, map -> map.target(failedTarget).state() == TargetState.OFFLINE, 10_000);
            assertReadsAsWrittenOrFails(client, "/before", before, failedTarget);
            write(client, "/after-restart", during);
            assertThat(ClusterSmokeTest.readAll(client, "/after-restart")).isEqualTo(during);
        }
    }

    /** A file on the failed target fails to read (its only replica is out); anywhere else it reads as written. */
    private static void assertReadsAsWrittenOrFails(PlinthClient client, String path, byte[] content, int failedTarget) throws Exception {
        int target = client.clusterMap().chain(client.stat(path).layout().chainIds().getFirst()).targetIds().getFirst();
        if (target == failedTarget) {
            assertThatThrownBy(() -> ClusterSmokeTest.readAll(client, path)).isInstanceOf(PlinthException.class)
                    .satisfies(e -> assertThat(((PlinthException) e).code()).isNotEqualTo(ErrorCode.CHECKSUM_MISMATCH));
        } else {
            assertThat(ClusterSmokeTest.readAll(client, path)).isEqualTo(content);
        }
    }
}
