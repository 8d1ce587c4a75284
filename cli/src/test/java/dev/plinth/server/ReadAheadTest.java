package dev.plinth.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.plinth.client.PlinthClient;
import dev.plinth.client.PlinthFile;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Read-ahead under the access patterns FUSE produces: reads that arrive out of order around the
 * stream, and a handle that reads, then grows the file by writing, then reads on past its old end.
 */
class ReadAheadTest {
    @TempDir
    Path directory;

    @Test
    @Timeout(120)
    void readsAcrossTheOldEndOfAGrowingFile() {
        try (MiniCluster cluster = MiniCluster.start(directory); PlinthClient client = cluster.client();
             PlinthFile file = client.create("/growing", 0644, true, null)) {
            byte[] model = new byte[3_000_000];
            new Random(7).nextBytes(model);
            file.write(0, ByteBuffer.wrap(model, 0, 100));
            ByteBuffer first = ByteBuffer.allocate(100);
            assertThat(file.read(0, first)).isEqualTo(100); // a read-ahead unit now ends at byte 100
            int later = 2 << 20; // in a later unit: the write does not touch the unit that ends at byte 100
            file.write(later, ByteBuffer.wrap(model, later, model.length - later));
            Arrays.fill(model, 100, later, (byte) 0); // the hole between
            ByteBuffer rest = ByteBuffer.allocate(model.length - 100);
            assertThat(file.read(100, rest)).isEqualTo(model.length - 100);
            assertThat(rest.array()).isEqualTo(Arrays.copyOfRange(model, 100, model.length));
        }
    }

    @Test
    @Timeout(120)
    void outOfOrderReadsAroundTheStream() {
        try (MiniCluster cluster = MiniCluster.start(directory); PlinthClient client = cluster.client()) {
            byte[] model = new byte[12 << 20];
            new Random(8).nextBytes(model);
            try (PlinthFile file = client.create("/stream", 0644, true, null)) {
                file.write(0, ByteBuffer.wrap(model));
            }
            try (PlinthFile file = client.open("/stream", false)) {
                int unit = 1 << 20;
                // what kernel read-ahead does: the next units requested before (or after) the current one
                int[] order = {0, 2, 1, 3, 5, 4, 6, 8, 7, 9, 11, 10, 0, 1};
                for (int index : order) {
                    ByteBuffer buffer = ByteBuffer.allocate(unit);
                    assertThat(file.read((long) index * unit, buffer)).isEqualTo(unit);
                    assertThat(buffer.array()).as("unit %d", index).isEqualTo(Arrays.copyOfRange(model, index * unit, (index + 1) * unit));
                }
            }
        }
    }
}
