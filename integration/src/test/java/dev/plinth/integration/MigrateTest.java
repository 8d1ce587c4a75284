package dev.plinth.integration;

import static org.assertj.core.api.Assertions.assertThat;

import dev.plinth.client.Migration;
import dev.plinth.client.PlinthClient;
import dev.plinth.client.PlinthFile;
import dev.plinth.common.InodeId;
import dev.plinth.common.Layout;
import dev.plinth.wire.messages.MgmtMessages.PoolOperation;
import dev.plinth.wire.messages.MgmtMessages.UpdatePool;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code plinth migrate} while the file is in use: a writer appends (open, write, close: each
 * close acknowledges), a reader verifies what it finds, and the file is migrated from one stripe
 * to four, to erasure coding 4+2, to another pool, to lz4, to erasure coding with zstd and back,
 * each migration retrying while the writer has the file open. Nothing acknowledged is lost, no
 * reader sees a wrong byte, and the copies' old chunks are removed.
 */
class MigrateTest {
    private static final int APPEND = 96 << 10;

    @TempDir
    Path directory;

    /** The byte every writer puts at {@code offset}: a reader can check any range without a model. */
    private static byte byteAt(long offset) {
        return (byte) (offset * 31 + (offset >>> 11));
    }

    private static ByteBuffer bytes(long offset, int length) {
        ByteBuffer buffer = ByteBuffer.allocate(length);
        for (int i = 0; i < length; i++) {
            buffer.put(i, byteAt(offset + i));
        }
        return buffer;
    }

    @Test
    void filesMigrateBetweenLayoutsWhileWrittenAndRead() throws Exception {
        try (MiniCluster cluster = MiniCluster.start(directory, MiniCluster.testConfig().with("server.targets", "6"));
             PlinthClient client = cluster.client(); PlinthClient writerClient = cluster.client(); PlinthClient readerClient = cluster.client()) {
            client.updatePool(new UpdatePool(PoolOperation.CREATE, "capacity", List.of(5, 6)));
            Layout oneStripe = new Layout(1, 256 << 10, 1 << 20, Layout.DEFAULT_POOL, 1, List.of());
            try (PlinthFile file = client.create("/live", 0644, true, oneStripe)) {
                file.write(0, bytes(0, 3 << 20));
            }
            AtomicLong acknowledged = new AtomicLong(3 << 20);
            AtomicBoolean stop = new AtomicBoolean();
            ConcurrentLinkedQueue<String> failures = new ConcurrentLinkedQueue<>();
            Thread writer = Thread.ofPlatform().start(() -> {
                // bursts of appends, then a pause: a migration swaps in a pause (never while the file is open, nor after
                // it changed during the copy); a file written without pause is never migrated, as with Lustre's lfs migrate
                for (int append = 0; !stop.get() && acknowledged.get() < (48 << 20); append++) {
                    long at = acknowledged.get();
                    try (PlinthFile file = writerClient.open("/live", true)) {
                        file.write(at, bytes(at, APPEND));
                    } catch (RuntimeException e) {
                        failures.add("append at " + at + ": " + e);
                        return;
                    }
                    acknowledged.addAndGet(APPEND);
                    sleep(append % 10 == 9 ? 2500 : 20);
                }
            });
            Thread reader = Thread.ofPlatform().start(() -> {
                while (!stop.get()) {
                    long known = acknowledged.get();
                    try (PlinthFile file = readerClient.open("/live", false)) {
                        long size = file.size();
                        if (size < known) {
                            failures.add("size " + size + " after " + known + " bytes were acknowledged");
                        }
                        int length = (int) Math.min(size, 2 << 20);
                        long offset = Math.max(0, size - length - (size / 3));
                        ByteBuffer back = ByteBuffer.allocate(length);
                        int done = 0;
                        while (done < length) {
                            int read = file.read(offset + done, back.slice(done, length - done));
                            if (read <= 0) {
                                break;
                            }
                            done += read;
                        }
                        if (done != length || !back.equals(bytes(offset, length))) {
                            failures.add("wrong bytes in [" + offset + ", " + (offset + length) + ") of a file of " + size);
                        }
                    } catch (RuntimeException e) {
                        failures.add("read: " + e);
                    }
                    sleep(20);
                }
            });
            Layout fourStripes = new Layout(4, 256 << 10, 1 << 20, Layout.DEFAULT_POOL, 1, List.of());
            Layout erasureCoded = new Layout(1, 256 << 10, 256 << 10, Layout.DEFAULT_POOL, 1, List.of()).withErasureCoding(4, 2);
            Layout otherPool = new Layout(2, 1 << 20, 1 << 20, "capacity", 1, List.of());
            Layout lz4 = fourStripes.withCompression(Layout.Encoding.LZ4, 0);
            Layout erasureCodedZstd = erasureCoded.withCompression(Layout.Encoding.ZSTD, 3);
            for (Layout target : List.of(fourStripes, erasureCoded, otherPool, lz4, erasureCodedZstd, oneStripe)) {
                Migration.Result result = Migration.migrate(client, "/live", target, bytes -> { });
                assertThat(result.outcome()).as("to %s: %s", target, result.note()).isEqualTo(Migration.Outcome.MIGRATED);
                Layout now = client.stat("/live").layout();
                assertThat(now.stripeCount()).isEqualTo(target.stripeCount());
                assertThat(now.protection()).isEqualTo(target.protection());
                assertThat(now.pool()).isEqualTo(target.pool());
                assertThat(now.compressionName()).isEqualTo(target.compressionName());
                if (target.pool().equals("capacity")) {
                    assertThat(now.chainIds()).allMatch(chain -> chain == 5 || chain == 6);
                }
                assertThat(Migration.migrate(client, "/live", target, bytes -> { }).outcome()).isEqualTo(Migration.Outcome.UNCHANGED);
                System.out.printf("migrated to %s after %d copies (%d bytes acknowledged so far)%n", target, result.attempts(), acknowledged.get());
                assertThat(writer.isAlive()).as("the writer was appending throughout").isTrue();
            }
            stop.set(true);
            writer.join(60_000);
            reader.join(60_000);
            assertThat(failures).isEmpty();
            long size = client.stat("/live").sizeBytes();
            assertThat(size).isEqualTo(acknowledged.get());
            try (PlinthFile file = client.open("/live", false)) {
                ByteBuffer all = ByteBuffer.allocate((int) size);
                while (all.hasRemaining() && file.read(all.position(), all) > 0) {
                    // reads until full
                }
                assertThat(all.flip().equals(bytes(0, (int) size))).as("every acknowledged append").isTrue();
            }
            // the copies' old chunks go with the copies (removal waits a few seconds for readers without an open)
            var attributes = client.stat("/live");
            String live = InodeId.format(attributes.layout().chunkOwner(attributes.inodeId())); // the last copy's id names them
            long deadline = System.nanoTime() + 30_000_000_000L;
            Set<String> inodes = chunkInodes();
            while (!inodes.equals(Set.of(live)) && System.nanoTime() < deadline) {
                Thread.sleep(200);
                inodes = chunkInodes();
            }
            assertThat(inodes).as("inodes with chunks on the targets").containsExactly(live);
        }
    }

    @Test
    void aFileKeptOpenIsLeftAsItWasAndSaidToBeBusy() throws Exception {
        try (MiniCluster cluster = MiniCluster.start(directory); PlinthClient client = cluster.client()) {
            Layout oneStripe = new Layout(1, 256 << 10, 1 << 20, Layout.DEFAULT_POOL, 1, List.of());
            try (PlinthFile file = client.create("/held", 0644, true, oneStripe)) {
                file.write(0, bytes(0, 1 << 20));
            }
            try (PlinthFile held = client.open("/held", true)) {
                Migration.Result result = Migration.migrate(client, "/held", new Layout(2, 256 << 10, 1 << 20, Layout.DEFAULT_POOL, 1, List.of()),
                        bytes -> { });
                assertThat(result.outcome()).isEqualTo(Migration.Outcome.BUSY);
                assertThat(result.note()).contains("open");
                held.write(1 << 20, bytes(1 << 20, 1000));
            }
            assertThat(client.stat("/held").layout().stripeCount()).isEqualTo(1);
            try (PlinthFile file = client.open("/held", false)) {
                ByteBuffer all = ByteBuffer.allocate((1 << 20) + 1000);
                file.read(0, all);
                assertThat(all.flip().equals(bytes(0, (1 << 20) + 1000))).isTrue();
            }
        }
    }

    private Set<String> chunkInodes() throws IOException {
        try (Stream<Path> walk = Files.walk(directory.resolve("targets"))) {
            return walk.filter(path -> path.getFileName().toString().endsWith(".data"))
                    .map(path -> path.getParent().getFileName().toString()).collect(Collectors.toSet());
        }
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
