package dev.plinth.integration;

import static dev.plinth.integration.ErasureCodingTest.assertSameBytes;
import static dev.plinth.integration.ErasureCodingTest.read;
import static dev.plinth.integration.ErasureCodingTest.readOwnWriteAndMaybeSync;
import static dev.plinth.integration.ErasureCodingTest.truncateAtRandom;
import static org.assertj.core.api.Assertions.assertThat;

import dev.plinth.client.PlinthClient;
import dev.plinth.client.PlinthFile;
import dev.plinth.common.Layout;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Compressed layouts against an in-memory model: writes of text-like, random and zero bytes at
 * random offsets (holes, overwrites, pieces of blocks, several writes through one handle),
 * truncates up and down, reads through the writing handle and through another client; lz4 and
 * zstd, over replicated chains and erasure-coded stripes, with and without a Data-on-MDT part.
 * The seed is printed; replay a failure with -Dplinth.seed=SEED.
 */
class CompressionTest {
    private static final int FILE_BYTES_MAX = 12 << 20;

    @TempDir
    Path directory;

    /** Words, as a text or a JSON file has them: compresses about 3:1 with lz4. */
    static byte[] textLike(Random random, int length) {
        String[] words = {"the", "model", "token", "gradient", "epoch", "shard", "sample", "loss", "{\"id\": ", "\"label\": ", "0.125", "\n"};
        StringBuilder text = new StringBuilder(length + 16);
        while (text.length() < length) {
            text.append(words[random.nextInt(words.length)]).append(' ');
        }
        return Arrays.copyOf(text.toString().getBytes(StandardCharsets.US_ASCII), length);
    }

    private static byte[] data(Random random, int length) {
        byte[] data = new byte[length];
        switch (random.nextInt(3)) {
            case 0 -> random.nextBytes(data); // incompressible: stored as written
            case 1 -> data = textLike(random, length);
            default -> { // zeros, with a few bytes set: a sparse-looking file
                for (int i = 0; i < 4 && length > 0; i++) {
                    data[random.nextInt(length)] = (byte) (1 + random.nextInt(255));
                }
            }
        }
        return data;
    }

    @ParameterizedTest(name = "{0} over {1}, Data-on-MDT {2}")
    @CsvSource({"LZ4,0,replicas,0", "ZSTD,3,replicas,65536", "LZ4,0,ec,0", "ZSTD,0,ec,131072"})
    void randomWorkloadMatchesTheModel(Layout.Encoding encoding, int level, String redundancy, int mdtBytes) {
        long seed = Long.getLong("plinth.seed", System.nanoTime());
        System.out.println("CompressionTest " + encoding + " " + redundancy + " seed " + seed + " (replay with -Dplinth.seed=" + seed + ")");
        Random random = new Random(seed);
        byte[] model = new byte[FILE_BYTES_MAX];
        int size = 0;
        try (MiniCluster cluster = MiniCluster.start(directory, MiniCluster.testConfig().with("server.targets", "3"));
             PlinthClient client = cluster.client(); PlinthClient reader = cluster.client()) {
            Layout base = new Layout(redundancy.equals("ec") ? 1 : 2, 128 << 10, 256 << 10, "default", 1, List.of(), mdtBytes);
            Layout template = (redundancy.equals("ec") ? base.withErasureCoding(2, 1) : base).withCompression(encoding, level);
            client.create("/c", 0644, true, template).close();
            assertThat(client.stat("/c").layout().encoding()).isEqualTo(encoding);
            for (int step = 0; step < 120; step++) {
                String context = "seed " + seed + " step " + step;
                int choice = random.nextInt(100);
                if (choice < 60) {
                    int offset = random.nextInt(Math.min(FILE_BYTES_MAX - 1, size + (512 << 10)) + 1);
                    int length = random.nextInt(3) == 0 ? 1 + random.nextInt(9000) : 1 + random.nextInt(random.nextInt(6) == 0 ? 3 << 20 : 300 << 10);
                    length = Math.min(length, FILE_BYTES_MAX - offset);
                    byte[] data = data(random, length);
                    try (PlinthFile file = client.open("/c", true)) {
                        // in pieces, the later first and the first in small writes: blocks fill from several writes
                        int split = random.nextInt(length);
                        file.write(offset + split, ByteBuffer.wrap(data, split, length - split));
                        for (int at = 0; at < split; ) {
                            int piece = Math.min(split - at, 1 + random.nextInt(20_000));
                            file.write(offset + at, ByteBuffer.wrap(data, at, piece));
                            at += piece;
                        }
                        System.arraycopy(data, 0, model, offset, length);
                        size = Math.max(size, offset + length);
                        readOwnWriteAndMaybeSync(file, random, model, size, context);
                    }
                } else if (choice < 75) {
                    size = truncateAtRandom(client, "/c", random, model, size);
                }
                assertThat(client.stat("/c").sizeBytes()).as(context).isEqualTo(size);
                if (size > 0) {
                    int offset = random.nextInt(size);
                    int length = Math.min(size - offset, 1 + random.nextInt(2 << 20));
                    assertSameBytes(read(reader, "/c", offset, length), Arrays.copyOfRange(model, offset, offset + length),
                            context + " read by another client at " + offset);
                }
            }
            assertSameBytes(read(reader, "/c", 0, size), Arrays.copyOf(model, size), "seed " + seed + " whole file");
        }
    }

    @Test
    void compressibleDataTakesLessDiskAndIncompressibleDataIsStoredAsWritten() throws IOException {
        try (MiniCluster cluster = MiniCluster.start(directory); PlinthClient client = cluster.client()) {
            Layout lz4 = new Layout(1, 1 << 20, 1 << 20, "default", 1, List.of()).withCompression(Layout.Encoding.LZ4, 0);
            byte[] text = textLike(new Random(1), 8 << 20);
            byte[] noise = new byte[8 << 20];
            new Random(2).nextBytes(noise);
            for (String name : List.of("/text", "/noise")) {
                try (PlinthFile file = client.create(name, 0644, true, lz4)) {
                    file.write(0, ByteBuffer.wrap(name.equals("/text") ? text : noise));
                    file.fsync();
                }
            }
            assertSameBytes(read(client, "/text", 0, text.length), text, "text");
            assertSameBytes(read(client, "/noise", 0, noise.length), noise, "noise");
            long textStored = client.storedBytes(client.stat("/text"));
            long noiseStored = client.storedBytes(client.stat("/noise"));
            assertThat(textStored).as("text-like bytes compress").isLessThan(text.length / 2);
            assertThat(noiseStored).as("random bytes are kept as they are, a header per 64 KiB more")
                    .isBetween((long) noise.length, noise.length + (long) noise.length / 100);
            long lengths = cluster.server().storage().targets().stream().mapToLong(target -> target.usedBytes()).sum();
            long onDisk = cluster.server().storage().usage().stream().mapToLong(usage -> usage.usedBytes()).sum();
            assertThat(onDisk).as("what df shows as used: the disks' bytes, not the slots' lengths").isLessThan(lengths - text.length / 3);
        }
    }
}
