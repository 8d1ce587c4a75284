package dev.plinth.datasets;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.plinth.common.PlinthException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The streaming reader: every sample once across ranks and workers, the same order for a (seed, epoch), resume, and errors. */
class ShardStreamTest {
    @TempDir
    Path directory;
    private Path dest;
    private final List<String> keys = new ArrayList<>();

    @BeforeEach
    void pack() throws Exception {
        Path source = directory.resolve("src");
        Files.createDirectories(source);
        for (int i = 0; i < 100; i++) {
            String key = String.format("%05d", i);
            keys.add(key);
            Files.writeString(source.resolve(key + ".txt"), "sample " + i);
            Files.write(source.resolve(key + ".bin"), new byte[i * 10]);
        }
        dest = Files.createDirectories(directory.resolve("shards"));
        new Packer(source, dest, new Packer.Options(7, 0, "train-%06d.tar", false, 0, 2, null, false)).run(ignored -> {});
    }

    private List<Path> shards() throws Exception {
        return ShardStream.expand(dest, "train-{000000..000014}.tar");
    }

    private static List<String> read(ShardStream.Builder builder) throws Exception {
        List<String> read = new ArrayList<>();
        try (ShardStream stream = builder.open()) {
            stream.forEachRemaining(sample -> {
                assertThat(sample.members()).containsOnlyKeys("txt", "bin");
                assertThat(new String(sample.members().get("txt"))).isEqualTo("sample " + Integer.parseInt(sample.key()));
                read.add(sample.key());
            });
        }
        return read;
    }

    @Test
    void readsEverySampleInShardOrderWithoutShuffling() throws Exception {
        assertThat(shards()).hasSize(15);
        assertThat(ShardStream.expand(dest, "train-*.tar")).isEqualTo(shards());
        assertThat(read(ShardStream.of(shards()).shuffleShards(false))).isEqualTo(keys);
    }

    @Test
    void ranksAndWorkersTogetherSeeEverySampleExactlyOnce() throws Exception {
        List<String> all = new ArrayList<>();
        for (int rank = 0; rank < 2; rank++) {
            for (int worker = 0; worker < 3; worker++) {
                all.addAll(read(ShardStream.of(shards()).seed(5).epoch(1).rank(rank, 2).worker(worker, 3).shuffleBuffer(10)));
            }
        }
        assertThat(all).hasSize(keys.size());
        assertThat(new HashSet<>(all)).isEqualTo(new HashSet<>(keys));
    }

    @Test
    void theOrderIsFixedBySeedAndEpoch() throws Exception {
        List<String> first = read(ShardStream.of(shards()).seed(9).epoch(3).shuffleBuffer(16));
        assertThat(read(ShardStream.of(shards()).seed(9).epoch(3).shuffleBuffer(16))).isEqualTo(first);
        assertThat(read(ShardStream.of(shards()).seed(9).epoch(4).shuffleBuffer(16))).isNotEqualTo(first).hasSameElementsAs(first);
        assertThat(first).isNotEqualTo(keys).hasSameElementsAs(keys);
    }

    @Test
    void resumesFromASavedPosition() throws Exception {
        List<String> whole = read(ShardStream.of(shards()).seed(1).epoch(0).shuffleBuffer(8).rank(1, 2));
        List<String> firstPart = new ArrayList<>();
        long saved;
        try (ShardStream stream = ShardStream.of(shards()).seed(1).epoch(0).shuffleBuffer(8).rank(1, 2).open()) {
            ShardStream.Sample sample = null;
            for (int i = 0; i < 17; i++) {
                sample = stream.next();
                firstPart.add(sample.key());
            }
            saved = sample.position() + 1;
        }
        List<String> rest = read(ShardStream.of(shards()).seed(1).epoch(0).shuffleBuffer(8).rank(1, 2).resumeAfter(saved));
        List<String> joined = new ArrayList<>(firstPart);
        joined.addAll(rest);
        assertThat(joined).isEqualTo(whole);
    }

    @Test
    void aMissingShardIsAClearError() throws Exception {
        assertThatThrownBy(() -> ShardStream.expand(dest, "train-{000000..000020}.tar")).isInstanceOf(PlinthException.class)
                .hasMessageContaining("6 shard(s) missing").hasMessageContaining("train-000015.tar");
        List<Path> shards = shards();
        Files.delete(dest.resolve("train-000003.tar"));
        assertThatThrownBy(() -> read(ShardStream.of(shards).shuffleShards(false))).isInstanceOf(PlinthException.class)
                .hasMessageContaining("shard missing").hasMessageContaining("train-000003.tar");
    }
}
