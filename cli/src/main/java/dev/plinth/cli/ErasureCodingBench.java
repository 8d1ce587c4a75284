package dev.plinth.cli;

import dev.plinth.client.PlinthClient;
import dev.plinth.common.FaultPoints;
import dev.plinth.common.Layout;
import dev.plinth.common.Sizes;
import dev.plinth.common.ec.Coder;
import dev.plinth.common.ec.ErasureCode;
import dev.plinth.common.ec.IsalCoder;
import dev.plinth.common.ec.JavaCoder;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Random;

/**
 * {@code plinth bench --ec K+M}: what erasure coding costs, each figure beside its baseline from
 * the same run. The coders' encode rate on one core (data bytes in per second); a sequential
 * write + fsync and a cold read of a K+M file beside a one-replica file striped over as many
 * targets; the same read with two data cells of every row unreadable
 * ({@link FaultPoints#CLIENT_EC_UNREADABLE_CELLS}), so every row is decoded; and 64 KiB
 * overwrites with fsync (read-modify-write of partial rows) beside the same on one replica.
 */
final class ErasureCodingBench {
    private ErasureCodingBench() {}

    private static final int CELL_BYTES = 1 << 20;

    static void run(PlinthClient plinth, String path, int k, int m, long bytes, int rounds, boolean warm) throws Exception {
        List<Coder> coders = new ArrayList<>();
        if (IsalCoder.available()) {
            coders.add(IsalCoder.instance());
        }
        coders.add(JavaCoder.INSTANCE);
        for (Coder coder : coders) {
            BenchCommand.progress("encode %d+%d with %-6s on one core  %9.1f MiB/s of data", k, m, coder.name(), encodeRate(coder, k, m));
        }
        plinth.mkdirs(path, 0755);
        Layout root = plinth.stat("/").layout();
        Layout replicated = new Layout(k + m, CELL_BYTES, root.chunkSizeBytes(), root.pool(), 1, List.of()).validate();
        // as setstripe --ec makes it: 1 MiB cells, a chunk per cell
        Layout coded = new Layout(k + m, CELL_BYTES, CELL_BYTES, root.pool(), 1, List.of()).withErasureCoding(k, m).validate();
        boolean cachesDropped = !warm && BenchCommand.dropCaches();
        byte[] block = new byte[BenchCommand.BLOCK_BYTES];
        new Random(42).nextBytes(block);
        String replicatedFile = FsCommand.join(path, "replicas-1.dat");
        String codedFile = FsCommand.join(path, "ec.dat");
        String warmFile = FsCommand.join(path, "warm.dat");
        for (String stale : List.of(replicatedFile, codedFile, warmFile)) {
            if (plinth.exists(stale)) {
                plinth.delete(stale);
            }
        }
        BenchCommand.progress("plinth bench --ec %d+%d: %s sequential in 1 MiB requests, cells of %s; the baseline is one replica over %d targets",
                k, m, Sizes.format(bytes), Sizes.format(CELL_BYTES), k + m);
        long warmBytes = Math.min(bytes, 256L << 20);
        for (Layout layout : List.of(replicated, coded)) { // both paths compiled before anything is measured
            for (int i = 0; i < BenchCommand.WARM_WRITES / 2; i++) {
                BenchCommand.plinthSequentialWrite(plinth, warmFile, layout, warmBytes, block);
                BenchCommand.plinthSequentialRead(plinth, warmFile, warmBytes);
                plinth.delete(warmFile);
            }
        }
        double[] writes = new double[2];
        double[] reads = new double[2];
        double degraded = 0;
        for (int round = 1; round <= rounds; round++) {
            for (String file : List.of(replicatedFile, codedFile)) {
                if (plinth.exists(file)) {
                    plinth.delete(file);
                }
            }
            double replicatedWrite = BenchCommand.plinthSequentialWrite(plinth, replicatedFile, replicated, bytes, block);
            double codedWrite = BenchCommand.plinthSequentialWrite(plinth, codedFile, coded, bytes, block);
            dropIf(cachesDropped);
            double replicatedRead = BenchCommand.plinthSequentialRead(plinth, replicatedFile, bytes);
            dropIf(cachesDropped);
            double codedRead = BenchCommand.plinthSequentialRead(plinth, codedFile, bytes);
            dropIf(cachesDropped);
            FaultPoints.set(FaultPoints.CLIENT_EC_UNREADABLE_CELLS, Integer.toString(Math.min(2, m)));
            double degradedRead;
            try {
                degradedRead = BenchCommand.plinthSequentialRead(plinth, codedFile, bytes);
            } finally {
                FaultPoints.clear();
            }
            BenchCommand.progress("round %d: write+fsync %.1f (one replica) / %.1f (ec); read %.1f / %.1f; degraded read %.1f MiB/s", round,
                    replicatedWrite, codedWrite, replicatedRead, codedRead, degradedRead);
            writes[0] += replicatedWrite / rounds;
            writes[1] += codedWrite / rounds;
            reads[0] += replicatedRead / rounds;
            reads[1] += codedRead / rounds;
            degraded += degradedRead / rounds;
        }
        // partial rows: each overwrite reads the row's other data cells and writes its cell and the parity again (note 89)
        double replicatedOverwrites = overwrites(plinth, replicatedFile, bytes);
        double codedOverwrites = overwrites(plinth, codedFile, bytes);
        BenchCommand.progress("64 KiB overwrites + fsync at random offsets: %.0f /s (one replica), %.0f /s (ec)", replicatedOverwrites,
                codedOverwrites);
        plinth.delete(replicatedFile);
        plinth.delete(codedFile);
        String cold = cachesDropped ? "" : " (warm)";
        System.out.println();
        System.out.printf("%-34s %12s %12s %7s  %s%n", "benchmark (MiB/s, mean of " + rounds + ")", "baseline", "ec " + k + "+" + m, "ratio",
                "baseline is");
        row("sequential write + fsync", writes[0], writes[1], "one replica over " + (k + m) + " targets");
        row("sequential read" + cold, reads[0], reads[1], "one replica over " + (k + m) + " targets");
        row("read, " + Math.min(2, m) + " data cells unreadable" + cold, reads[1], degraded, "healthy ec read");
        System.out.printf(Locale.ROOT, "%-34s %12.0f %12.0f %7.2f  %s%n", "64 KiB overwrite + fsync (ops/s)", replicatedOverwrites,
                codedOverwrites, codedOverwrites / replicatedOverwrites, "one replica over " + (k + m) + " targets");
    }

    /** Overwrites of 64 KiB at random 64 KiB-aligned offsets of a file, each followed by fsync, for two seconds; per second. */
    private static double overwrites(PlinthClient plinth, String file, long size) {
        Random random = new Random(7);
        ByteBuffer block = ByteBuffer.allocateDirect(64 << 10);
        int done = 0;
        long start = System.nanoTime();
        try (dev.plinth.client.PlinthFile out = plinth.open(file, true)) {
            while (System.nanoTime() - start < 2_000_000_000L) {
                long offset = (long) random.nextInt((int) Math.max(1, size / (64 << 10))) * (64 << 10);
                out.write(offset, block.rewind());
                out.fsync();
                done++;
            }
        }
        return done / ((System.nanoTime() - start) / 1e9);
    }

    private static void row(String name, double baseline, double measured, String baselineIs) {
        System.out.printf(Locale.ROOT, "%-34s %12.1f %12.1f %7.2f  %s%n", name, baseline, measured, measured / baseline, baselineIs);
    }

    private static void dropIf(boolean cachesDropped) {
        if (cachesDropped) {
            BenchCommand.dropCaches();
        }
    }

    /** MiB of data encoded per second on this thread, cells of 1 MiB in direct buffers, after a warm-up. */
    static double encodeRate(Coder coder, int k, int m) {
        ErasureCode code = new ErasureCode(k, m, coder);
        ByteBuffer[] data = new ByteBuffer[k];
        ByteBuffer[] parity = new ByteBuffer[m];
        byte[] random = new byte[CELL_BYTES];
        new Random(1).nextBytes(random);
        for (int i = 0; i < k; i++) {
            data[i] = ByteBuffer.allocateDirect(CELL_BYTES).put(random).flip();
        }
        for (int p = 0; p < m; p++) {
            parity[p] = ByteBuffer.allocateDirect(CELL_BYTES);
        }
        for (int i = 0; i < 20; i++) {
            code.encode(data, parity, CELL_BYTES);
        }
        long start = System.nanoTime();
        int rows = 0;
        while (System.nanoTime() - start < 2_000_000_000L) {
            code.encode(data, parity, CELL_BYTES);
            rows++;
        }
        return (double) rows * k * CELL_BYTES / (1 << 20) / ((System.nanoTime() - start) / 1e9);
    }
}
