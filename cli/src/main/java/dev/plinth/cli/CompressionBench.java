package dev.plinth.cli;

import dev.plinth.client.PlinthClient;
import dev.plinth.common.Layout;
import dev.plinth.common.Sizes;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Locale;
import java.util.Random;

/**
 * {@code plinth bench --compress}: what compressed layouts give and cost, each beside an
 * uncompressed layout in the same run. For text-like bytes (words of a log or a JSON file) and
 * image-like bytes (already-compressed media, which no codec shrinks): the ratio of logical to
 * stored bytes (as the targets' disks hold them), sequential write + fsync and cold read
 * (page cache dropped) in MiB/s, and this process's CPU seconds per GiB, where the client
 * compresses and decompresses.
 */
final class CompressionBench {
    private CompressionBench() {}

    private record Codec(String name, Layout.Encoding encoding, int level) {}

    private static final List<Codec> CODECS = List.of(new Codec("none", Layout.Encoding.NONE, 0), new Codec("lz4", Layout.Encoding.LZ4, 0),
            new Codec("zstd:3", Layout.Encoding.ZSTD, 3));

    static void run(PlinthClient plinth, String path, long bytes, int rounds, boolean warm) throws Exception {
        plinth.mkdirs(path, 0755);
        Layout root = plinth.stat("/").layout();
        int targets = plinth.clusterMap().targets().size();
        Layout plain = new Layout(Math.max(1, targets), 1 << 20, root.chunkSizeBytes(), root.pool(), 1, List.of()).validate();
        boolean cachesDropped = !warm && BenchCommand.dropCaches();
        String file = FsCommand.join(path, "compress.dat");
        BenchCommand.progress("plinth bench --compress: %s sequential in 1 MiB requests, one replica over %d targets, %d round(s)",
                Sizes.format(bytes), plain.stripeCount(), rounds);
        System.out.println();
        System.out.printf("%-12s %-8s %8s %12s %12s %14s %14s%n", "data", "codec", "ratio", "write MiB/s", "read MiB/s" + (cachesDropped ? "" : "*"),
                "write CPU s/GiB", "read CPU s/GiB");
        for (String kind : List.of("text-like", "image-like")) {
            byte[] block = kind.equals("text-like") ? textLike(BenchCommand.BLOCK_BYTES) : random(BenchCommand.BLOCK_BYTES);
            for (Codec codec : CODECS) {
                Layout layout = plain.withCompression(codec.encoding(), codec.level()).validate();
                for (int i = 0; i < 2; i++) { // the codec's path compiled before it is measured
                    deleteIfThere(plinth, file);
                    BenchCommand.plinthSequentialWrite(plinth, file, layout, Math.min(bytes, 128L << 20), block);
                    BenchCommand.plinthSequentialRead(plinth, file, Math.min(bytes, 128L << 20));
                }
                double write = 0;
                double read = 0;
                double writeCpu = 0;
                double readCpu = 0;
                double ratio = 0;
                for (int round = 0; round < rounds; round++) {
                    deleteIfThere(plinth, file);
                    long cpu = cpuNanos();
                    write += BenchCommand.plinthSequentialWrite(plinth, file, layout, bytes, block) / rounds;
                    writeCpu += perGiB(cpuNanos() - cpu, bytes) / rounds;
                    ratio += (double) bytes / plinth.storedBytes(plinth.stat(file)) / rounds;
                    if (cachesDropped) {
                        BenchCommand.dropCaches();
                    }
                    cpu = cpuNanos();
                    read += BenchCommand.plinthSequentialRead(plinth, file, bytes) / rounds;
                    readCpu += perGiB(cpuNanos() - cpu, bytes) / rounds;
                }
                System.out.printf(Locale.ROOT, "%-12s %-8s %8.2f %12.1f %12.1f %14.2f %14.2f%n", kind, codec.name(), ratio, write, read, writeCpu,
                        readCpu);
            }
        }
        deleteIfThere(plinth, file);
        if (!cachesDropped) {
            System.out.println("* warm: the page cache was not dropped before reads");
        }
    }

    private static void deleteIfThere(PlinthClient plinth, String file) {
        if (plinth.exists(file)) {
            plinth.delete(file);
        }
    }

    private static long cpuNanos() {
        return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime();
    }

    private static double perGiB(long cpuNanos, long bytes) {
        return cpuNanos / 1e9 / (bytes / (double) (1L << 30));
    }

    /** Words as a log or a JSON file has them. */
    static byte[] textLike(int length) {
        String[] words = {"the", "model", "token", "gradient", "epoch", "shard", "sample", "loss", "{\"id\": ", "\"label\": ", "0.125", "\n",
                "learning_rate", "2026-12-07T01:17:35Z", "INFO", "step"};
        Random random = new Random(11);
        StringBuilder text = new StringBuilder(length + 32);
        while (text.length() < length) {
            text.append(words[random.nextInt(words.length)]).append(random.nextInt(4) == 0 ? Integer.toString(random.nextInt(100_000)) : "")
                    .append(' ');
        }
        return java.util.Arrays.copyOf(text.toString().getBytes(StandardCharsets.US_ASCII), length);
    }

    private static byte[] random(int length) {
        byte[] bytes = new byte[length];
        new Random(42).nextBytes(bytes);
        return bytes;
    }
}
