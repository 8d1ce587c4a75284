package dev.plinth.integration;

import static org.assertj.core.api.Assertions.assertThat;

import dev.plinth.client.PlinthClient;
import dev.plinth.client.PlinthFile;
import dev.plinth.common.ChunkFormat;
import dev.plinth.common.Config;
import dev.plinth.common.Layout;
import dev.plinth.wire.messages.MgmtMessages.ChainInfo;
import dev.plinth.wire.messages.MgmtMessages.ClusterMap;
import dev.plinth.wire.messages.MetaMessages.Attributes;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Bytes corrupted on disk in one replica (separate storage processes, R=2): a read that meets
 * them is served from the other replica and has the damaged chunk repaired; damage no one reads
 * is found and repaired by the scrubber.
 */
class ScrubIT {
    private static final int CHUNK_SIZE = 256 << 10;

    @TempDir
    Path directory;

    @Test
    void damagedChunksAreServedFromAReplicaAndRepaired() throws Exception {
        List<String> settings = List.of("storage.scrub-interval-millis=15000", "storage.scrub-bytes-per-second=256m");
        try (ProcessCluster cluster = ProcessCluster.start(directory, 2, settings);
             PlinthClient client = cluster.client(Config.defaults())) {
            ProcessCluster.awaitMap(client, map -> map.chains().stream().anyMatch(c -> c.replicas() == 2), 10_000);
            ProcessCluster.replicatedDirectory(client, "/data", new Layout(1, CHUNK_SIZE, CHUNK_SIZE, Layout.DEFAULT_POOL, 2, List.of()));
            byte[] content = new byte[4 * CHUNK_SIZE];
            new Random(7).nextBytes(content);
            try (PlinthFile file = client.create("/data/model.bin", 0644, false, null)) {
                file.write(0, ByteBuffer.wrap(content));
                file.fsync();
            }
            Attributes attributes = client.stat("/data/model.bin");
            ClusterMap map = client.refreshClusterMap();
            ChainInfo chain = map.chain(attributes.layout().chainIds().getFirst());
            // the client reads chunk c first from member (c + inode) mod 2 (members take turns by chunk): damage exactly
            // those copies, so that the read meets them; every byte still has one good copy
            Path first = Path.of(map.target(chain.targetIds().get((int) Math.floorMod(attributes.inodeId(), 2L))).path());
            Path second = Path.of(map.target(chain.targetIds().get((int) Math.floorMod(attributes.inodeId() + 1, 2L))).path());
            corrupt(first, attributes.inodeId(), 0);
            corrupt(second, attributes.inodeId(), 1);
            assertThat(ClusterSmokeTest.readAll(client, "/data/model.bin")).as("reads are served from the good replicas").isEqualTo(content);
            awaitRepaired(first, attributes.inodeId(), 0, content, 10_000);
            awaitRepaired(second, attributes.inodeId(), 1, content, 10_000);

            // damage nobody reads: the scrubber's pass finds it
            corrupt(first, attributes.inodeId(), 3);
            awaitRepaired(first, attributes.inodeId(), 3, content, 45_000);
            assertThat(ClusterSmokeTest.readAll(client, "/data/model.bin")).isEqualTo(content);
        }
    }

    private static void corrupt(Path target, long inodeId, int chunk) throws java.io.IOException {
        try (RandomAccessFile file = new RandomAccessFile(ChunkFormat.dataPath(target, inodeId, 0, chunk).toFile(), "rw")) {
            file.seek(1000);
            int value = file.read();
            file.seek(1000);
            file.write(value ^ 0xFF);
        }
    }

    private static void awaitRepaired(Path target, long inodeId, int chunk, byte[] content, long timeoutMillis) throws Exception {
        byte[] expected = Arrays.copyOfRange(content, chunk * CHUNK_SIZE, (chunk + 1) * CHUNK_SIZE);
        Path data = ChunkFormat.dataPath(target, inodeId, 0, chunk);
        long deadline = System.currentTimeMillis() + timeoutMillis;
        while (!Arrays.equals(Files.readAllBytes(data), expected)) {
            assertThat(System.currentTimeMillis()).as("chunk %d on %s repaired within %d ms", chunk, target, timeoutMillis).isLessThan(deadline);
            Thread.sleep(100);
        }
    }
}
