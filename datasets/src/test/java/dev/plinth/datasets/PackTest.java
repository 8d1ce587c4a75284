package dev.plinth.datasets;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.plinth.common.PlinthException;
import dev.plinth.testing.Prerequisites;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Packing on local disk: the key rule, tar that other readers read, the index, resume, refusals. */
class PackTest {
    @TempDir
    Path directory;
    private final Random random = new Random(36);

    /** A tree of samples with odd names: spaces, UTF-8, a path over 100 bytes, an empty member, a 1 MiB member. */
    private Map<String, byte[]> tree(Path root) throws IOException {
        Map<String, byte[]> files = new TreeMap<>();
        for (int i = 0; i < 40; i++) {
            String key = String.format("train/%04d", i);
            files.put(key + ".jpg", bytes(random.nextInt(5000)));
            files.put(key + ".cls", ("class " + i % 7).getBytes(StandardCharsets.UTF_8));
        }
        files.put("odd names/with space.txt", bytes(10));
        files.put("ünïcödé/ñame.json", "{}".getBytes(StandardCharsets.UTF_8));
        files.put("long/" + "d".repeat(120) + "/" + "n".repeat(90) + ".seg.png", bytes(777));
        files.put("empty/nothing.bin", new byte[0]);
        files.put("big/one.npy", bytes(1 << 20));
        for (Map.Entry<String, byte[]> file : files.entrySet()) {
            Path path = root.resolve(file.getKey());
            Files.createDirectories(path.getParent());
            Files.write(path, file.getValue());
        }
        return files;
    }

    private byte[] bytes(int length) {
        byte[] bytes = new byte[length];
        random.nextBytes(bytes);
        return bytes;
    }

    private static Packer.Options options(int samplesPerShard) {
        return new Packer.Options(samplesPerShard, 0, "shard-%06d.tar", false, 0, 3, null, false);
    }

    /** Every member of every shard in DEST, read back with our reader: name to bytes. */
    private static Map<String, byte[]> unpack(Path dest) throws IOException {
        Map<String, byte[]> members = new TreeMap<>();
        for (String shard : ShardCheck.tarFiles(dest)) {
            try (var in = Files.newInputStream(dest.resolve(shard))) {
                Tar.Reader reader = new Tar.Reader(in, shard);
                Tar.Member member;
                while ((member = reader.next()) != null) {
                    members.put(member.name(), reader.readData());
                }
            }
        }
        return members;
    }

    @Test
    void packsVerifiesAndFindsSamples() throws Exception {
        Path source = directory.resolve("src");
        Map<String, byte[]> files = tree(source);
        Path dest = directory.resolve("out");
        Files.createDirectories(dest);
        Packer.Result result = new Packer(source, dest, options(7)).run(ignored -> {});
        assertThat(result.samples()).isEqualTo(45);
        assertThat(result.shards()).isEqualTo(7);
        assertThat(unpack(dest)).containsOnlyKeys(files.keySet());
        unpack(dest).forEach((name, data) -> assertThat(data).as(name).isEqualTo(files.get(name)));
        assertThat(Files.exists(dest.resolve(Packer.WORK))).isFalse();

        ShardCheck.Verified verified = ShardCheck.verify(dest, ignored -> {});
        assertThat(verified.problems()).isEmpty();
        assertThat(verified.members()).isEqualTo(files.size());

        // a sample's members sit together: one ranged read fetches them
        ShardIndex.Sample sample = ShardIndex.find(dest, "train/0013");
        assertThat(sample.members()).extracting(ShardIndex.Member::name).containsExactly("train/0013.cls", "train/0013.jpg");
        assertThat(ShardIndex.read(dest, sample).get("train/0013.jpg")).isEqualTo(files.get("train/0013.jpg"));
        assertThat(ShardIndex.find(dest, "long/" + "d".repeat(120) + "/" + "n".repeat(90))).isNotNull();

        // a flipped byte in a shard is found
        Path shard = dest.resolve(sample.shard());
        byte[] damaged = Files.readAllBytes(shard);
        damaged[(int) sample.members().get(1).offset() + 3] ^= 1;
        Files.write(shard, damaged);
        assertThat(ShardCheck.verify(dest, ignored -> {}).problems()).singleElement().asString().contains("train/0013.jpg");
        assertThatThrownBy(() -> ShardIndex.read(dest, sample)).isInstanceOf(PlinthException.class).hasMessageContaining("CRC32C");
    }

    @Test
    void gnuTarAndPythonTarfileReadTheShardsUnchanged() throws Exception {
        Prerequisites.require(Prerequisites.PYTHON, new Prerequisites.Need("/usr/bin/tar", "Debian package tar"));
        Path source = directory.resolve("src");
        tree(source);
        Path dest = directory.resolve("out");
        Files.createDirectories(dest);
        new Packer(source, dest, options(10)).run(ignored -> {});
        Path extracted = Files.createDirectories(directory.resolve("gnu"));
        for (String shard : ShardCheck.tarFiles(dest)) {
            run(List.of("/usr/bin/tar", "-xf", dest.resolve(shard).toString(), "-C", extracted.toString()));
        }
        run(List.of("/usr/bin/diff", "-r", source.toString(), extracted.toString()));
        String script = """
                import sys, tarfile, glob, os, json, zlib
                dest, src = sys.argv[1], sys.argv[2]
                seen = 0
                for shard in sorted(glob.glob(os.path.join(dest, "*.tar"))):
                    with tarfile.open(shard) as t:
                        for m in t:
                            data = t.extractfile(m).read()
                            assert data == open(os.path.join(src, m.name), "rb").read(), m.name
                            seen += 1
                print("tarfile read", seen)
                """;
        assertThat(run(List.of("/usr/bin/python3", "-c", script, dest.toString(), source.toString()))).contains("tarfile read 85");
    }

    private static String run(List<String> command) throws IOException, InterruptedException {
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(process.waitFor(60, TimeUnit.SECONDS)).isTrue();
        assertThat(process.exitValue()).as("%s: %s", command, output).isZero();
        return output;
    }

    @Test
    void anInterruptedPackResumesToTheSameShards() throws Exception {
        Path source = directory.resolve("src");
        tree(source);
        Path clean = Files.createDirectories(directory.resolve("clean"));
        Packer.Options options = new Packer.Options(5, 0, "part-%03d.tar", true, 42, 2, null, false);
        new Packer(source, clean, options).run(ignored -> {});

        Path interrupted = Files.createDirectories(directory.resolve("interrupted"));
        AtomicLong packed = new AtomicLong();
        assertThatThrownBy(() -> new Packer(source, interrupted, options).run(bytes -> {
            if (packed.addAndGet(bytes) > 600_000) {
                throw new IllegalStateException("interrupted");
            }
        })).hasMessageContaining("interrupted");
        assertThat(Files.exists(interrupted.resolve(ShardIndex.FILE))).isFalse();
        try (Stream<Path> left = Files.list(interrupted)) {
            assertThat(left.map(p -> p.getFileName().toString())).allMatch(name -> name.endsWith(".tar") || name.equals(Packer.WORK));
        }
        // other options are refused while the first pack is unfinished
        assertThatThrownBy(() -> new Packer(source, interrupted, new Packer.Options(6, 0, "part-%03d.tar", true, 42, 2, null, false))
                .run(ignored -> {})).hasMessageContaining("other options");

        Packer.Result resumed = new Packer(source, interrupted, options).run(ignored -> {});
        assertThat(resumed.resumed()).isPositive();
        for (String shard : ShardCheck.tarFiles(clean)) {
            assertThat(Files.readAllBytes(interrupted.resolve(shard))).as(shard).isEqualTo(Files.readAllBytes(clean.resolve(shard)));
        }
        assertThat(Files.readString(interrupted.resolve(ShardIndex.FILE))).isEqualTo(Files.readString(clean.resolve(ShardIndex.FILE)));
        assertThatThrownBy(() -> new Packer(source, interrupted, options).run(ignored -> {})).hasMessageContaining("already holds a finished pack");
    }

    @Test
    void namesTheLibraryWouldDropAreRefusedWithAList() throws Exception {
        Path source = directory.resolve("src");
        Files.createDirectories(source);
        for (String name : List.of("ok.jpg", "NODOT", ".hidden", "a.JPG", "a.jpg", "trailing.")) {
            Files.write(source.resolve(name), new byte[] {1});
        }
        Path dest = Files.createDirectories(directory.resolve("out"));
        assertThatThrownBy(() -> new Packer(source, dest, options(10)).run(ignored -> {}))
                .isInstanceOf(PlinthException.class)
                .hasMessageContaining("4 file(s) cannot be packed")
                .hasMessageContaining("NODOT: no dot").hasMessageContaining(".hidden: file name starts with a dot")
                .hasMessageContaining("a.JPG: upper-case extension").hasMessageContaining("trailing.: empty extension");
        try (Stream<Path> left = Files.list(dest)) {
            assertThat(left).isEmpty();
        }
        Files.delete(source.resolve("NODOT"));
        Files.delete(source.resolve(".hidden"));
        Files.delete(source.resolve("trailing."));
        // lower-casing makes a.JPG clash with a.jpg: refused as a conflict
        assertThatThrownBy(() -> new Packer(source, dest, new Packer.Options(10, 0, "shard-%06d.tar", false, 0, 1, null, true)).run(ignored -> {}))
                .hasMessageContaining("already has member .jpg");
    }

    @Test
    void keysFollowWebDataset() {
        assertThat(SampleNames.split("train/0001.seg.png")).isEqualTo(new SampleNames.Split("train/0001", "seg.png", null));
        assertThat(SampleNames.split("a.b/c.d").key()).isEqualTo("a.b/c");
        assertThat(SampleNames.split("dir/.x.jpg").problem()).contains("starts with a dot");
        assertThat(SampleNames.split("dir/x").problem()).contains("no dot");
    }

    @Test
    void sizesOverUstarsLimitGoInAPaxHeader() throws Exception {
        long size = 9L << 30;
        byte[] header = Tar.header("huge.bin", size, 0644, 0);
        assertThat(header.length).isEqualTo(3 * Tar.BLOCK);
        Tar.Reader reader = new Tar.Reader(new ByteArrayInputStream(header), "header");
        Tar.Member member = reader.next();
        assertThat(member.name()).isEqualTo("huge.bin");
        assertThat(member.size()).isEqualTo(size);
        assertThat(member.dataOffset()).isEqualTo(3 * Tar.BLOCK);
        assertThat(new ArrayList<>(List.of(Tar.header("x".repeat(100), 1, 0644, 0).length))).containsExactly(Tar.BLOCK);
    }
}
