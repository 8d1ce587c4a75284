package dev.plinth.integration;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.plinth.client.PlinthClient;
import dev.plinth.client.PlinthFile;
import dev.plinth.common.ChunkFormat;
import dev.plinth.common.Credentials;
import dev.plinth.common.ErrorCode;
import dev.plinth.common.Layout;
import dev.plinth.common.PlinthException;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Short-circuit reads return the same bytes as network reads, and damaged blocks still fail with a typed error. */
class ShortCircuitReadTest {
    @TempDir
    Path directory;

    @Test
    void localReadsMatchAndFallBackOnDamage() throws Exception {
        byte[] bytes = new byte[7_000_000];
        new Random(11).nextBytes(bytes);
        Layout layout = new Layout(3, 256 << 10, 1 << 20, "default", 1, List.of());
        try (MiniCluster cluster = MiniCluster.start(directory);
             PlinthClient writer = cluster.client();
             PlinthClient local = cluster.client(Credentials.ROOT, MiniCluster.testConfig().with("client.short-circuit-reads", "true"))) {
            try (PlinthFile file = writer.create("/data", 0644, true, layout)) {
                file.write(0, ByteBuffer.wrap(bytes, 0, 3_000_000));
                file.write(5_000_000, ByteBuffer.wrap(bytes, 5_000_000, 2_000_000)); // a hole in between
            }
            byte[] expected = bytes.clone();
            Arrays.fill(expected, 3_000_000, 5_000_000, (byte) 0);
            assertThat(ClusterSmokeTest.readAll(local, "/data")).isEqualTo(expected);
            assertThat(local.shortCircuitReads()).isPositive();
            assertThat(writer.shortCircuitReads()).isZero(); // off unless asked for

            // damage one stored block: the local read sees the mismatch, the network read too, and the caller gets a typed error
            var attributes = writer.stat("/data");
            int chainId = attributes.layout().chainIds().getFirst();
            int targetId = writer.clusterMap().chain(chainId).targetIds().getFirst();
            Path targetRoot = Path.of(writer.clusterMap().target(targetId).path());
            Path chunk = ChunkFormat.dataPath(targetRoot, attributes.inodeId(), 0, 0);
            try (RandomAccessFile file = new RandomAccessFile(chunk.toFile(), "rw")) {
                file.seek(1000);
                file.write(file.read() ^ 0x01);
            }
            assertThatThrownBy(() -> ClusterSmokeTest.readAll(local, "/data")).isInstanceOfSatisfying(PlinthException.class,
                    e -> assertThat(e.code()).isEqualTo(ErrorCode.CHECKSUM_MISMATCH));
        }
    }
}
