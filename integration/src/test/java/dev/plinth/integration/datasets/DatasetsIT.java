package dev.plinth.integration.datasets;

import static org.assertj.core.api.Assertions.assertThat;

import dev.plinth.cli.Main;
import dev.plinth.client.PlinthClient;
import dev.plinth.common.Config;
import dev.plinth.common.Credentials;
import dev.plinth.datasets.ShardIndex;
import dev.plinth.datasets.ShardStream;
import dev.plinth.fuse.FuseMount;
import dev.plinth.fuse.MountOptions;
import dev.plinth.integration.MiniCluster;
import dev.plinth.integration.TestProcesses;
import dev.plinth.integration.cli.CliRun;
import dev.plinth.testing.Prerequisites;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileSystem;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * Datasets in the cluster: `plinth pack` from local disk into Plinth and back, `plinth shards`
 * verify, ls and get against shards in the cluster, the Java reader over plinth:// paths, and the
 * PyTorch example streaming shards through a FUSE mount with DataLoader workers.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class DatasetsIT {
    @TempDir
    static Path directory;
    private MiniCluster cluster;
    private final Random random = new Random(36);
    private final Map<String, byte[]> files = new TreeMap<>();
    private Path tree;

    @BeforeAll
    void start() throws Exception {
        cluster = MiniCluster.start(directory.resolve("data"));
        tree = directory.resolve("tree");
        for (int i = 0; i < 120; i++) {
            String key = String.format("images/%05d", i);
            byte[] input = new byte[100 + random.nextInt(20_000)];
            random.nextBytes(input);
            files.put(key + ".input", input);
            files.put(key + ".cls", Integer.toString(i % 3).getBytes(StandardCharsets.UTF_8));
        }
        files.put("odd names/ünïcode sample.json", "{}".getBytes(StandardCharsets.UTF_8));
        for (Map.Entry<String, byte[]> file : files.entrySet()) {
            Path path = tree.resolve(file.getKey());
            Files.createDirectories(path.getParent());
            Files.write(path, file.getValue());
        }
    }

    @AfterAll
    void stop() {
        cluster.close();
    }

    private CliRun.Result plinth(String... arguments) {
        List<String> all = new ArrayList<>(List.of(arguments));
        all.add("--server=" + cluster.server().rpcAddress());
        all.add("--secret-file=" + cluster.server().secretFile());
        return CliRun.run(all);
    }

    private FileSystem plinthFileSystem() throws Exception {
        return FileSystems.newFileSystem(URI.create("plinth://" + cluster.server().rpcAddress() + "/"),
                Map.of("secretFile", cluster.server().secretFile().toString(), "config", MiniCluster.testConfig()));
    }

    @Test
    void packsIntoTheClusterVerifiesFetchesAndStreams() throws Exception {
        CliRun.Result packed = plinth("pack", tree.toString(), "plinth:/datasets/train", "--samples-per-shard", "16", "--workers", "2");
        assertThat(packed.exitCode()).as(packed.err()).isZero();
        assertThat(packed.err()).contains("121 sample(s) in 8 shard(s)");

        CliRun.Result verified = plinth("shards", "verify", "plinth:/datasets/train");
        assertThat(verified.exitCode()).as(verified.err()).isZero();
        assertThat(verified.out()).contains("8 shard(s), 241 member(s)").contains("all match the index");

        CliRun.Result listed = plinth("shards", "ls", "plinth:/datasets/train", "--json");
        assertThat(listed.out()).contains("\"samples\":121").contains("\"input\":120");

        CliRun.Result fetched = plinth("shards", "get", "plinth:/datasets/train", "images/00077", "--member", "input");
        assertThat(fetched.exitCode()).as(fetched.err()).isZero();
        assertThat(fetched.stdout()).isEqualTo(files.get("images/00077.input"));
        assertThat(plinth("shards", "get", "plinth:/datasets/train", "images/99999").exitCode()).isEqualTo(Main.EXIT_FAILED);

        try (FileSystem plinthFs = plinthFileSystem()) {
            Path dataset = plinthFs.getPath("/datasets/train");
            // random access by key, one ranged read of the shard in the cluster
            ShardIndex.Sample sample = ShardIndex.find(dataset, "odd names/ünïcode sample");
            assertThat(ShardIndex.read(dataset, sample).get("odd names/ünïcode sample.json")).isEqualTo("{}".getBytes(StandardCharsets.UTF_8));
            // the streaming reader over plinth:// paths: two ranks see every sample once
            List<String> keys = new ArrayList<>();
            for (int rank = 0; rank < 2; rank++) {
                try (ShardStream stream = ShardStream.of(ShardStream.expand(dataset, "shard-{000000..000007}.tar")).seed(3).rank(rank, 2)
                        .shuffleBuffer(10).open()) {
                    stream.forEachRemaining(s -> {
                        keys.add(s.key());
                        if (s.members().containsKey("input")) {
                            assertThat(s.members().get("input")).isEqualTo(files.get(s.key() + ".input"));
                        }
                    });
                }
            }
            assertThat(keys).hasSize(121).doesNotHaveDuplicates();

            // pack back out of the cluster (SRC in Plinth) to local disk: the same shards
            Files.createDirectories(plinthFs.getPath("/datasets/raw"));
            for (Map.Entry<String, byte[]> file : files.entrySet()) {
                Path path = plinthFs.getPath("/datasets/raw").resolve(file.getKey());
                Files.createDirectories(path.getParent());
                Files.write(path, file.getValue());
            }
        }
        Path local = directory.resolve("from-cluster");
        CliRun.Result back = plinth("pack", "plinth:/datasets/raw", local.toString(), "--samples-per-shard", "16");
        assertThat(back.exitCode()).as(back.err()).isZero();
        Path direct = directory.resolve("from-disk");
        assertThat(plinth("pack", tree.toString(), direct.toString(), "--samples-per-shard", "16").exitCode()).isZero();
        assertThat(Files.readString(local.resolve("index.jsonl"))).isEqualTo(Files.readString(direct.resolve("index.jsonl")));

        // a damaged shard in the cluster: verify says which member
        try (FileSystem plinthFs = plinthFileSystem()) {
            ShardIndex.Sample sample = ShardIndex.find(plinthFs.getPath("/datasets/train"), "images/00005");
            try (var channel = Files.newByteChannel(plinthFs.getPath("/datasets/train").resolve(sample.shard()),
                    java.nio.file.StandardOpenOption.WRITE)) {
                channel.position(sample.members().getLast().offset());
                channel.write(java.nio.ByteBuffer.wrap(new byte[] {42, 42, 42}));
            }
        }
        CliRun.Result damaged = plinth("shards", "verify", "plinth:/datasets/train");
        assertThat(damaged.exitCode()).isEqualTo(Main.EXIT_FAILED);
        assertThat(damaged.out()).contains("DIFFERS").contains("images/00005.input");
    }

    @Test
    void aMultiGibMemberPacksVerifiesAndKeepsLaterOffsetsRight() throws Exception {
        Path source = directory.resolve("big-tree");
        Files.createDirectories(source);
        try (var file = new java.io.RandomAccessFile(source.resolve("a-huge.bin").toFile(), "rw")) {
            file.setLength((3L << 30) + 12345); // sparse: zeros that cost no disk here, but 3 GiB in the shard
            file.seek(3L << 30);
            file.write("the end".getBytes(StandardCharsets.UTF_8));
        }
        Files.writeString(source.resolve("b-after.txt"), "after the big one");
        Path dest = Files.createDirectories(directory.resolve("big-shards"));
        dev.plinth.datasets.Packer.Result result = new dev.plinth.datasets.Packer(source, dest,
                new dev.plinth.datasets.Packer.Options(10, 0, "shard-%06d.tar", false, 0, 1, null, false)).run(ignored -> {});
        assertThat(result.shards()).isEqualTo(1);
        ShardIndex.Sample after = ShardIndex.find(dest, "b-after");
        assertThat(after.start()).isGreaterThan(3L << 30);
        assertThat(ShardIndex.read(dest, after).get("b-after.txt")).isEqualTo("after the big one".getBytes(StandardCharsets.UTF_8));
        assertThat(dev.plinth.datasets.ShardCheck.verify(dest, ignored -> {}).problems()).isEmpty();
        String listing = TestProcesses.run(List.of("/usr/bin/tar", "-tvf", dest.resolve("shard-000000.tar").toString()), Duration.ofMinutes(2));
        assertThat(listing).contains(Long.toString((3L << 30) + 12345)).contains("a-huge.bin").contains("b-after.txt");
    }

    @Test
    void aPyTorchLoaderStreamsShardsThroughTheMountOncePerEpochInAFixedOrder() throws Exception {
        Prerequisites.requireFuse();
        Prerequisites.require(Prerequisites.PYTHON, Prerequisites.TORCH);
        // the images only: every sample has the input and the label the loop trains on
        assertThat(plinth("pack", tree.resolve("images").toString(), "plinth:/datasets/torch", "--samples-per-shard", "10").exitCode()).isZero();
        Path mountpoint = Files.createDirectories(directory.resolve("mnt"));
        Config config = MiniCluster.testConfig();
        try (PlinthClient client = cluster.client(Credentials.ROOT, config);
             FuseMount mount = FuseMount.mount(client, mountpoint, MountOptions.parse("", config, true))) {
            String train = Path.of(System.getProperty("user.dir")).getParent().resolve("examples/webdataset/train.py").toString();
            List<List<String>> runs = new ArrayList<>();
            for (int run = 0; run < 2; run++) {
                Path record = directory.resolve("seen-" + run + ".json");
                String output = TestProcesses.run(List.of("/usr/bin/python3", train, "--shards", mountpoint + "/datasets/torch/shard-*.tar",
                        "--workers", "3", "--epochs", "2", "--seed", "11", "--record", record.toString()), Duration.ofMinutes(3));
                assertThat(output).contains("epoch 1: 120 samples");
                Object seen = dev.plinth.common.Json.parse(Files.readString(record));
                List<String> epochs = new ArrayList<>();
                for (Object epoch : (List<?>) seen) {
                    List<?> keys = (List<?>) epoch;
                    assertThat(keys).as("each sample exactly once an epoch").hasSize(120);
                    assertThat(new HashSet<>(keys)).hasSize(120);
                    epochs.add(keys.toString());
                }
                assertThat(epochs.get(0)).as("epochs differ in order").isNotEqualTo(epochs.get(1));
                runs.add(epochs);
            }
            assertThat(runs.get(1)).as("the same seed, the same order").isEqualTo(runs.get(0));
        }
    }
}
