package dev.plinth.integration;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.plinth.client.PlinthClient;
import dev.plinth.client.PlinthFile;
import dev.plinth.common.ErrorCode;
import dev.plinth.common.Layout;
import dev.plinth.common.PlinthException;
import io.netty.buffer.ByteBuf;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Data-on-MDT: the first {@code mdtBytes} of a file live in the metadata service. A small file
 * touches no target; a larger one is split at the boundary and reads back whole, through copies
 * and handed-out buffers, across a restart; truncation and writes with gaps read zeros where
 * nothing was written.
 */
class DataOnMdtTest {
    private static final int MDT_BYTES = 64 << 10;
    private static final Layout LAYOUT = new Layout(2, 64 << 10, 1 << 20, "default", 1, List.of(), MDT_BYTES);

    @TempDir
    Path directory;

    @Test
    @Timeout(120)
    void smallFilesTouchNoTargetAndEveryByteSurvivesARestart() {
        Random random = new Random(11);
        byte[] small = new byte[4096];
        byte[] spanning = new byte[300_000]; // past the part, over both stripes
        random.nextBytes(small);
        random.nextBytes(spanning);
        try (MiniCluster cluster = MiniCluster.start(directory); PlinthClient client = cluster.client()) {
            try (PlinthFile file = client.create("/small", 0644, true, LAYOUT)) {
                file.write(0, ByteBuffer.wrap(small, 0, 1000));
                file.write(1000, ByteBuffer.wrap(small, 1000, small.length - 1000));
            }
            assertThat(chunkFiles()).as("chunk files after a 4 KiB file").isZero();
            assertThat(client.stat("/small").sizeBytes()).isEqualTo(small.length);
            try (PlinthFile file = client.create("/spanning", 0644, true, LAYOUT)) {
                file.write(0, ByteBuffer.wrap(spanning));
            }
            assertThat(chunkFiles()).as("chunk files of a file past its MDT part").isPositive();
            assertThat(readAll(client, "/small")).isEqualTo(small);
            assertThat(readAll(client, "/spanning")).isEqualTo(spanning);
            try (PlinthFile file = client.open("/spanning", false)) {
                int from = MDT_BYTES - 100;
                assertThat(handedOut(file, from, 1000)).isEqualTo(Arrays.copyOfRange(spanning, from, from + 1000));
                assertThat(handedOut(file, 0, spanning.length)).isEqualTo(spanning);
            }
        }
        try (MiniCluster cluster = MiniCluster.start(directory); PlinthClient client = cluster.client()) {
            assertThat(readAll(client, "/small")).as("after a restart").isEqualTo(small);
            assertThat(readAll(client, "/spanning")).as("after a restart").isEqualTo(spanning);
            assertThat(client.stat("/small").layout().mdtBytes()).isEqualTo(MDT_BYTES);
        }
    }

    @Test
    @Timeout(120)
    void whatWasNeverWrittenReadsAsZeros() {
        byte[] data = new byte[10_000];
        new Random(12).nextBytes(data);
        try (MiniCluster cluster = MiniCluster.start(directory); PlinthClient client = cluster.client()) {
            try (PlinthFile file = client.create("/cut", 0644, true, LAYOUT)) {
                file.write(0, ByteBuffer.wrap(data));
            }
            try (PlinthFile file = client.open("/cut", true)) {
                file.truncate(100);
                file.truncate(50_000);
            }
            byte[] expected = new byte[50_000];
            System.arraycopy(data, 0, expected, 0, 100);
            assertThat(readAll(client, "/cut")).as("cut to 100 bytes, grown to 50,000").isEqualTo(expected);

            // two runs with a gap in one handle, read back before and after close
            try (PlinthFile file = client.create("/gaps", 0644, true, LAYOUT)) {
                file.write(0, ByteBuffer.wrap(data, 0, 10));
                file.write(30_000, ByteBuffer.wrap(data, 10, 10));
                file.write(5, ByteBuffer.wrap(data, 20, 10)); // overlaps the first run, which went out with the second write
                byte[] gaps = new byte[30_010];
                System.arraycopy(data, 0, gaps, 0, 5);
                System.arraycopy(data, 20, gaps, 5, 10);
                System.arraycopy(data, 10, gaps, 30_000, 10);
                ByteBuffer own = ByteBuffer.allocate(gaps.length);
                assertThat(file.read(0, own)).isEqualTo(gaps.length);
                assertThat(own.array()).as("a handle reads its own writes").isEqualTo(gaps);
                file.close();
                assertThat(readAll(client, "/gaps")).isEqualTo(gaps);
            }
        }
    }

    @Test
    @Timeout(120)
    void aWholeSmallFileIsOneChangeThatReplacesOrRefusesAndLeavesNothingWhenRefused() throws Exception {
        try (MiniCluster cluster = MiniCluster.start(directory); PlinthClient client = cluster.client()) {
            long dir = client.mkdirs("/put", 0755).inodeId();
            client.setLayout("/put", LAYOUT);
            long inodes = client.statFs().inodes();
            byte[] first = "first version".getBytes(java.nio.charset.StandardCharsets.UTF_8);
            byte[] second = new byte[MDT_BYTES];
            new Random(13).nextBytes(second);
            var xattr = new dev.plinth.wire.messages.MetaMessages.Xattr("user.v", new byte[] {1});
            client.objects().putWhole(dir, "k", 0644, first, 7_000_000_000L, List.of(xattr), true);
            assertThat(readAll(client, "/put/k")).isEqualTo(first);
            assertThat(client.stat("/put/k").mtimeNanos()).isEqualTo(7_000_000_000L);
            assertThat(client.stat("/put/k").sizeBytes()).isEqualTo(first.length);
            assertThat(client.stat("/put/k").mode()).isEqualTo(0100644);
            assertThat(client.getXattr(client.stat("/put/k").inodeId(), "user.v")).containsExactly(1);
            assertThatThrownBy(() -> client.objects().putWhole(dir, "k", 0644, second, 1, List.of(), true))
                    .isInstanceOfSatisfying(PlinthException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.ALREADY_EXISTS));
            assertThatThrownBy(() -> client.objects().putWhole(dir, "big", 0644, new byte[MDT_BYTES + 1], 1, List.of(), false))
                    .isInstanceOfSatisfying(PlinthException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.INVALID_ARGUMENT));
            assertThat(client.statFs().inodes()).as("refused puts leave no file").isEqualTo(inodes + 1);
            assertThat(mdtDataBytes(cluster)).isEqualTo(first.length);
            client.objects().putWhole(dir, "k", 0644, second, 8_000_000_000L, List.of(), false);
            assertThat(readAll(client, "/put/k")).isEqualTo(second);
            assertThat(client.statFs().inodes()).as("the replaced file went").isEqualTo(inodes + 1);
            assertThat(mdtDataBytes(cluster)).as("and its bytes with it").isEqualTo(second.length);
            try (PlinthFile file = client.open("/put/k", true)) {
                file.truncate(1000);
            }
            assertThat(mdtDataBytes(cluster)).isEqualTo(1000);
            client.delete("/put/k");
            assertThat(mdtDataBytes(cluster)).isZero();
            assertThat(chunkFiles()).isZero();
        }
    }

    @Test
    @Timeout(120)
    void aStatCanBringTheFilesMdtPartIfItIsSmallEnoughAndReadable() {
        try (MiniCluster cluster = MiniCluster.start(directory); PlinthClient client = cluster.client();
             PlinthClient stranger = cluster.client(new dev.plinth.common.Credentials(4242, 4242, List.of()))) {
            long dir = client.mkdirs("/s", 0755).inodeId();
            client.setLayout("/s", LAYOUT);
            byte[] bytes = "small".getBytes(java.nio.charset.StandardCharsets.UTF_8);
            client.objects().putWhole(dir, "open", 0644, bytes, 1, List.of(), false);
            client.objects().putWhole(dir, "private", 0600, bytes, 1, List.of(), false);
            try (PlinthFile file = client.create("/s/grown", 0644, true, LAYOUT)) {
                file.write(MDT_BYTES, ByteBuffer.wrap(bytes)); // past the part: not all on the MDT
            }
            try (PlinthFile file = client.create("/s/holes", 0644, true, LAYOUT)) {
                file.truncate(100); // nothing stored: all zeros
            }
            assertThat(stranger.objects().statWithXattrAndBytes("/s/open", null, 1 << 20).fileBytes()).isEqualTo(bytes);
            assertThat(stranger.objects().statWithXattrAndBytes("/s/open", null, 4).fileBytes()).as("larger than asked").isNull();
            assertThat(stranger.objects().statWithXattrAndBytes("/s/private", null, 1 << 20).fileBytes()).as("not readable").isNull();
            assertThat(client.objects().statWithXattrAndBytes("/s/private", null, 1 << 20).fileBytes()).isEqualTo(bytes);
            // a file past its part: the part alone (nothing written there: zeros), for a reader to take the rest from the chunks
            assertThat(client.objects().statWithXattrAndBytes("/s/grown", null, 1 << 20).fileBytes()).isEqualTo(new byte[MDT_BYTES]);
            assertThat(client.objects().statWithXattrAndBytes("/s/grown", null, MDT_BYTES - 1).fileBytes()).as("a part larger than asked").isNull();
            assertThat(client.objects().statWithXattrAndBytes("/s/holes", null, 1 << 20).fileBytes()).isEqualTo(new byte[100]);
            assertThat(client.objects().statWithXattrAndBytes("/s", null, 1 << 20).fileBytes()).as("a directory").isNull();
        }
    }

    @Test
    @Timeout(180)
    void manyLargePartsAtOnceAreLoggedInEntriesOfBoundedSize() throws Exception {
        Layout largest = new Layout(1, 1 << 20, 4 << 20, "default", 1, List.of(), Layout.MDT_BYTES_MAX);
        // 128 MiB of changes queued together: one log entry of them all would be past the codec's 64 MiB, and entries of
        // 8 MiB lost the group its leadership; each change is also past the RPC's old 1 MiB message bound
        int writers = 128;
        try (MiniCluster cluster = MiniCluster.start(directory); PlinthClient client = cluster.client()) {
            long dir = client.mkdirs("/many", 0755).inodeId();
            client.setLayout("/many", largest);
            java.util.concurrent.CountDownLatch start = new java.util.concurrent.CountDownLatch(1);
            List<java.util.concurrent.Future<?>> puts = new java.util.ArrayList<>();
            try (var threads = java.util.concurrent.Executors.newVirtualThreadPerTaskExecutor()) {
                for (int i = 0; i < writers; i++) {
                    int index = i;
                    puts.add(threads.submit(() -> {
                        byte[] bytes = new byte[Layout.MDT_BYTES_MAX];
                        Arrays.fill(bytes, (byte) index);
                        start.await();
                        client.objects().putWhole(dir, "f" + index, 0644, bytes, 1, List.of(), false);
                        return null;
                    }));
                }
                start.countDown();
                for (var put : puts) {
                    put.get();
                }
            }
            for (int i = 0; i < writers; i += 31) {
                byte[] expected = new byte[Layout.MDT_BYTES_MAX];
                Arrays.fill(expected, (byte) i);
                assertThat(readAll(client, "/many/f" + i)).isEqualTo(expected);
            }
        }
    }

    @Test
    void layoutsTakeOnlyWholeUnitsUpToTheLimit() {
        for (int bad : new int[] {-1, 1000, 100_000, Layout.MDT_BYTES_MAX + (64 << 10)}) {
            assertThatThrownBy(() -> new Layout(1, 1 << 20, 4 << 20, "default", 1, List.of(), bad).validate())
                    .isInstanceOfSatisfying(PlinthException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.INVALID_ARGUMENT));
        }
        assertThat(new Layout(1, 1 << 20, 4 << 20, "default", 1, List.of(), Layout.MDT_BYTES_MAX).validate().mdtBytes())
                .isEqualTo(Layout.MDT_BYTES_MAX);
    }

    /** The MDT's total of stored Data-on-MDT bytes, as its gauge shows it. */
    private static long mdtDataBytes(MiniCluster cluster) {
        return (long) cluster.metric("plinth_meta_data_bytes{mdt=\"0\"}");
    }

    private static byte[] readAll(PlinthClient client, String path) {
        return ClusterSmokeTest.readAll(client, path);
    }

    private static byte[] handedOut(PlinthFile file, long offset, int length) {
        List<ByteBuf> buffers = file.readBuffers(offset, length);
        ByteBuffer joined = ByteBuffer.allocate(length);
        for (ByteBuf buffer : buffers) {
            int count = buffer.readableBytes();
            buffer.getBytes(buffer.readerIndex(), joined.slice(joined.position(), count));
            joined.position(joined.position() + count);
            buffer.release();
        }
        return Arrays.copyOf(joined.array(), joined.position());
    }

    private long chunkFiles() {
        try (Stream<Path> files = Files.walk(directory)) {
            return files.filter(path -> path.getFileName().toString().endsWith(".data")).count();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
