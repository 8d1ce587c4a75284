package dev.plinth.integration;

import static org.assertj.core.api.Assertions.assertThat;

import dev.plinth.client.PlinthClient;
import dev.plinth.client.PlinthFile;
import dev.plinth.common.Layout;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Random files (0..64 MiB), random layouts, writes at random offsets (holes included),
 * overwrites, truncates up and down, renames and deletes, checked byte for byte against an
 * in-memory model after every step that reads. The seed is printed; replay a failure with
 * -Dplinth.seed=SEED.
 */
class RandomWorkloadTest {
    private static final int FILE_BYTES_MAX = 64 << 20;
    private static final int FILES_MAX = 4;

    @TempDir
    Path directory;

    /** A file's expected content. */
    private static final class Model {
        byte[] bytes = new byte[0];
        int size;

        void write(int offset, byte[] data) {
            ensure(offset + data.length);
            System.arraycopy(data, 0, bytes, offset, data.length);
            size = Math.max(size, offset + data.length);
        }

        void truncate(int newSize) {
            if (newSize < size) {
                Arrays.fill(bytes, newSize, size, (byte) 0);
            } else {
                ensure(newSize);
            }
            size = newSize;
        }

        private void ensure(int length) {
            if (length > bytes.length) {
                bytes = Arrays.copyOf(bytes, Math.max(length, Math.min(FILE_BYTES_MAX, bytes.length * 2)));
            }
        }
    }

    @Test
    void randomWorkloadMatchesModel() {
        long seed = Long.getLong("plinth.seed", System.nanoTime());
        System.out.println("RandomWorkloadTest seed " + seed + " (replay with -Dplinth.seed=" + seed + ")");
        Random random = new Random(seed);
        Map<String, Model> models = new LinkedHashMap<>();
        int nextName = 0;
        int checkedBytes = 0;
        try (MiniCluster cluster = MiniCluster.start(directory); PlinthClient client = cluster.client()) {
            client.mkdirs("/w", 0755);
            for (int step = 0; step < 250; step++) {
                String context = "seed " + seed + " step " + step;
                int choice = random.nextInt(100);
                if (models.isEmpty() || (choice < 10 && models.size() < FILES_MAX)) {
                    String name = "/w/f" + nextName++;
                    // a third without Data-on-MDT, the rest with 64 KiB to 1 MiB of each file in the metadata service
                    Layout layout = new Layout(1 + random.nextInt(4), (64 << 10) << random.nextInt(5), (64 << 10) << random.nextInt(7),
                            "default", 1, List.of(), random.nextInt(3) == 0 ? 0 : (64 << 10) << random.nextInt(5));
                    client.create(name, 0644, true, layout).close();
                    models.put(name, new Model());
                    continue;
                }
                List<String> names = new ArrayList<>(models.keySet());
                String name = names.get(random.nextInt(names.size()));
                Model model = models.get(name);
                if (choice < 55) {
                    int offset = random.nextInt(Math.min(FILE_BYTES_MAX - 1, model.size + (2 << 20)) + 1);
                    int length = 1 + random.nextInt(random.nextInt(10) == 0 ? 16 << 20 : 1 << 20);
                    if (random.nextInt(4) == 0) { // small writes near the start: in, across and just past a Data-on-MDT part
                        offset = random.nextInt(1200 << 10);
                        length = 1 + random.nextInt(100 << 10);
                    }
                    length = Math.min(length, FILE_BYTES_MAX - offset);
                    if (length <= 0) {
                        continue;
                    }
                    byte[] data = new byte[length];
                    random.nextBytes(data);
                    try (PlinthFile file = client.open(name, true)) {
                        // several writes through one handle: write-behind, then read back through the same handle
                        int split = random.nextInt(length);
                        file.write(offset + split, ByteBuffer.wrap(data, split, length - split));
                        file.write(offset, ByteBuffer.wrap(data, 0, split));
                        model.write(offset, data);
                        int readOffset = random.nextInt(model.size);
                        int readLength = Math.min(model.size - readOffset, 1 + random.nextInt(1 << 20));
                        ByteBuffer back = ByteBuffer.allocate(readLength);
                        file.read(readOffset, back);
                        assertThat(back.array()).as(context + " read-own-write").isEqualTo(Arrays.copyOfRange(model.bytes, readOffset, readOffset + readLength));
                        if (random.nextBoolean()) {
                            file.fsync();
                        }
                    }
                } else if (choice < 65) {
                    int newSize = random.nextInt(4) == 0 ? random.nextInt(FILE_BYTES_MAX) : random.nextInt(model.size + 1);
                    try (PlinthFile file = client.open(name, true)) {
                        file.truncate(newSize);
                    }
                    model.truncate(newSize);
                } else if (choice < 72) {
                    String renamed = "/w/f" + nextName++;
                    client.rename(name, renamed);
                    models.remove(name);
                    models.put(renamed, model);
                    name = renamed;
                } else if (choice < 76 && models.size() > 1) {
                    client.delete(name);
                    models.remove(name);
                    continue;
                }
                assertThat(client.stat(name).sizeBytes()).as(context + " size of " + name).isEqualTo(model.size);
                if (model.size > 0) {
                    int offset = random.nextInt(model.size);
                    int length = Math.min(model.size - offset, 1 + random.nextInt(4 << 20));
                    try (PlinthFile file = client.open(name, false)) {
                        ByteBuffer back = ByteBuffer.allocate(length);
                        // sequential reads in random-sized slices exercise read-ahead
                        int done = 0;
                        while (done < length) {
                            ByteBuffer slice = back.slice(done, Math.min(length - done, 1 + random.nextInt(300_000)));
                            int read = file.read(offset + done, slice);
                            assertThat(read).as(context).isPositive();
                            done += read;
                        }
                        assertThat(back.array()).as(context + " read of " + name).isEqualTo(Arrays.copyOfRange(model.bytes, offset, offset + length));
                        checkedBytes += length;
                    }
                }
            }
            for (Map.Entry<String, Model> entry : models.entrySet()) {
                Model model = entry.getValue();
                assertThat(ClusterSmokeTest.readAll(client, entry.getKey())).as("seed " + seed + " final " + entry.getKey())
                        .isEqualTo(Arrays.copyOf(model.bytes, model.size));
            }
        }
        System.out.println("RandomWorkloadTest checked " + checkedBytes + " bytes");
    }
}
