package dev.plinth.cli;

import dev.plinth.client.PlinthClient;
import dev.plinth.client.PlinthFile;
import dev.plinth.common.Layout;
import dev.plinth.common.Sizes;
import dev.plinth.wire.messages.MetaMessages.Attributes;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * The whole-system benchmark, first form. Every figure is printed beside the same work on the
 * local disk (and the loopback network) measured in the same run, as ratios, since absolute
 * numbers on shared machines are noise. Page caches are dropped before cold reads when running
 * as root; otherwise the output says the reads were warm. The Plinth figures are a running
 * client's: this JVM writes 256 MiB 8 times before its measured write and reads it 32 times before
 * its measured reads, untimed, so its JIT has compiled the data path, as it has in a training job
 * that has been reading for a minute.
 */
@Command(name = "bench", mixinStandardHelpOptions = true,
        description = {"Measure the cluster against the local disk and loopback TCP, as ratios.",
                "Sequential write (with fsync) and read through the native client, and small-file create/stat/unlink,",
                "each beside the same work on the local disk (and loopback TCP) measured in the same run,",
                "and with the CPU time this whole machine spent per GiB moved and the share it stood idle (Linux)."})
final class BenchCommand implements Callable<Integer> {
    static final int BLOCK_BYTES = 1 << 20;
    /** Random reads: their size, how long each depth runs, and the depths. */
    static final int RANDOM_READ_BYTES = 4096;
    static final long RANDOM_READ_MILLIS = 5000;
    static final int[] RANDOM_DEPTHS = {1, 32};
    /** Untimed reads of the 256 MiB warm-up file before the measured read: 8 GiB, see where it is used. */
    static final int WARM_READS = 32;
    /** Untimed writes of the warm-up file before the measured write: 2 GiB. */
    static final int WARM_WRITES = 8;

    @Mixin
    ClientMixin client;

    @Option(names = "--size", paramLabel = "SIZE", defaultValue = "1G", description = "Bytes to write and read sequentially (default ${DEFAULT-VALUE}).")
    String size;

    @Option(names = "--files", paramLabel = "N", defaultValue = "2000", description = "Small files to create, stat and unlink (default ${DEFAULT-VALUE}).")
    int files;

    @Option(names = "--stripe-count", paramLabel = "N", defaultValue = "-1", description = "Stripe count of the test file; -1: every target (default).")
    int stripeCount;

    @Option(names = {"-r", "--replicas"}, paramLabel = "R", description = "Replicas of the test file (default: the root directory's).")
    Integer replicas;

    @Option(names = "--local-dir", paramLabel = "DIR", description = "Local directory to compare with; use the disk the targets are on (default: the system temp dir).")
    Path localDirectory;

    @Option(names = "--warm", description = "Do not drop the page cache before reads (measures the software path, not the disk).")
    boolean warm;

    @Option(names = "--short-circuit", description = "Also measure sequential read with short-circuit local reads (its own row).")
    boolean shortCircuit;

    @Option(names = "--rounds", paramLabel = "N", defaultValue = "3",
            description = "Rounds of the sequential read, each beside its own local-disk read and loopback measurement; "
                    + "the table shows the median round (default ${DEFAULT-VALUE}).")
    int rounds;

    @Option(names = "--ec", paramLabel = "K+M",
            description = {"Measure erasure coding instead: the coders' encode rate per core (ISA-L and Java), then sequential write + fsync "
                    + "and cold read of an erasure-coded K+M file beside a one-replica file over as many targets, and a read of the "
                    + "erasure-coded file with two data cells of every stripe unreadable (decoded)."})
    String erasureCoding;

    @Option(names = "--compress",
            description = {"Measure compressed layouts instead: for text-like and image-like bytes, the ratio of logical to stored bytes, "
                    + "sequential write + fsync and cold read of lz4 and zstd:3 files beside an uncompressed one, and the client's CPU per GiB."})
    boolean compression;

    @Option(names = "--path", paramLabel = "PATH", defaultValue = "/.plinth-bench", description = "Scratch directory in the cluster (default ${DEFAULT-VALUE}).")
    String path;

    @Option(names = "--metadata-only", description = "Only the small-file phase (creates, stats, unlinks in PATH/md, beside the local disk), "
            + "from --threads threads at once: what one MDT, or the MDT holding PATH, takes (bench/mdt-scaling.sh).")
    boolean metadataOnly;

    @Option(names = "--threads", paramLabel = "N", defaultValue = "1", description = "Threads of the --metadata-only phase (default ${DEFAULT-VALUE}).")
    int threads;


    record Result(String name, double local, double plinth, String unit, String baseline) {}

    /** A measured phase: its rate, and what this machine's CPUs did meanwhile ({@link MachineCpu#per}, maybe ""). */
    record Measured(double mibPerSecond, String cpu) {}

    /** A phase that moves data and answers its rate in MiB/s. */
    @FunctionalInterface
    interface Phase {
        double run() throws Exception;
    }

    /** Runs a phase that moves {@code bytes}, noting this machine's CPU over it. */
    static Measured measure(long bytes, Phase phase) throws Exception {
        MachineCpu before = MachineCpu.now();
        long start = System.nanoTime();
        double mibPerSecond = phase.run();
        return new Measured(mibPerSecond, MachineCpu.per(before, MachineCpu.now(), bytes, (System.nanoTime() - start) / 1e9));
    }

    /** One round of the sequential read: its bounds measured right before it, in MiB/s. */
    record ReadRound(double localRead, double loopback, double plinthRead) {
        double bound() {
            return Math.min(localRead, loopback);
        }

        double ratio() {
            return plinthRead / bound();
        }
    }

    @picocli.CommandLine.Spec
    picocli.CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() throws Exception {
        long bytes = Sizes.parseBytes(size);
        if (bytes < BLOCK_BYTES || files < 1 || files > 1_000_000 || rounds < 1 || rounds > 100) {
            throw new dev.plinth.common.PlinthException(dev.plinth.common.ErrorCode.INVALID_ARGUMENT,
                    "--size must be at least 1M, --files 1..1000000 and --rounds 1..100");
        }
        if (erasureCoding != null) {
            int[] shape = LayoutOptions.parseErasureCoding(erasureCoding, spec.commandLine());
            if (shape == null) {
                throw new picocli.CommandLine.ParameterException(spec.commandLine(), "--ec takes K+M");
            }
            try (PlinthClient plinth = client.connect()) {
                ErasureCodingBench.run(plinth, path, shape[0], shape[1], bytes, rounds, warm);
            }
            return 0;
        }
        if (metadataOnly) {
            if (threads < 1 || threads > 256) {
                throw new picocli.CommandLine.ParameterException(spec.commandLine(), "--threads must be 1..256");
            }
            Path local = Files.createTempDirectory(localDirectory == null ? Path.of(System.getProperty("java.io.tmpdir")) : localDirectory, "plinth-bench");
            try (PlinthClient plinth = client.connect()) {
                plinth.mkdirs(path, 0755);
                progress("plinth bench --metadata-only: %d small files from %d thread(s) in %s", files, threads, FsCommand.join(path, "md"));
                double[] localMetadata = localMetadata(local, files);
                double[] plinthMetadata = plinthMetadata(plinth, FsCommand.join(path, "md"), files, threads);
                System.out.printf("%-30s %12s %12s %7s  %s%n", "benchmark", "baseline", "plinth", "ratio", "baseline is");
                String[] names = {"create", "stat", "unlink"};
                for (int i = 0; i < names.length; i++) {
                    System.out.printf(Locale.ROOT, "%-30s %12.1f %12.1f %7.2f  %s (%s)%n", names[i], localMetadata[i], plinthMetadata[i],
                            plinthMetadata[i] / localMetadata[i], "local disk, one thread", "ops/s");
                }
            } finally {
                dev.plinth.common.FileTrees.delete(local);
            }
            return 0;
        }
        if (compression) {
            try (PlinthClient plinth = client.connect()) {
                CompressionBench.run(plinth, path, bytes, rounds, warm);
            }
            return 0;
        }
        Path local = Files.createTempDirectory(localDirectory == null ? Path.of(System.getProperty("java.io.tmpdir")) : localDirectory, "plinth-bench");
        byte[] block = new byte[BLOCK_BYTES];
        new Random(42).nextBytes(block);
        try (PlinthClient plinth = client.connect()) {
            plinth.mkdirs(path, 0755);
            int targets = plinth.clusterMap().targets().size();
            int count = stripeCount == -1 ? targets : stripeCount;
            Layout root = plinth.stat("/").layout();
            int copies = replicas == null ? root.replicas() : replicas;
            Layout layout = new Layout(count, root.stripeSizeBytes(), root.chunkSizeBytes(), root.pool(), copies, List.of(), root.mdtBytes()).validate();
            progress("plinth bench: %s sequential in 1 MiB requests, %d small files, stripe count %d over %d targets, %d replica(s)",
                    Sizes.format(bytes), files, Math.min(count, targets), targets, copies);
            boolean cachesDropped = !warm && dropCaches();
            if (!cachesDropped && !warm) {
                progress("note: cannot drop the page cache (not root?): read figures are warm-cache figures");
            }

            Path localFile = local.resolve("seq.dat");
            Measured localWriteMeasured = measure(bytes, () -> localSequentialWrite(localFile, bytes, block));
            double localWrite = localWriteMeasured.mibPerSecond();
            progress("local  sequential write+fsync  %9.1f MiB/s%s", localWrite, localWriteMeasured.cpu());

            String remoteFile = FsCommand.join(path, "seq.dat");
            String warmFile = FsCommand.join(path, "warm.dat");
            for (String stale : List.of(remoteFile, warmFile)) {
                if (plinth.exists(stale)) {
                    plinth.delete(stale);
                }
            }
            // warm-up, untimed: this client JVM compiles its data path over the first few hundred MiB (its
            // first second ran at half speed), and the figures are meant to be what a running client gets
            long warmBytes = Math.min(bytes, 256L << 20);
            // the servers' write path compiles too: against a fresh server the first measured write ran at
            // 0.58-0.61 of the disk and the next ones at 0.88-1.33, so the warm-up file is written several times
            for (int i = 0; i < WARM_WRITES; i++) {
                if (i > 0) {
                    plinth.delete(warmFile);
                }
                plinthSequentialWrite(plinth, warmFile, layout, warmBytes, block);
            }
            Measured plinthWriteMeasured = measure(bytes, () -> plinthSequentialWrite(plinth, remoteFile, layout, bytes, block));
            double plinthWrite = plinthWriteMeasured.mibPerSecond();
            progress("plinth sequential write+fsync  %9.1f MiB/s%s", plinthWrite, plinthWriteMeasured.cpu());
            // reads take longer: code that runs once per 1 MiB piece is compiled by C2 only after some
            // 10,000 calls, so a fresh client reads 5-10 GiB before it reaches its steady rate (cold reads
            // of 2 GiB measured 780, 1,000, 1,160, 1,250, 1,310, 1,510 MiB/s in a row); these repeats of a
            // small file take seconds. They come after the measured write, right before the reads: warmed
            // before it, the first read round took 0.06-0.44 core-s per GiB more than the later ones in five
            // benches of seven (the write path ran in between); warmed here, it did not in two of two
            for (int i = 0; i < WARM_READS; i++) {
                plinthSequentialRead(plinth, warmFile, warmBytes);
            }
            plinth.delete(warmFile);
            if (!cachesDropped) {
                // warm means in the page cache on both sides: the local file is there after its write, but
                // the targets write past the page cache (design note 51), so one untimed read puts it there
                // (where direct reads are on, note 60, the targets read long ranges from the disk either way)
                plinthSequentialRead(plinth, remoteFile, bytes);
            }
            // The disk and the network of a shared VM move by 2x within minutes: each round measures its own
            // bounds right before its read, and the table shows the median round, not the best
            List<ReadRound> readRounds = new ArrayList<>();
            for (int round = 1; round <= rounds; round++) {
                String of = rounds == 1 ? "" : String.format(Locale.ROOT, " (round %d of %d)", round, rounds);
                if (cachesDropped) {
                    dropCaches();
                }
                Measured localRead = measure(bytes, () -> localSequentialRead(localFile, bytes));
                progress("local  sequential read         %9.1f MiB/s%s%s", localRead.mibPerSecond(), of, localRead.cpu());
                Loopback network = loopback();
                progress("loopback TCP (%s)  %9.1f MiB/s%s%s", network.iperf3() ? "iperf3" : "java socket", network.mibPerSecond(), of, network.cpu());
                if (cachesDropped) {
                    dropCaches();
                }
                Measured plinthRead = measure(bytes, () -> plinthSequentialRead(plinth, remoteFile, bytes));
                progress("plinth sequential read         %9.1f MiB/s%s%s", plinthRead.mibPerSecond(), of, plinthRead.cpu());
                readRounds.add(new ReadRound(localRead.mibPerSecond(), network.mibPerSecond(), plinthRead.mibPerSecond()));
            }
            // random 4 KiB reads over the same two files, as map-style datasets read samples: one at a time and 32 at
            // once (threads), the local file with O_DIRECT so that both sides read the disk
            double[] localRandom = new double[RANDOM_DEPTHS.length];
            double[] plinthRandom = new double[RANDOM_DEPTHS.length];
            for (int d = 0; d < RANDOM_DEPTHS.length; d++) {
                int depth = RANDOM_DEPTHS[d];
                if (cachesDropped) {
                    dropCaches();
                }
                localRandom[d] = randomReads(depth, bytes, () -> {
                    FileChannel channel = FileChannel.open(localFile, StandardOpenOption.READ, com.sun.nio.file.ExtendedOpenOption.DIRECT);
                    ByteBuffer aligned = ByteBuffer.allocateDirect(2 * RANDOM_READ_BYTES).alignedSlice(RANDOM_READ_BYTES);
                    return new RandomReader() {
                        @Override
                        public void read(long offset) throws IOException {
                            channel.read(aligned.clear().limit(RANDOM_READ_BYTES), offset);
                        }

                        @Override
                        public void close() throws IOException {
                            channel.close();
                        }
                    };
                });
                progress("local  random 4 KiB reads, %2d at once  %9.0f per s", depth, localRandom[d]);
                if (cachesDropped) {
                    dropCaches();
                }
                plinthRandom[d] = randomReads(depth, bytes, () -> {
                    PlinthFile in = plinth.open(remoteFile, false);
                    ByteBuffer buffer = ByteBuffer.allocateDirect(RANDOM_READ_BYTES);
                    return new RandomReader() {
                        @Override
                        public void read(long offset) {
                            in.read(offset, buffer.clear());
                        }

                        @Override
                        public void close() {
                            in.close();
                        }
                    };
                });
                progress("plinth random 4 KiB reads, %2d at once  %9.0f per s", depth, plinthRandom[d]);
            }
            Files.delete(localFile);
            List<ReadRound> byRatio = new ArrayList<>(readRounds);
            byRatio.sort(java.util.Comparator.comparingDouble(ReadRound::ratio));
            ReadRound medianRound = byRatio.get((byRatio.size() - 1) / 2);
            double localRead = medianRound.localRead();
            if (rounds > 1) {
                progress("plinth sequential read, ratio to min(disk, loopback) by round: %s; median %.2f",
                        readRounds.stream().map(r -> String.format(Locale.ROOT, "%.2f", r.ratio())).toList(), medianRound.ratio());
            }
            double shortCircuitRead = 0;
            if (shortCircuit) {
                if (cachesDropped) {
                    dropCaches();
                }
                try (PlinthClient direct = client.connect(client.config().with(dev.plinth.common.Settings.CLIENT_SHORT_CIRCUIT_READS, true))) {
                    Measured measured = measure(bytes, () -> plinthSequentialRead(direct, remoteFile, bytes));
                    shortCircuitRead = measured.mibPerSecond();
                    progress("plinth short-circuit read      %9.1f MiB/s (%d pieces read locally)%s", shortCircuitRead, direct.shortCircuitReads(), measured.cpu());
                }
            }
            plinth.delete(remoteFile);

            double[] localMetadata = localMetadata(local, files);
            progress("local  create/stat/unlink      %9.0f / %.0f / %.0f per s", localMetadata[0], localMetadata[1], localMetadata[2]);
            double[] plinthMetadata = plinthMetadata(plinth, FsCommand.join(path, "md"), files);
            progress("plinth create/stat/unlink      %9.0f / %.0f / %.0f per s", plinthMetadata[0], plinthMetadata[1], plinthMetadata[2]);

            double readBound = medianRound.bound();
            String readBaseline = (localRead <= medianRound.loopback() ? "local disk (< loopback)" : "loopback TCP (< disk)")
                    + (rounds > 1 ? ", median of " + rounds + " rounds" : "");
            List<Result> results = new java.util.ArrayList<>(List.of(
                    new Result("sequential write + fsync", localWrite, plinthWrite, "MiB/s", "local disk"),
                    new Result("sequential read" + (cachesDropped ? "" : " (warm)"), readBound, medianRound.plinthRead(), "MiB/s", readBaseline)));
            if (shortCircuit) {
                results.add(new Result("  short-circuit read" + (cachesDropped ? "" : " (warm)"), localRead, shortCircuitRead, "MiB/s",
                        "local disk"));
            }
            for (int d = 0; d < RANDOM_DEPTHS.length; d++) {
                results.add(new Result("random 4 KiB read, " + RANDOM_DEPTHS[d] + " at once", localRandom[d], plinthRandom[d], "reads/s",
                        "local disk, O_DIRECT"));
            }
            results.addAll(List.of(
                    new Result("create", localMetadata[0], plinthMetadata[0], "ops/s", "local disk"),
                    new Result("stat", localMetadata[1], plinthMetadata[1], "ops/s", "local disk"),
                    new Result("unlink", localMetadata[2], plinthMetadata[2], "ops/s", "local disk")));
            System.out.println();
            System.out.printf("%-30s %12s %12s %7s  %s%n", "benchmark", "baseline", "plinth", "ratio", "baseline is");
            for (Result result : results) {
                System.out.printf(Locale.ROOT, "%-30s %12.1f %12.1f %7.2f  %s (%s)%n", result.name(), result.local(), result.plinth(),
                        result.plinth() / result.local(), result.baseline(), result.unit());
            }
        } finally {
            dev.plinth.common.FileTrees.delete(local);
        }
        return 0;
    }

    /** One reader of a random-read phase: reads {@link #RANDOM_READ_BYTES} at an offset. */
    interface RandomReader extends AutoCloseable {
        void read(long offset) throws IOException;
    }

    interface RandomReaderFactory {
        RandomReader open() throws IOException;
    }

    /**
     * Random 4 KiB reads at 4 KiB-aligned offsets of a file of {@code bytes}, {@code depth}
     * threads each with a reader of its own, for {@link #RANDOM_READ_MILLIS}: reads per second.
     */
    static double randomReads(int depth, long bytes, RandomReaderFactory readers) throws Exception {
        long blocks = bytes / RANDOM_READ_BYTES;
        java.util.concurrent.atomic.LongAdder done = new java.util.concurrent.atomic.LongAdder();
        List<Thread> threads = new ArrayList<>();
        List<Throwable> failures = java.util.Collections.synchronizedList(new ArrayList<>());
        long start = System.nanoTime();
        long end = start + java.util.concurrent.TimeUnit.MILLISECONDS.toNanos(RANDOM_READ_MILLIS);
        for (int t = 0; t < depth; t++) {
            long seed = t;
            threads.add(Thread.ofPlatform().name("random-read-" + t).start(() -> {
                java.util.SplittableRandom random = new java.util.SplittableRandom(seed);
                try (RandomReader reader = readers.open()) {
                    while (System.nanoTime() < end) {
                        reader.read(random.nextLong(blocks) * RANDOM_READ_BYTES);
                        done.increment();
                    }
                } catch (Throwable e) {
                    failures.add(e);
                }
            }));
        }
        for (Thread thread : threads) {
            thread.join();
        }
        if (!failures.isEmpty()) {
            throw new IllegalStateException("a random reader failed", failures.getFirst());
        }
        return done.sum() / ((System.nanoTime() - start) / 1e9);
    }

    static void progress(String format, Object... args) {
        System.out.println(String.format(Locale.ROOT, format, args));
        System.out.flush();
    }

    private static double mibPerSecond(long bytes, long nanos) {
        return bytes / (double) BLOCK_BYTES / (nanos / 1e9);
    }

    /** Drops the page cache (needs root), so reads come from the disk on both sides. */
    static boolean dropCaches() {
        try {
            new ProcessBuilder("sync").inheritIO().start().waitFor(60, TimeUnit.SECONDS);
            Files.writeString(Path.of("/proc/sys/vm/drop_caches"), "3\n");
            return true;
        } catch (IOException | InterruptedException | SecurityException e) {
            return false;
        }
    }

    private static double localSequentialWrite(Path file, long bytes, byte[] block) throws IOException {
        ByteBuffer buffer = ByteBuffer.allocateDirect(block.length).put(block).flip();
        long start = System.nanoTime();
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE, StandardOpenOption.TRUNCATE_EXISTING)) {
            for (long written = 0; written < bytes; written += block.length) {
                buffer.rewind();
                while (buffer.hasRemaining()) {
                    channel.write(buffer);
                }
            }
            channel.force(true);
        }
        return mibPerSecond(bytes, System.nanoTime() - start);
    }

    private static double localSequentialRead(Path file, long bytes) throws IOException {
        ByteBuffer buffer = ByteBuffer.allocateDirect(BLOCK_BYTES);
        long start = System.nanoTime();
        long total = 0;
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
            int read;
            while ((read = channel.read(buffer.clear())) > 0) {
                total += read;
            }
        }
        return mibPerSecond(total, System.nanoTime() - start);
    }

    // Both sides read and write through direct buffers of the same size: the same work
    static double plinthSequentialWrite(PlinthClient plinth, String file, Layout layout, long bytes, byte[] block) {
        ByteBuffer buffer = ByteBuffer.allocateDirect(block.length).put(block).flip();
        long start = System.nanoTime();
        try (PlinthFile out = plinth.create(file, 0644, true, layout)) {
            for (long offset = 0; offset < bytes; offset += block.length) {
                out.write(offset, buffer.rewind());
            }
            out.fsync();
        }
        return mibPerSecond(bytes, System.nanoTime() - start);
    }

    static double plinthSequentialRead(PlinthClient plinth, String file, long bytes) {
        ByteBuffer buffer = ByteBuffer.allocateDirect(BLOCK_BYTES);
        long start = System.nanoTime();
        long total = 0;
        try (PlinthFile in = plinth.open(file, false)) {
            int read;
            while ((read = in.read(total, buffer.clear())) > 0) {
                total += read;
            }
        }
        if (total != bytes) {
            throw new IllegalStateException("read " + total + " bytes of " + bytes);
        }
        return mibPerSecond(total, System.nanoTime() - start);
    }

    private static double[] localMetadata(Path directory, int count) throws IOException {
        Path md = Files.createDirectories(directory.resolve("md"));
        for (int i = 0; i < 1000; i++) {
            Path warm = md.resolve("warm" + i);
            Files.newByteChannel(warm, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE).close();
            Files.readAttributes(warm, "unix:ino");
            Files.delete(warm);
        }
        long start = System.nanoTime();
        for (int i = 0; i < count; i++) {
            Files.newByteChannel(md.resolve("f" + i), StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE).close();
        }
        long created = System.nanoTime();
        for (int i = 0; i < count; i++) {
            Files.readAttributes(md.resolve("f" + i), "unix:ino");
        }
        long statted = System.nanoTime();
        for (int i = 0; i < count; i++) {
            Files.delete(md.resolve("f" + i));
        }
        long deleted = System.nanoTime();
        return new double[] {count / ((created - start) / 1e9), count / ((statted - created) / 1e9), count / ((deleted - statted) / 1e9)};
    }

    private static double[] plinthMetadata(PlinthClient plinth, String directory, int count) {
        return plinthMetadata(plinth, directory, count, 1);
    }

    /** Creates, stats and unlinks of {@code count} files in {@code directory} from {@code threads} threads at once; per second each. */
    private static double[] plinthMetadata(PlinthClient plinth, String directory, int count, int threads) {
        if (threads > 1) {
            Attributes parent = plinth.mkdirs(directory, 0755);
            double[] rates = new double[3];
            java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(threads);
            try {
                runSpread(pool, threads, 1000, (t, i) -> { // warm-up, untimed
                    plinth.create(parent.inodeId(), "warm" + t + "-" + i, 0644, true, null);
                    plinth.unlink(parent.inodeId(), "warm" + t + "-" + i);
                });
                int each = Math.max(1, count / threads);
                long start = System.nanoTime();
                runSpread(pool, threads, each, (t, i) -> plinth.create(parent.inodeId(), "f" + t + "-" + i, 0644, true, null));
                long created = System.nanoTime();
                runSpread(pool, threads, each, (t, i) -> plinth.lookup(parent.inodeId(), "f" + t + "-" + i));
                long statted = System.nanoTime();
                runSpread(pool, threads, each, (t, i) -> plinth.unlink(parent.inodeId(), "f" + t + "-" + i));
                long deleted = System.nanoTime();
                long total = (long) each * threads;
                rates = new double[] {total / ((created - start) / 1e9), total / ((statted - created) / 1e9), total / ((deleted - statted) / 1e9)};
            } finally {
                pool.shutdownNow();
            }
            plinth.delete(directory);
            return rates;
        }
        Attributes parent = plinth.mkdirs(directory, 0755);
        // warm-up, untimed: the first thousand operations mostly measure the JIT compilers
        for (int i = 0; i < 1000; i++) {
            plinth.create(parent.inodeId(), "warm" + i, 0644, true, null);
            plinth.lookup(parent.inodeId(), "warm" + i);
            plinth.unlink(parent.inodeId(), "warm" + i);
        }
        long start = System.nanoTime();
        for (int i = 0; i < count; i++) {
            plinth.create(parent.inodeId(), "f" + i, 0644, true, null);
        }
        long created = System.nanoTime();
        for (int i = 0; i < count; i++) {
            plinth.lookup(parent.inodeId(), "f" + i);
        }
        long statted = System.nanoTime();
        for (int i = 0; i < count; i++) {
            plinth.unlink(parent.inodeId(), "f" + i);
        }
        long deleted = System.nanoTime();
        plinth.delete(directory);
        return new double[] {count / ((created - start) / 1e9), count / ((statted - created) / 1e9), count / ((deleted - statted) / 1e9)};
    }

    /** One step of a spread phase: thread {@code t}'s {@code i}th. */
    @FunctionalInterface
    private interface Step {
        void run(int t, int i);
    }

    /** Runs {@code perThread} steps on each of {@code threads} threads of {@code pool}; returns when all are done. */
    private static void runSpread(java.util.concurrent.ExecutorService pool, int threads, int perThread, Step step) {
        List<java.util.concurrent.Future<?>> running = new java.util.ArrayList<>();
        for (int t = 0; t < threads; t++) {
            int thread = t;
            running.add(pool.submit(() -> {
                for (int i = 0; i < perThread; i++) {
                    step.run(thread, i);
                }
            }));
        }
        for (java.util.concurrent.Future<?> future : running) {
            try {
                future.get();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new dev.plinth.common.PlinthException(dev.plinth.common.ErrorCode.INTERNAL, "interrupted");
            } catch (java.util.concurrent.ExecutionException e) {
                throw e.getCause() instanceof RuntimeException runtime ? runtime
                        : new dev.plinth.common.PlinthException(dev.plinth.common.ErrorCode.INTERNAL, e.getCause().toString());
            }
        }
    }

    /** Loopback TCP as iperf3 measured it (or a Java socket), with this machine's CPU over it. */
    record Loopback(double mibPerSecond, boolean iperf3, String cpu) {}

    /** iperf3 for 3 s when it is installed, else one Java socket for 3 s. */
    private static Loopback loopback() throws Exception {
        try {
            int port;
            try (ServerSocket probe = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
                port = probe.getLocalPort();
            }
            Process server = new ProcessBuilder("iperf3", "-s", "-1", "-B", "127.0.0.1", "-p", Integer.toString(port))
                    .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
            try {
                Thread.sleep(500);
                MachineCpu before = MachineCpu.now();
                long start = System.nanoTime();
                Process clientProcess = new ProcessBuilder("iperf3", "-c", "127.0.0.1", "-p", Integer.toString(port), "-t", "3", "-J")
                        .redirectErrorStream(true).start();
                String json = new String(clientProcess.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
                clientProcess.waitFor(30, TimeUnit.SECONDS);
                double seconds = (System.nanoTime() - start) / 1e9;
                MachineCpu after = MachineCpu.now();
                Matcher received = Pattern.compile("\"sum_received\"\\s*:\\s*\\{([^}]*)\\}", Pattern.DOTALL).matcher(json);
                if (received.find()) {
                    Matcher rate = Pattern.compile("\"bits_per_second\"\\s*:\\s*([0-9.eE+]+)").matcher(received.group(1));
                    Matcher moved = Pattern.compile("\"bytes\"\\s*:\\s*([0-9]+)").matcher(received.group(1));
                    if (rate.find()) {
                        // the window holds the client process's start and exit too: a few ms of 3 s
                        String cpu = moved.find() ? MachineCpu.per(before, after, Long.parseLong(moved.group(1)), seconds) : "";
                        return new Loopback(Double.parseDouble(rate.group(1)) / 8 / BLOCK_BYTES, true, cpu);
                    }
                }
            } finally {
                server.destroy();
                server.waitFor(5, TimeUnit.SECONDS);
            }
        } catch (IOException e) {
            // iperf3 is not installed: measure with a plain socket below
        }
        Measured java = javaLoopback();
        return new Loopback(java.mibPerSecond(), false, java.cpu());
    }

    /** Sends for 3 s over one loopback socket. */
    private static Measured javaLoopback() throws IOException, InterruptedException {
        try (ServerSocket listener = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            Thread sink = Thread.ofPlatform().start(() -> {
                try (Socket socket = listener.accept(); InputStream in = socket.getInputStream()) {
                    byte[] buffer = new byte[BLOCK_BYTES];
                    while (in.read(buffer) >= 0) {
                        // discard
                    }
                } catch (IOException e) {
                    // the sender closed
                }
            });
            long total = 0;
            MachineCpu before = MachineCpu.now();
            long start = System.nanoTime();
            try (Socket socket = new Socket(InetAddress.getLoopbackAddress(), listener.getLocalPort()); OutputStream out = socket.getOutputStream()) {
                byte[] buffer = new byte[BLOCK_BYTES];
                while (System.nanoTime() - start < 3_000_000_000L) {
                    out.write(buffer);
                    total += buffer.length;
                }
            }
            long nanos = System.nanoTime() - start;
            sink.join(5000);
            return new Measured(mibPerSecond(total, nanos), MachineCpu.per(before, MachineCpu.now(), total, nanos / 1e9));
        }
    }
}
