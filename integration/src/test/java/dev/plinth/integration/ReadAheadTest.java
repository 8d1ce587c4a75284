package dev.plinth.integration;

import static org.assertj.core.api.Assertions.assertThat;

import dev.plinth.client.PlinthClient;
import dev.plinth.client.PlinthFile;
import dev.plinth.common.Credentials;
import dev.plinth.common.Layout;
import io.netty.buffer.ByteBuf;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Read-ahead under the access patterns FUSE produces: reads that arrive out of order around the
 * stream, and a handle that reads, then grows the file by writing, then reads on past its old end;
 * and reads that hand out the received buffers instead of copying them.
 */
class ReadAheadTest {
    @TempDir
    Path directory;

    @Test
    @Timeout(120)
    void readsAcrossTheOldEndOfAGrowingFile() {
        try (MiniCluster cluster = MiniCluster.start(directory); PlinthClient client = cluster.client();
             PlinthFile file = client.create("/growing", 0644, true, null)) {
            byte[] model = new byte[3_000_000];
            new Random(7).nextBytes(model);
            file.write(0, ByteBuffer.wrap(model, 0, 100));
            ByteBuffer first = ByteBuffer.allocate(100);
            assertThat(file.read(0, first)).isEqualTo(100); // a read-ahead unit now ends at byte 100
            int later = 2 << 20; // in a later unit: the write does not touch the unit that ends at byte 100
            file.write(later, ByteBuffer.wrap(model, later, model.length - later));
            Arrays.fill(model, 100, later, (byte) 0); // the hole between
            ByteBuffer rest = ByteBuffer.allocate(model.length - 100);
            assertThat(file.read(100, rest)).isEqualTo(model.length - 100);
            assertThat(rest.array()).isEqualTo(Arrays.copyOfRange(model, 100, model.length));
        }
    }

    /**
     * Random reads of one handle from many threads at once (a FUSE file with O_DIRECT reads in
     * flight, a map-style dataset's workers): each gets its own bytes, while a writer of the same
     * handle changes other ranges, and a stream read goes on between them.
     */
    @Test
    @Timeout(120)
    void concurrentRandomReadsOfOneHandleGetTheirOwnBytes() throws Exception {
        try (MiniCluster cluster = MiniCluster.start(directory); PlinthClient client = cluster.client()) {
            byte[] model = new byte[16 << 20];
            new Random(21).nextBytes(model);
            try (PlinthFile file = client.create("/random", 0644, true, null)) {
                file.write(0, ByteBuffer.wrap(model));
            }
            try (PlinthFile file = client.open("/random", true)) {
                List<Thread> readers = new ArrayList<>();
                List<Throwable> failures = java.util.Collections.synchronizedList(new ArrayList<>());
                int stable = 12 << 20; // the writer changes bytes past this, the readers read below it
                for (int t = 0; t < 16; t++) {
                    long seed = t;
                    readers.add(Thread.ofPlatform().start(() -> {
                        Random random = new Random(seed);
                        try {
                            for (int i = 0; i < 200; i++) {
                                int length = 1 + random.nextInt(8192);
                                int offset = random.nextInt(stable - length);
                                ByteBuffer buffer = ByteBuffer.allocate(length);
                                assertThat(file.read(offset, buffer)).isEqualTo(length);
                                assertThat(buffer.array()).as("%d bytes at %d", length, offset)
                                        .isEqualTo(Arrays.copyOfRange(model, offset, offset + length));
                            }
                        } catch (Throwable e) {
                            failures.add(e);
                        }
                    }));
                }
                Random random = new Random(99);
                for (int i = 0; i < 50; i++) {
                    byte[] bytes = new byte[4096];
                    random.nextBytes(bytes);
                    int offset = stable + random.nextInt((4 << 20) - bytes.length);
                    file.write(offset, ByteBuffer.wrap(bytes));
                    System.arraycopy(bytes, 0, model, offset, bytes.length);
                }
                for (Thread reader : readers) {
                    reader.join();
                }
                assertThat(failures).isEmpty();
                ByteBuffer all = ByteBuffer.allocate(model.length);
                for (int at = 0; at < model.length; ) {
                    at += file.read(at, all.position(at).limit(Math.min(model.length, at + (1 << 20))).slice());
                }
                assertThat(all.array()).as("the whole file with the writes, read as a stream").isEqualTo(model);
            }
        }
    }

    @Test
    @Timeout(120)
    void outOfOrderReadsAroundTheStream() {
        try (MiniCluster cluster = MiniCluster.start(directory); PlinthClient client = cluster.client()) {
            byte[] model = new byte[12 << 20];
            new Random(8).nextBytes(model);
            try (PlinthFile file = client.create("/stream", 0644, true, null)) {
                file.write(0, ByteBuffer.wrap(model));
            }
            try (PlinthFile file = client.open("/stream", false)) {
                int unit = 1 << 20;
                // what kernel read-ahead does: the next units requested before (or after) the current one
                int[] order = {0, 2, 1, 3, 5, 4, 6, 8, 7, 9, 11, 10, 0, 1};
                for (int index : order) {
                    ByteBuffer buffer = ByteBuffer.allocate(unit);
                    assertThat(file.read((long) index * unit, buffer)).isEqualTo(unit);
                    assertThat(buffer.array()).as("unit %d", index).isEqualTo(Arrays.copyOfRange(model, index * unit, (index + 1) * unit));
                }
            }
        }
    }

    @Test
    @Timeout(120)
    void buffersHandedOutHoldTheSameBytesAsCopies() {
        try (MiniCluster cluster = MiniCluster.start(directory); PlinthClient client = cluster.client()) {
            long seed = System.nanoTime();
            Random random = new Random(seed);
            // three stripes of 64 KiB, a hole in the middle, and an end inside a stripe
            byte[] model = new byte[5 << 20];
            random.nextBytes(model);
            int holeStart = 2 << 20;
            int holeEnd = holeStart + 700_000;
            Arrays.fill(model, holeStart, holeEnd, (byte) 0);
            try (PlinthFile file = client.create("/striped", 0644, true, new Layout(3, 64 << 10, 256 << 10, Layout.DEFAULT_POOL, 1, List.of()))) {
                file.write(0, ByteBuffer.wrap(model, 0, holeStart));
                file.write(holeEnd, ByteBuffer.wrap(model, holeEnd, model.length - holeEnd));
            }
            try (PlinthFile file = client.open("/striped", false)) {
                // a sequential pass in pieces of odd sizes, then reads anywhere
                assertThat(readAll(file, 0, model.length, 1_000_003)).as("seed %d", seed).isEqualTo(model);
                for (int i = 0; i < 40; i++) {
                    int offset = random.nextInt(model.length);
                    int length = random.nextInt(3 << 20);
                    int end = Math.min(model.length, offset + length);
                    assertThat(readAll(file, offset, length, length + 1)).as("seed %d, %d bytes at %d", seed, length, offset)
                            .isEqualTo(Arrays.copyOfRange(model, offset, end));
                }
                assertThat(file.readBuffers(model.length, 10)).isEmpty();
            }
        }
    }

    @Test
    @Timeout(120)
    void manyStreamsShareTheClientsReadAheadAndGiveItBack() {
        int unit = 1 << 20;
        var config = MiniCluster.testConfig().with("client.readahead-bytes", Long.toString(8L * unit))
                .with("client.readahead-total-bytes", Long.toString(10L * unit));
        try (MiniCluster cluster = MiniCluster.start(directory); PlinthClient client = cluster.client(Credentials.ROOT, config)) {
            byte[] model = new byte[24 << 20];
            new Random(9).nextBytes(model);
            try (PlinthFile file = client.create("/shared", 0644, true, null)) {
                file.write(0, ByteBuffer.wrap(model));
            }
            List<PlinthFile> streams = new ArrayList<>();
            try {
                for (int i = 0; i < 4; i++) {
                    streams.add(client.open("/shared", false));
                }
                // four streams that would each fetch 8 units ahead: together they hold at most the 10 of the budget,
                // and every one still reads what it asks for
                for (int step = 0; step < 24; step++) {
                    for (PlinthFile stream : streams) {
                        ByteBuffer buffer = ByteBuffer.allocate(unit);
                        assertThat(stream.read((long) step * unit, buffer)).isEqualTo(unit);
                        assertThat(buffer.array()).as("unit %d", step).isEqualTo(Arrays.copyOfRange(model, step * unit, (step + 1) * unit));
                        assertThat(client.readAheadBytesHeld()).isBetween(0L, 10L * unit);
                    }
                }
            } finally {
                streams.forEach(PlinthFile::close);
            }
            assertThat(client.readAheadBytesHeld()).as("closed files give their read-ahead back").isZero();
            // one stream alone gets its whole window again
            try (PlinthFile file = client.open("/shared", false)) {
                file.read(0, ByteBuffer.allocate(unit));
                assertThat(client.readAheadBytesHeld()).isEqualTo(8L * unit);
            }
            assertThat(client.readAheadBytesHeld()).isZero();
        }
    }

    @Test
    @Timeout(120)
    void aReadAheadUnitIsAStripeOfUpTo4MiBAndOneRequest() {
        try (MiniCluster cluster = MiniCluster.start(directory); PlinthClient client = cluster.client()) {
            byte[] model = new byte[32 << 20];
            new Random(11).nextBytes(model);
            // read in 1 MiB calls, as the bench and a mount do: how many requests reach the targets depends on the layout alone
            for (int stripeBytes : new int[] {4 << 20, 1 << 20, 256 << 10}) {
                String path = "/striped-" + stripeBytes;
                try (PlinthFile file = client.create(path, 0644, true, new Layout(2, stripeBytes, 4 << 20, Layout.DEFAULT_POOL, 1, List.of(), 0))) {
                    file.write(0, ByteBuffer.wrap(model));
                }
                double before = readChunkRequests(cluster);
                double bytesBefore = bytesRead(cluster);
                try (PlinthFile file = client.open(path, false)) {
                    for (int at = 0; at < model.length; at += 1 << 20) {
                        ByteBuffer buffer = ByteBuffer.allocate(1 << 20);
                        assertThat(file.read(at, buffer)).isEqualTo(1 << 20);
                        assertThat(buffer.array()).isEqualTo(Arrays.copyOfRange(model, at, at + (1 << 20)));
                    }
                }
                // 4 MiB stripes: a unit is one stripe, one request, but the first read's unit goes as two (the MiB it
                // waits for and the rest); 1 MiB: one each; 256 KiB: a 1 MiB unit of four stripes
                int expected = stripeBytes == 4 << 20 ? 9 : stripeBytes == 1 << 20 ? 32 : 128;
                assertThat(readChunkRequests(cluster) - before).as("read requests for stripes of %d bytes", stripeBytes).isEqualTo(expected);
                assertThat(bytesRead(cluster) - bytesBefore).as("bytes the targets read").isEqualTo(model.length);
            }
        }
    }

    /**
     * A stream's first read waits for the bytes it asks for alone, not for the whole unit they lie in
     * (design note 70), and the rest of the unit comes beside it; reads that then arrive out of order,
     * as a mount's concurrent reads do, get their bytes, and only a read behind where the first one
     * ended is fetched again.
     */
    @Test
    @Timeout(120)
    void aStreamsFirstReadFetchesItsOwnBytesBesideTheRestOfItsUnit() {
        try (MiniCluster cluster = MiniCluster.start(directory); PlinthClient client = cluster.client()) {
            byte[] model = new byte[16 << 20];
            new Random(12).nextBytes(model);
            try (PlinthFile file = client.create("/first", 0644, true, new Layout(1, 4 << 20, 4 << 20, Layout.DEFAULT_POOL, 1, List.of(), 0))) {
                file.write(0, ByteBuffer.wrap(model));
            }
            double before = readChunkRequests(cluster);
            double bytesBefore = bytesRead(cluster);
            try (PlinthFile file = client.open("/first", false)) {
                // 128 KiB reads out of order, as the kernel sends a mount's, and one that overlaps the first
                for (int at : new int[] {0, 256 << 10, 128 << 10, 64 << 10, 384 << 10}) {
                    ByteBuffer buffer = ByteBuffer.allocate(128 << 10);
                    assertThat(file.read(at, buffer)).isEqualTo(128 << 10);
                    assertThat(buffer.array()).isEqualTo(Arrays.copyOfRange(model, at, at + (128 << 10)));
                }
                ByteBuffer rest = ByteBuffer.allocate(model.length - (512 << 10));
                while (rest.hasRemaining()) {
                    assertThat(file.read((512 << 10) + rest.position(), rest)).isPositive();
                }
                assertThat(rest.array()).isEqualTo(Arrays.copyOfRange(model, 512 << 10, model.length));
            }
            // the first read's 128 KiB, the rest of its unit, three units ahead, and the overlapping read's own bytes
            assertThat(readChunkRequests(cluster) - before).isEqualTo(6);
            assertThat(bytesRead(cluster) - bytesBefore).as("bytes the targets read").isEqualTo(model.length + (128 << 10));
        }
    }

    private static double bytesRead(MiniCluster cluster) {
        double total = 0;
        for (int target = 0; target < 8; target++) {
            total += cluster.metric("plinth_target_io_bytes_total{direction=\"read\",target=\"" + target + "\"}", 0);
        }
        return total;
    }

    private static double readChunkRequests(MiniCluster cluster) {
        return cluster.metric("plinth_rpc_server_requests_total{code=\"OK\",message=\"ReadChunk\"}", 0);
    }

    /** {@code length} bytes from {@code offset} (fewer at the end of the file) through readBuffers, {@code step} at a time. */
    private static byte[] readAll(PlinthFile file, long offset, int length, int step) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (long at = offset; at < offset + length; ) {
            int asked = (int) Math.min(step, offset + length - at);
            List<ByteBuf> buffers = file.readBuffers(at, asked);
            if (buffers.isEmpty()) {
                break;
            }
            // one call holds everything asked for, up to the end of the file
            assertThat(buffers.stream().mapToInt(ByteBuf::readableBytes).sum()).isEqualTo((int) Math.min(asked, file.size() - at));
            for (ByteBuf buffer : buffers) {
                byte[] bytes = new byte[buffer.readableBytes()];
                buffer.getBytes(buffer.readerIndex(), bytes);
                out.writeBytes(bytes);
                at += bytes.length;
                buffer.release();
            }
        }
        return out.toByteArray();
    }
}
