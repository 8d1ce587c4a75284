package dev.plinth.cli;

import dev.plinth.common.ErrorCode;
import dev.plinth.common.Json;
import dev.plinth.common.PlinthException;
import dev.plinth.common.Sizes;
import dev.plinth.datasets.Packer;
import dev.plinth.datasets.SampleNames;
import dev.plinth.datasets.ShardCheck;
import dev.plinth.datasets.ShardIndex;
import java.io.IOException;
import java.net.URI;
import java.nio.file.FileSystem;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicLong;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** `plinth pack` and `plinth shards`: WebDataset shards in the cluster or on local disk (docs/datasets.md). */
final class ShardsCommand {
    private ShardsCommand() {}

    /** Paths as the dataset commands take them: {@code plinth:/path} in the cluster, anything else local. */
    static final class Places implements AutoCloseable {
        private final ClientMixin client;
        private FileSystem cluster;

        Places(ClientMixin client) {
            this.client = client;
        }

        Path resolve(String argument) throws IOException {
            if (!argument.startsWith("plinth:")) {
                return Path.of(argument).toAbsolutePath();
            }
            String path = argument.substring("plinth:".length());
            if (!path.startsWith("/")) {
                throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "a cluster path is plinth:/PATH (absolute): " + argument);
            }
            if (cluster == null) {
                Map<String, Object> env = new HashMap<>();
                if (client.secretFile != null) {
                    env.put("secretFile", client.secretFile);
                }
                env.put("config", client.config());
                cluster = FileSystems.newFileSystem(URI.create("plinth://" + client.serverAddress() + "/"), env);
            }
            return cluster.getPath(path);
        }

        @Override
        public void close() throws IOException {
            if (cluster != null) {
                cluster.close();
            }
        }
    }

    @Command(name = "pack", mixinStandardHelpOptions = true,
            description = {"Pack a tree of sample files into WebDataset tar shards with an index (DEST/index.jsonl). Files whose names",
                    "share a key (path up to the first dot of the file name: 0001.jpg, 0001.cls) are one sample. A path written",
                    "plinth:/PATH is in the cluster, any other is local. Resumes an interrupted pack into the same DEST."})
    static final class Pack implements Callable<Integer> {
        @Mixin
        ClientMixin client;
        @Parameters(index = "0", paramLabel = "SRC")
        String source;
        @Parameters(index = "1", paramLabel = "DEST")
        String dest;
        @Option(names = "--samples-per-shard", paramLabel = "N", description = "Samples per shard (default 1000).")
        Integer samplesPerShard;
        @Option(names = "--shard-size", paramLabel = "SIZE", description = "Shards up to SIZE bytes instead (e.g. 256M; at least one sample each).")
        String shardSize;
        @Option(names = "--pattern", paramLabel = "PATTERN", description = "Shard names (default shard-%%06d.tar).")
        String pattern = "shard-%06d.tar";
        @Option(names = "--shuffle", description = "Shuffle the samples across shards (with --seed).")
        boolean shuffle;
        @Option(names = "--seed", paramLabel = "S", description = "Seed of --shuffle (default 0).")
        long seed;
        @Option(names = "--workers", paramLabel = "W", description = "Shards written at once (default 4).")
        int workers = 4;
        @Option(names = "--files-from", paramLabel = "LIST", description = "Pack only these files: a local file of paths relative to SRC, one per line.")
        Path filesFrom;
        @Option(names = "--lowercase-extensions", description = "Pack upper-case extensions lower-cased (0001.JPG as 0001.jpg), as the webdataset library would read them.")
        boolean lowercase;

        @Override
        public Integer call() throws Exception {
            if (samplesPerShard != null && shardSize != null) {
                throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "--samples-per-shard or --shard-size, not both");
            }
            Packer.Options options = new Packer.Options(samplesPerShard == null ? 1000 : samplesPerShard,
                    shardSize == null ? 0 : Sizes.parseBytes(shardSize), pattern, shuffle, seed, workers,
                    filesFrom == null ? null : Files.readAllLines(filesFrom), lowercase);
            try (Places places = new Places(client)) {
                Path to = places.resolve(dest);
                Files.createDirectories(to);
                Packer packer = new Packer(places.resolve(source), to, options);
                Progress progress = new Progress("pack " + dest, -1);
                AtomicLong done = new AtomicLong();
                Packer.Result result;
                try (progress) {
                    result = packer.run(bytes -> {
                        synchronized (progress) {
                            progress.advance(bytes);
                        }
                        done.addAndGet(bytes);
                    });
                }
                System.err.printf(Locale.ROOT, "plinth pack: %d sample(s) in %d shard(s), %s (%d shard(s) written, %d kept from an earlier run); index in %s%n",
                        result.samples(), result.shards(), Sizes.format(result.bytes()), result.written(), result.resumed(),
                        to.resolve(ShardIndex.FILE));
            }
            return 0;
        }
    }

    @Command(name = "shards", mixinStandardHelpOptions = true, description = "WebDataset shards made by `plinth pack`: check, summarize, fetch samples by key.",
            subcommands = {Verify.class, Ls.class, Get.class, Read.class})
    static final class Shards {
    }

    @Command(name = "verify", mixinStandardHelpOptions = true,
            description = "Read every shard and check each member (name, offset, size, CRC32C) against the index; list what differs.")
    static final class Verify implements Callable<Integer> {
        @Mixin
        ClientMixin client;
        @Parameters(paramLabel = "DEST")
        String dest;

        @Override
        public Integer call() throws Exception {
            try (Places places = new Places(client); Progress progress = new Progress("verify " + dest, -1)) {
                ShardCheck.Verified verified = ShardCheck.verify(places.resolve(dest), progress::advance);
                verified.problems().forEach(problem -> System.out.println("DIFFERS: " + problem));
                System.out.printf(Locale.ROOT, "%d shard(s), %d member(s), %s read: %s%n", verified.shards(), verified.members(),
                        Sizes.format(verified.bytes()), verified.problems().isEmpty() ? "all match the index" : verified.problems().size() + " difference(s)");
                return verified.problems().isEmpty() ? 0 : Main.EXIT_FAILED;
            }
        }
    }

    @Command(name = "ls", mixinStandardHelpOptions = true, description = "Summarize a pack: shards, samples, members, bytes, extensions.")
    static final class Ls implements Callable<Integer> {
        @Mixin
        ClientMixin client;
        @Parameters(paramLabel = "DEST")
        String dest;
        @Option(names = "--json", description = "Print {shards, samples, members, bytes, samples_per_shard_min, samples_per_shard_max, extensions{}}.")
        boolean json;

        @Override
        public Integer call() throws Exception {
            try (Places places = new Places(client)) {
                ShardCheck.Summary summary = ShardCheck.summarize(places.resolve(dest));
                if (json) {
                    System.out.println(Json.write(summary.toMap()));
                } else {
                    System.out.printf(Locale.ROOT, "%d shard(s), %d sample(s) (%d-%d a shard), %d member(s), %s%n", summary.shards(),
                            summary.samples(), summary.smallestShardSamples(), summary.largestShardSamples(), summary.members(),
                            Sizes.format(summary.bytes()));
                    summary.extensions().forEach((extension, count) -> System.out.printf(Locale.ROOT, "  .%-12s %d%n", extension, count));
                }
            }
            return 0;
        }
    }

    @Command(name = "read", mixinStandardHelpOptions = true,
            description = {"Stream every sample of a pack as a training job would (the Java ShardStream: shard shuffle, splits, read-ahead)",
                    "and report samples/s and MiB/s: how fast this node reads the dataset."})
    static final class Read implements Callable<Integer> {
        @Mixin
        ClientMixin client;
        @Parameters(paramLabel = "DEST")
        String dest;
        @Option(names = "--pattern", paramLabel = "PATTERN", description = "Shards to read: braces or a glob (default *.tar).")
        String pattern = "*.tar";
        @Option(names = "--workers", paramLabel = "W", description = "Streams at once, each a split of the shards (default 4).")
        int workers = 4;
        @Option(names = "--seed", paramLabel = "S", description = "Shard shuffle seed (default 0).")
        long seed;
        @Option(names = "--shuffle-buffer", paramLabel = "N", description = "Samples in each stream's shuffle buffer (default 0).")
        int shuffleBuffer;

        @Override
        public Integer call() throws Exception {
            try (Places places = new Places(client)) {
                List<Path> shards = dev.plinth.datasets.ShardStream.expand(places.resolve(dest), pattern);
                AtomicLong samples = new AtomicLong();
                AtomicLong bytes = new AtomicLong();
                long started = System.nanoTime();
                List<Thread> threads = new java.util.ArrayList<>();
                List<Throwable> failures = java.util.Collections.synchronizedList(new java.util.ArrayList<>());
                for (int worker = 0; worker < workers; worker++) {
                    int split = worker;
                    threads.add(Thread.ofPlatform().name("read-" + worker).start(() -> {
                        try (dev.plinth.datasets.ShardStream stream = dev.plinth.datasets.ShardStream.of(shards).seed(seed)
                                .worker(split, workers).shuffleBuffer(shuffleBuffer).open()) {
                            stream.forEachRemaining(sample -> {
                                samples.incrementAndGet();
                                sample.members().values().forEach(member -> bytes.addAndGet(member.length));
                            });
                        } catch (Throwable e) {
                            failures.add(e);
                        }
                    }));
                }
                for (Thread thread : threads) {
                    thread.join();
                }
                if (!failures.isEmpty()) {
                    throw failures.getFirst() instanceof Exception e ? e : new IllegalStateException(failures.getFirst());
                }
                double seconds = (System.nanoTime() - started) / 1e9;
                System.out.printf(Locale.ROOT, "%d sample(s), %s from %d shard(s) in %.2f s: %.0f samples/s, %.1f MiB/s%n", samples.get(),
                        Sizes.format(bytes.get()), shards.size(), seconds, samples.get() / seconds, bytes.get() / seconds / (1 << 20));
            }
            return 0;
        }
    }

    @Command(name = "get", mixinStandardHelpOptions = true,
            description = "Fetch one sample by key through the index, with one ranged read of its shard; members are checked against their CRC32C.")
    static final class Get implements Callable<Integer> {
        @Mixin
        ClientMixin client;
        @Parameters(index = "0", paramLabel = "DEST")
        String dest;
        @Parameters(index = "1", paramLabel = "KEY")
        String key;
        @Option(names = "--member", paramLabel = "EXT", description = "Write only this member's bytes (e.g. jpg) to stdout.")
        String member;
        @Option(names = {"-o", "--output"}, paramLabel = "DIR", description = "Write the members as files here (default: the current directory).")
        Path output = Path.of(".");

        @Override
        public Integer call() throws Exception {
            try (Places places = new Places(client)) {
                Path directory = places.resolve(dest);
                ShardIndex.Sample sample = ShardIndex.find(directory, key);
                if (sample == null) {
                    throw new PlinthException(ErrorCode.NOT_FOUND, "no sample with key " + key + " in " + dest);
                }
                Map<String, byte[]> members = ShardIndex.read(directory, sample);
                if (member != null) {
                    byte[] bytes = null;
                    for (Map.Entry<String, byte[]> entry : members.entrySet()) {
                        if (member.equals(SampleNames.split(entry.getKey()).extension())) {
                            bytes = entry.getValue();
                        }
                    }
                    if (bytes == null) {
                        throw new PlinthException(ErrorCode.NOT_FOUND, "sample " + key + " has no member ." + member + " (it has "
                                + List.copyOf(members.keySet()) + ")");
                    }
                    System.out.write(bytes);
                    System.out.flush();
                    return 0;
                }
                for (Map.Entry<String, byte[]> entry : members.entrySet()) {
                    Path target = output.resolve(entry.getKey()).normalize();
                    if (!target.startsWith(output.normalize())) {
                        throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "member name leaves the output directory: " + entry.getKey());
                    }
                    Files.createDirectories(target.toAbsolutePath().getParent());
                    Files.write(target, entry.getValue());
                    System.err.println(target);
                }
            }
            return 0;
        }
    }
}
