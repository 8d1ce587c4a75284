package dev.plinth.integration;

import static org.assertj.core.api.Assertions.assertThat;

import dev.plinth.client.PlinthClient;
import dev.plinth.client.PlinthFile;
import dev.plinth.common.Config;
import dev.plinth.common.FaultPoints;
import dev.plinth.common.InodeId;
import dev.plinth.common.Layout;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Erasure-coded files against an in-memory model: random writes (holes, overwrites, whole and
 * partial rows), truncates up and down and reads through the writing handle and through another
 * client, while the bytes of one cell object are flipped on disk now and then; then with a
 * target failed. Every read must match the model. The seed is printed; replay a failure with
 * -Dplinth.seed=SEED.
 */
class ErasureCodingTest {
    private static final int FILE_BYTES_MAX = 24 << 20;

    @TempDir
    Path directory;

    @AfterEach
    void clearFaults() {
        FaultPoints.clear();
    }

    private static Config sixTargets() {
        return MiniCluster.testConfig().with("server.targets", "6");
    }

    private static Layout erasureCoded(Random random, int k, int m) {
        int stripe = (64 << 10) << random.nextInt(5);
        int chunk = stripe << random.nextInt(3);
        return new Layout(1, stripe, chunk, "default", 1, List.of()).withErasureCoding(k, m);
    }

    @ParameterizedTest(name = "{0}+{1}")
    @CsvSource({"4,2", "2,1"})
    void randomWorkloadMatchesTheModelWhileACellIsDamaged(int k, int m) throws IOException {
        long seed = Long.getLong("plinth.seed", System.nanoTime());
        System.out.println("ErasureCodingTest " + k + "+" + m + " seed " + seed + " (replay with -Dplinth.seed=" + seed + ")");
        Random random = new Random(seed);
        byte[] model = new byte[FILE_BYTES_MAX];
        int size = 0;
        try (MiniCluster cluster = MiniCluster.start(directory, sixTargets()); PlinthClient client = cluster.client();
             PlinthClient reader = cluster.client()) {
            Layout template = erasureCoded(random, k, m);
            client.create("/ec", 0644, true, template).close();
            Layout layout = client.stat("/ec").layout();
            assertThat(layout.erasureCoded()).isTrue();
            assertThat(layout.chainIds()).hasSize(k + m).doesNotHaveDuplicates();
            long inode = client.stat("/ec").inodeId();
            int damaged = random.nextInt(k + m); // one cell object of every row, at most: within what any m >= 1 survives
            for (int step = 0; step < 120; step++) {
                String context = "seed " + seed + " step " + step + " layout " + template;
                int choice = random.nextInt(100);
                if (choice < 55) {
                    int offset = random.nextInt(Math.min(FILE_BYTES_MAX - 1, size + (1 << 20)) + 1);
                    int length = 1 + random.nextInt(random.nextInt(6) == 0 ? 8 << 20 : 300 << 10);
                    length = Math.min(length, FILE_BYTES_MAX - offset);
                    byte[] data = new byte[length];
                    random.nextBytes(data);
                    try (PlinthFile file = client.open("/ec", true)) {
                        // in pieces, out of order: rows fill from several writes
                        int split = random.nextInt(length);
                        file.write(offset + split, ByteBuffer.wrap(data, split, length - split));
                        file.write(offset, ByteBuffer.wrap(data, 0, split));
                        System.arraycopy(data, 0, model, offset, length);
                        size = Math.max(size, offset + length);
                        readOwnWriteAndMaybeSync(file, random, model, size, context);
                    }
                } else if (choice < 65) {
                    size = truncateAtRandom(client, "/ec", random, model, size);
                } else if (choice < 75) {
                    flipBytes(inode, damaged, random);
                }
                assertThat(client.stat("/ec").sizeBytes()).as(context).isEqualTo(size);
                if (size > 0) {
                    int offset = random.nextInt(size);
                    int length = Math.min(size - offset, 1 + random.nextInt(4 << 20));
                    assertSameBytes(read(reader, "/ec", offset, length), Arrays.copyOfRange(model, offset, offset + length),
                            context + " read by another client at " + offset);
                }
            }
            flipBytes(inode, damaged, random);
            assertSameBytes(read(reader, "/ec", 0, size), Arrays.copyOf(model, size), "seed " + seed + " whole file");
        }
    }

    @Test
    void readsDecodeAroundAFailedTargetAndADamagedCell() throws IOException {
        Random random = new Random(5);
        byte[] content = new byte[(11 << 20) + 12345];
        random.nextBytes(content);
        try (MiniCluster cluster = MiniCluster.start(directory, sixTargets()); PlinthClient client = cluster.client()) {
            Layout layout = new Layout(1, 256 << 10, 1 << 20, "default", 1, List.of()).withErasureCoding(4, 2);
            try (PlinthFile file = client.create("/ec", 0644, true, layout)) {
                file.write(0, ByteBuffer.wrap(content));
                file.fsync();
            }
            long inode = client.stat("/ec").inodeId();
            FaultPoints.set(FaultPoints.STORAGE_FSYNC_FAIL, "1"); // the first target to sync fails for good
            try (PlinthFile file = client.open("/ec", true)) {
                file.write(0, ByteBuffer.wrap(content, 0, 1000));
                file.fsync();
            } catch (RuntimeException expected) {
                // the failed target's fsync
            }
            assertThat(FaultPoints.enabled(FaultPoints.STORAGE_FSYNC_FAIL)).isFalse();
            assertSameBytes(read(client, "/ec", 0, content.length), content, "one target failed");
            int failed = failedObject(client);
            flipBytes(inode, (failed + 1) % 6, random);
            try (PlinthClient fresh = cluster.client()) {
                assertSameBytes(read(fresh, "/ec", 0, content.length), content, "a target failed and another cell damaged");
                for (int i = 0; i < 20; i++) {
                    int offset = random.nextInt(content.length);
                    int length = Math.min(content.length - offset, 1 + random.nextInt(600 << 10));
                    assertSameBytes(read(fresh, "/ec", offset, length), Arrays.copyOfRange(content, offset, offset + length), "at " + offset);
                }
            }
        }
    }

    @Test
    void aParityCheckFindsDamagedCellsAndMendsThem() throws IOException {
        Random random = new Random(9);
        byte[] content = new byte[(3 << 20) + 777];
        random.nextBytes(content);
        try (MiniCluster cluster = MiniCluster.start(directory, sixTargets()); PlinthClient client = cluster.client()) {
            Layout layout = new Layout(1, 128 << 10, 128 << 10, "default", 1, List.of()).withErasureCoding(4, 2);
            writeErasureCoded(client, layout, content);
            var attributes = client.stat("/ec");
            PlinthClient.ParityReport clean = client.checkParity(attributes, false);
            assertThat(clean.problems()).isEmpty();
            assertThat(clean.groups()).isEqualTo(7); // 3 MiB + 777 bytes in rows of 512 KiB: six whole rows and 777 bytes, a chunk per cell
            damageCells(attributes.inodeId(), random, 1, 4); // a data cell and a parity cell
            PlinthClient.ParityReport damaged = client.checkParity(attributes, false);
            assertThat(damaged.problems()).isNotEmpty().allMatch(problem -> problem.contains("cannot be read"));
            PlinthClient.ParityReport mended = client.checkParity(attributes, true);
            assertThat(mended.repaired()).isEqualTo(damaged.problems().size());
            assertThat(client.checkParity(attributes, false).problems()).as("after the repair").isEmpty();
            assertSameBytes(read(client, "/ec", 0, content.length), content, "after the repair");
        }
    }

    @Test
    void aFailedTargetsCellsAreRebuiltOntoOtherTargets() throws Exception {
        Random random = new Random(13);
        byte[] content = new byte[(3 << 20) + 4321];
        random.nextBytes(content);
        try (MiniCluster cluster = MiniCluster.start(directory, sixTargets()); PlinthClient client = cluster.client()) {
            Layout layout = new Layout(1, 128 << 10, 256 << 10, "default", 1, List.of()).withErasureCoding(2, 1);
            writeErasureCoded(client, layout, content);
            int failedObject = failATargetOf(client, content, client.stat("/ec").layout(), System.nanoTime() + 20_000_000_000L);
            var before = client.stat("/ec"); // after the failed write, which moved its mtime
            int failedTarget = client.clusterMap().chain(before.layout().chainIds().get(failedObject)).members().getFirst().targetId();

            dev.plinth.client.CellRebuild.Result result = dev.plinth.client.CellRebuild.rebuild(client, before, java.util.Set.of(failedTarget));
            assertThat(result.movedCells()).hasSize(1);
            // 3 MiB + 4321 bytes in rows of two 128 KiB cells: 1.5 MiB + 4321 bytes per cell, 7 chunk groups of 256 KiB
            assertThat(result.groupsRebuilt()).isEqualTo(7);
            var after = client.stat("/ec");
            int movedCell = result.movedCells().getFirst();
            int newTarget = client.clusterMap().chain(after.layout().chainIds().get(movedCell)).targetIds().getFirst();
            assertThat(newTarget).isNotEqualTo(failedTarget);
            assertThat(after.layout().chainIds()).doesNotContainAnyElementsOf(java.util.stream.IntStream.range(0, 3)
                    .filter(cell -> cell == movedCell).mapToObj(cell -> before.layout().chainIds().get(cell)).toList());
            assertThat(after.sizeBytes()).isEqualTo(before.sizeBytes());
            assertThat(after.mtimeNanos()).isEqualTo(before.mtimeNanos());
            // every cell readable and agreeing without the failed target: nothing left to decode
            assertThat(client.checkParity(after, false).problems()).isEmpty();
            assertSameBytes(read(client, "/ec", 0, content.length), content, "after the rebuild");
            assertThat(dev.plinth.client.CellRebuild.rebuild(client, after, java.util.Set.of(failedTarget)).movedCells())
                    .as("nothing is left on the target").isEmpty();
        }
    }

    @Test
    void writesGoOnWithoutACellWhoseTargetIsOfflineAndThatCellIsReadByDecoding() throws Exception {
        Random random = new Random(29);
        byte[] model = new byte[(3 << 20) + 777];
        random.nextBytes(model);
        // a seventh target takes the cell at the end
        try (MiniCluster cluster = MiniCluster.start(directory, MiniCluster.testConfig().with("server.targets", "7"));
             PlinthClient client = cluster.client()) {
            Layout layout = new Layout(1, 128 << 10, 256 << 10, "default", 1, List.of()).withErasureCoding(4, 2);
            writeErasureCoded(client, layout, model);
            int failedObject = failATargetOf(client, model, client.stat("/ec").layout(), System.nanoTime() + 20_000_000_000L);
            int failedTarget = client.clusterMap().chain(client.stat("/ec").layout().chainIds().get(failedObject)).members().getFirst()
                    .targetId();
            assertThat(client.stat("/ec").layout().staleCells()).as("not stale before a write goes without it").isZero();

            // writes go on: the file's layout names the cell stale before the first write that leaves it out
            try (PlinthFile file = client.open("/ec", true)) {
                for (int i = 0; i < 24; i++) {
                    int offset = random.nextInt(model.length);
                    int length = Math.min(model.length - offset, 1 + random.nextInt(700 << 10));
                    byte[] bytes = new byte[length];
                    random.nextBytes(bytes);
                    file.write(offset, ByteBuffer.wrap(bytes));
                    System.arraycopy(bytes, 0, model, offset, length);
                    if (i % 6 == 5) {
                        file.fsync();
                        assertSameBytes(read(client, "/ec", 0, model.length), model, "read back while writing degraded, write " + i);
                    }
                }
                file.truncate(model.length - 5000); // a cut leaves the stale cell alone too
                model = Arrays.copyOf(model, model.length - 5000);
            }
            var degraded = client.stat("/ec");
            assertThat(degraded.layout().staleCellList()).containsExactly(failedObject);
            try (PlinthClient other = cluster.client()) {
                assertSameBytes(read(other, "/ec", 0, model.length), model, "read by another client");
            }
            assertThat(client.checkParity(degraded, false).problems()).as("the stale cell is the one finding")
                    .singleElement().asString().contains("cells [" + failedObject + "] are stale");
            String server = "--server=" + cluster.server().rpcAddress();
            String secret = "--secret-file=" + cluster.server().secretFile();
            assertThat(dev.plinth.integration.cli.CliRun.run(List.of("getstripe", server, secret, "--json", "/ec")).out())
                    .contains("\"stale_cells\":[" + failedObject + "]");
            assertThat(dev.plinth.integration.cli.CliRun.run(List.of("status", server, secret)).out())
                    .contains("1 erasure-coded file(s) on MDT 0 have stale cells");

            // the target does not come back: the rebuild decodes the cell onto another target, where it is not stale
            var result = dev.plinth.client.CellRebuild.rebuild(client, degraded, java.util.Set.of(failedTarget));
            assertThat(result.movedCells()).containsExactly(failedObject);
            var rebuilt = client.stat("/ec");
            assertThat(rebuilt.layout().staleCells()).isZero();
            assertThat(client.checkParity(rebuilt, false).problems()).as("after the rebuild").isEmpty();
            try (PlinthClient fresh = cluster.client()) {
                assertSameBytes(read(fresh, "/ec", 0, model.length), model, "after the rebuild");
            }
        }
    }

    @Test
    void mgmtRebuildsTheCellsOfATargetItDeclaresLost() throws Exception {
        Random random = new Random(17);
        byte[] content = new byte[(2 << 20) + 999];
        random.nextBytes(content);
        Config config = sixTargets().with("mgmt.target-lost-millis", "1500");
        try (MiniCluster cluster = MiniCluster.start(directory, config); PlinthClient client = cluster.client()) {
            Layout layout = new Layout(1, 128 << 10, 256 << 10, "default", 1, List.of()).withErasureCoding(2, 1);
            writeErasureCoded(client, layout, content);
            var before = client.stat("/ec");
            long deadline = System.nanoTime() + 60_000_000_000L;
            int failedObject = failATargetOf(client, content, before.layout(), deadline);
            int failedChain = before.layout().chainIds().get(failedObject);
            // nobody runs plinth rebuild: once mgmt declares the target lost, its leader's upkeep moves the cell
            var after = client.stat("/ec");
            while (after.layout().chainIds().contains(failedChain) && System.nanoTime() < deadline) {
                Thread.sleep(200);
                after = client.stat("/ec");
            }
            assertThat(after.layout().chainIds()).as("the cell on the lost target moved").doesNotContain(failedChain);
            assertThat(offlineObject(client, after.layout())).as("every cell on an online target").isNegative();
            assertThat(client.checkParity(after, false).problems()).isEmpty();
            assertSameBytes(read(client, "/ec", 0, content.length), content, "after the rebuild");
        }
    }

    @Test
    void theParityScrubFindsDamagedCellsAndMendsThem() throws Exception {
        Random random = new Random(19);
        byte[] content = new byte[(2 << 20) + 555];
        random.nextBytes(content);
        Config config = sixTargets().with("mgmt.parity-scrub-interval-millis", "500");
        try (MiniCluster cluster = MiniCluster.start(directory, config); PlinthClient client = cluster.client()) {
            Layout layout = new Layout(1, 128 << 10, 128 << 10, "default", 1, List.of()).withErasureCoding(4, 2);
            writeErasureCoded(client, layout, content);
            var attributes = client.stat("/ec");
            damageCells(attributes.inodeId(), random, 2, 5); // a data cell and a parity cell
            assertThat(client.checkParity(attributes, false).problems()).as("damaged").isNotEmpty();
            // nobody runs fsck --parity: the mgmt leader's scrub finds the damage and mends it
            long deadline = System.nanoTime() + 60_000_000_000L;
            while (!client.checkParity(attributes, false).problems().isEmpty() && System.nanoTime() < deadline) {
                Thread.sleep(250);
            }
            assertThat(client.checkParity(attributes, false).problems()).as("after the scrub").isEmpty();
            assertSameBytes(read(client, "/ec", 0, content.length), content, "after the scrub");
        }
    }

    private static void writeErasureCoded(PlinthClient client, Layout layout, byte[] content) {
        try (PlinthFile file = client.create("/ec", 0644, true, layout)) {
            file.write(0, ByteBuffer.wrap(content));
        }
    }

    /**
     * Fails for good the first target of /ec to sync (an injected fsync failure while its start is
     * rewritten) and returns the cell object on it, once the cluster map has it offline.
     */
    private static int failATargetOf(PlinthClient client, byte[] content, Layout layout, long deadlineNanos) throws InterruptedException {
        FaultPoints.set(FaultPoints.STORAGE_FSYNC_FAIL, "1");
        try (PlinthFile file = client.open("/ec", true)) {
            file.write(0, ByteBuffer.wrap(content, 0, 1000));
            file.fsync();
        } catch (RuntimeException expected) {
            // the failed target's fsync
        }
        int failedObject = offlineObject(client, layout);
        while (failedObject < 0 && System.nanoTime() < deadlineNanos) {
            Thread.sleep(100);
            failedObject = offlineObject(client, layout);
        }
        assertThat(failedObject).as("a target of the file went offline").isNotNegative();
        return failedObject;
    }

    /** Flips bytes in chunks of each of the cell objects, three times over. */
    private void damageCells(long inode, Random random, int... objects) throws IOException {
        for (int object : objects) {
            for (int round = 0; round < 3; round++) {
                flipBytes(inode, object, random);
            }
        }
    }

    /** The object whose target serves nothing any more: the one whose chunk files a read cannot reach is found by elimination. */
    private int failedObject(PlinthClient client) {
        int object = offlineObject(client, client.stat("/ec").layout());
        return object < 0 ? 0 : object; // mgmt has not marked it yet: any other object is then a second one
    }

    /** The first cell object of {@code layout} whose (one) target the cluster map has offline, or -1. */
    private static int offlineObject(PlinthClient client, Layout layout) {
        var map = client.refreshClusterMap();
        for (int object = 0; object < layout.chainIds().size(); object++) {
            var info = map.target(map.chain(layout.chainIds().get(object)).members().getFirst().targetId());
            if (info == null || info.state() != dev.plinth.wire.messages.MgmtMessages.TargetState.ONLINE) {
                return object;
            }
        }
        return -1;
    }

    /** Compares without printing megabytes: the first byte that differs and how many do. */
    /** Reads a random range of the file through the handle that wrote it, checks it against the model, and fsyncs half the time. */
    static void readOwnWriteAndMaybeSync(PlinthFile file, Random random, byte[] model, int size, String context) {
        int readOffset = random.nextInt(size);
        int readLength = Math.min(size - readOffset, 1 + random.nextInt(1 << 20));
        ByteBuffer back = ByteBuffer.allocate(readLength);
        file.read(readOffset, back);
        assertSameBytes(back.array(), Arrays.copyOfRange(model, readOffset, readOffset + readLength), context + " read-own-write at " + readOffset);
        if (random.nextBoolean()) {
            file.fsync();
        }
    }

    /** Truncates the file to a random size (a quarter of the time anywhere up to the model's length, else below its size) as the model does; returns the new size. */
    static int truncateAtRandom(PlinthClient client, String path, Random random, byte[] model, int size) {
        int newSize = random.nextInt(4) == 0 ? random.nextInt(model.length) : random.nextInt(size + 1);
        try (PlinthFile file = client.open(path, true)) {
            file.truncate(newSize);
        }
        if (newSize < size) {
            Arrays.fill(model, newSize, size, (byte) 0);
        }
        return newSize;
    }

    static void assertSameBytes(byte[] actual, byte[] expected, String context) {
        assertThat(actual.length).as(context + ": length").isEqualTo(expected.length);
        int mismatch = Arrays.mismatch(actual, expected);
        if (mismatch >= 0) {
            int differing = 0;
            for (int i = mismatch; i < actual.length; i++) {
                differing += actual[i] != expected[i] ? 1 : 0;
            }
            throw new AssertionError(context + ": " + differing + " of " + actual.length + " bytes differ, the first at " + mismatch
                    + " (" + actual[mismatch] + " instead of " + expected[mismatch] + ")");
        }
    }

    /** Bytes [offset, offset + length) of a file, read through a handle of its own in as many calls as it takes. */
    static byte[] read(PlinthClient client, String path, int offset, int length) {
        try (PlinthFile file = client.open(path, false)) {
            ByteBuffer back = ByteBuffer.allocate(length);
            int done = 0;
            while (done < length) {
                int read = file.read(offset + done, back.slice(done, length - done));
                if (read <= 0) {
                    break;
                }
                done += read;
            }
            return back.array();
        }
    }

    /** Flips a byte in a random chunk of cell object {@code object} of the inode, on disk, as a failing disk would. */
    private void flipBytes(long inode, int object, Random random) throws IOException {
        String inodeDirectory = InodeId.format(inode);
        List<Path> chunks;
        try (Stream<Path> walk = Files.walk(directory)) {
            chunks = walk.filter(path -> path.getParent() != null && path.getParent().getFileName().toString().equals(inodeDirectory)
                    && path.getFileName().toString().startsWith(object + ".") && path.getFileName().toString().endsWith(".data")).sorted().toList();
        }
        for (Path chunk : chunks) {
            long length = Files.size(chunk);
            if (length == 0 || random.nextInt(chunks.size()) > 1) {
                continue;
            }
            try (FileChannel channel = FileChannel.open(chunk, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
                long at = (long) (random.nextDouble() * length);
                ByteBuffer one = ByteBuffer.allocate(1);
                channel.read(one, at);
                one.put(0, (byte) (one.get(0) ^ 0x5A)).rewind();
                channel.write(one, at);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
    }
}
