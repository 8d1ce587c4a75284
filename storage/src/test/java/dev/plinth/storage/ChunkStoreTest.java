package dev.plinth.storage;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.plinth.common.Crc32cBlocks;
import dev.plinth.common.ErrorCode;
import dev.plinth.common.PlinthException;
import dev.plinth.wire.messages.StorageMessages.ChunkEntry;
import dev.plinth.wire.messages.StorageMessages.ChunkId;
import io.netty.buffer.ByteBufUtil;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.io.TempDir;

class ChunkStoreTest {
    @TempDir
    Path directory;

    private static void write(ChunkStore store, ChunkId chunk, int offset, byte[] bytes) {
        store.write(chunk, offset, ByteBuffer.wrap(bytes), crcs(bytes, offset));
    }

    private static java.util.List<Integer> crcs(byte[] bytes, int offset) {
        return java.util.Arrays.stream(Crc32cBlocks.segmentCrcs(ByteBuffer.wrap(bytes), offset)).boxed().toList();
    }

    /** Reads through the same path the wire takes (file region + CRCs) and checks the CRCs as the client does. */
    private static byte[] read(ChunkStore store, ChunkId chunk, int offset, int length) throws IOException {
        ChunkStore.ReadResult result = store.read(chunk, offset, length);
        byte[] out = new byte[length];
        if (result.byteCount() == 0) {
            return out;
        }
        ByteBuffer bytes = ByteBuffer.allocate(result.byteCount());
        io.netty.buffer.ByteBuf uncached = store.readIfUncached(result); // what the target sends when it reads past the cache
        if (uncached != null) {
            assertThat(uncached.readableBytes()).isEqualTo(result.byteCount());
            uncached.readBytes(bytes);
            uncached.release();
        } else {
            try (FileChannel channel = FileChannel.open(result.file())) {
                channel.read(bytes, result.alignedOffset());
            }
        }
        bytes.flip();
        int block = Crc32cBlocks.BLOCK_BYTES;
        for (int i = 0; i < result.blockCrcs().length; i++) {
            ByteBuffer slice = bytes.duplicate().position(i * block).limit(Math.min(bytes.limit(), (i + 1) * block));
            if (Crc32cBlocks.crc(slice) != result.blockCrcs()[i]) {
                throw new PlinthException(ErrorCode.CHECKSUM_MISMATCH, "block " + i);
            }
        }
        int available = Math.min(length, result.alignedOffset() + result.byteCount() - offset);
        bytes.position(offset - result.alignedOffset());
        bytes.get(out, 0, Math.max(0, available));
        return out;
    }

    @ParameterizedTest(name = "direct I/O {0}")
    @ValueSource(booleans = {true, false})
    void randomWritesMatchModelAndSurviveReopen(boolean directIo) throws IOException {
        long seed = System.nanoTime();
        Random random = new Random(seed);
        ChunkId chunk = new ChunkId(77, 0, 3);
        int chunkBytes = 3 << 20;
        byte[] model = new byte[chunkBytes];
        int modelLength = 0;
        ChunkStore store = ChunkStore.open(directory.resolve("t1"), 1, 0, 0, new ChunkStore.DirectIo(directIo ? 2 : 0, directIo));
        for (int round = 0; round < 300; round++) {
            // half the writes block-aligned (the ones a target writes directly), some over 1 MiB (several direct pieces)
            boolean aligned = random.nextBoolean();
            int offset = aligned ? random.nextInt(model.length / 4096) * 4096 : random.nextInt(model.length - 1);
            int longest = Math.min(random.nextInt(8) == 0 ? 1_600_000 : 200_000, model.length - offset);
            int length = aligned && longest >= 4096 ? (1 + random.nextInt(longest / 4096)) * 4096 : 1 + random.nextInt(longest);
            if (random.nextInt(10) == 0) {
                int keep = random.nextInt(modelLength + 1);
                store.truncateObject(77, 0, 3L * chunkBytes + keep, chunkBytes);
                Arrays.fill(model, keep, model.length, (byte) 0);
                modelLength = Math.min(modelLength, keep);
                continue;
            }
            byte[] bytes = new byte[length];
            random.nextBytes(bytes);
            // data arrives in network buffers: direct, at any address (and now and then an aligned one)
            ByteBuffer buffer = ByteBuffer.allocateDirect(length + 8192);
            buffer = random.nextBoolean() ? buffer.alignedSlice(4096) : buffer.position(1 + random.nextInt(4095)).slice();
            buffer.put(bytes).flip();
            store.write(chunk, offset, buffer, crcs(bytes, offset));
            System.arraycopy(bytes, 0, model, offset, length);
            modelLength = Math.max(modelLength, offset + length);
            int readOffset = random.nextInt(modelLength);
            int readLength = random.nextInt(modelLength - readOffset + 1);
            assertThat(read(store, chunk, readOffset, readLength)).as("seed %d round %d", seed, round)
                    .isEqualTo(Arrays.copyOfRange(model, readOffset, readOffset + readLength));
        }
        store.verify(chunk);
        if (directIo) {
            assertThat(store.directBytesWritten()).as("bytes written with O_DIRECT (the temp dir's file system takes it)").isPositive();
            assertThat(store.directBytesRead()).as("bytes read with O_DIRECT").isPositive();
        } else {
            assertThat(store.directBytesWritten()).isZero();
            assertThat(store.directBytesRead()).isZero();
        }
        store.close();
        ChunkStore reopened = ChunkStore.open(directory.resolve("t1"), -1, 0, 0, new ChunkStore.DirectIo(directIo ? 2 : 0, directIo));
        assertThat(reopened.targetId()).isEqualTo(1);
        assertThat(read(reopened, chunk, 0, modelLength)).isEqualTo(Arrays.copyOf(model, modelLength));
        assertThat(reopened.usedBytes()).isEqualTo(modelLength);
        reopened.close();
    }

    @Test
    void longReadsOfUncachedRangesGoPastThePageCache() throws IOException {
        ChunkStore store = ChunkStore.open(directory.resolve("t"), 1, 0, 0, new ChunkStore.DirectIo(2, true));
        ChunkId chunk = new ChunkId(5, 0, 0);
        int length = ReadBuffers.LARGE_BUFFER_BYTES + 1000; // longer than a pool buffer; the tail is not a whole file-system block: it ends where the file ends
        byte[] bytes = new byte[length];
        new Random(7).nextBytes(bytes);
        ByteBuffer aligned = ByteBuffer.allocateDirect(length + 8192).alignedSlice(4096);
        aligned.put(bytes).flip();
        store.write(chunk, 0, aligned, crcs(bytes, 0)); // written past the cache, so nothing of it is cached

        ChunkStore.ReadResult whole = store.read(chunk, 0, length);
        io.netty.buffer.ByteBuf direct = store.readIfUncached(whole);
        assertThat(direct).as("an uncached long range is read with O_DIRECT").isNotNull();
        byte[] got = new byte[direct.readableBytes()];
        direct.readBytes(got);
        direct.release();
        assertThat(got).isEqualTo(bytes);
        // a read that fits one of the readers' own buffers; released, the buffer is used again
        for (int round = 0; round < 2; round++) {
            io.netty.buffer.ByteBuf first = store.readIfUncached(store.read(chunk, 0, ReadBuffers.LARGE_BUFFER_BYTES));
            assertThat(ByteBufUtil.getBytes(first)).isEqualTo(Arrays.copyOf(bytes, ReadBuffers.LARGE_BUFFER_BYTES));
            first.release();
        }
        assertThat(store.directBytesRead()).isEqualTo(length + 2L * ReadBuffers.LARGE_BUFFER_BYTES);

        assertThat(store.readIfUncached(store.read(chunk, 0, DirectReader.READ_BYTES_MIN / 2)))
                .as("a short read goes through the page cache").isNull();
        Files.readAllBytes(whole.file()); // now all of it is in the page cache
        assertThat(store.readIfUncached(whole)).as("a cached range is left to the cache (sendfile)").isNull();
        assertThat(store.directBytesRead()).isEqualTo(length + 2L * ReadBuffers.LARGE_BUFFER_BYTES);

        // damage behind the target's back: the direct read gives up, and the cached read reports it
        try (RandomAccessFile data = new RandomAccessFile(whole.file().toFile(), "rw")) {
            data.setLength(length / 2);
        }
        assertThat(store.readIfUncached(whole)).isNull();
        assertThatThrownBy(() -> store.readThroughCache(whole)).isInstanceOfSatisfying(PlinthException.class,
                e -> assertThat(e.code()).isEqualTo(ErrorCode.CHECKSUM_MISMATCH));
        store.close();
    }

    @Test
    void openingForReadNeverCreatesFiles() throws IOException {
        Path chunkDirectory = directory.resolve("t/chunks/00/0000000000000001");
        // no directory at all: absent, and nothing made
        assertThat(ChunkFile.open(chunkDirectory.resolve("0.0.data"), false, 1, null)).isNull();
        assertThat(chunkDirectory).doesNotExist();
        // a removal caught between its two deletes (meta goes first): absent, not an empty chunk brought back
        Files.createDirectories(chunkDirectory);
        Path data = chunkDirectory.resolve("0.1.data");
        Files.write(data, new byte[10]);
        assertThat(ChunkFile.open(data, false, 1, null)).isNull();
        Path meta = dev.plinth.common.ChunkFormat.metaPath(chunkDirectory.resolve("0.2.data"));
        Files.write(meta, new byte[0]);
        assertThat(ChunkFile.open(chunkDirectory.resolve("0.2.data"), false, 1, null)).isNull();
        assertThat(chunkDirectory.resolve("0.2.data")).doesNotExist();
    }

    @Test
    void corruptBlockIsDetectedNotReturned() throws IOException {
        ChunkStore store = ChunkStore.open(directory.resolve("t"), 1, 0);
        ChunkId chunk = new ChunkId(5, 1, 0);
        byte[] bytes = new byte[300_000];
        new Random(3).nextBytes(bytes);
        write(store, chunk, 0, bytes);
        store.close();
        Path data = directory.resolve("t/chunks/05/0000000000000005/1.0.data");
        try (RandomAccessFile file = new RandomAccessFile(data.toFile(), "rw")) {
            file.seek(70_000);
            file.write(file.read() ^ 0x40);
        }
        ChunkStore reopened = ChunkStore.open(directory.resolve("t"), 1, 0);
        assertThatThrownBy(() -> read(reopened, chunk, 65_536, 100)).isInstanceOfSatisfying(PlinthException.class,
                e -> assertThat(e.code()).isEqualTo(ErrorCode.CHECKSUM_MISMATCH));
        assertThatThrownBy(() -> reopened.verify(chunk)).isInstanceOf(PlinthException.class);
        // blocks that are intact still read
        assertThat(read(reopened, chunk, 0, 1000)).isEqualTo(Arrays.copyOf(bytes, 1000));
        reopened.close();
    }

    @Test
    void corruptedInTransitIsRejected() {
        ChunkStore store = ChunkStore.open(directory.resolve("t"), 1, 0);
        byte[] bytes = new byte[1000];
        assertThatThrownBy(() -> store.write(new ChunkId(5, 0, 0), 0, ByteBuffer.wrap(bytes), java.util.List.of(12345)))
                .isInstanceOfSatisfying(PlinthException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.CHECKSUM_MISMATCH));
        assertThat(store.usedBytes()).isZero();
        store.close();
    }

    @Test
    void fullTargetRefusesWithoutPartialWrite() throws IOException {
        ChunkStore store = ChunkStore.open(directory.resolve("t"), 1, 1 << 20);
        byte[] bytes = new byte[700_000];
        write(store, new ChunkId(9, 0, 0), 0, bytes);
        assertThatThrownBy(() -> write(store, new ChunkId(9, 0, 1), 0, bytes)).isInstanceOfSatisfying(PlinthException.class,
                e -> assertThat(e.code()).isEqualTo(ErrorCode.NO_SPACE));
        assertThat(store.usedBytes()).isEqualTo(700_000);
        assertThat(store.read(new ChunkId(9, 0, 1), 0, 10).chunkLength()).isZero();
        // overwriting in place needs no new space
        write(store, new ChunkId(9, 0, 0), 0, new byte[1000]);
        store.removeFile(9);
        assertThat(store.usedBytes()).isZero();
        assertThat(Files.exists(directory.resolve("t/chunks/09/0000000000000009"))).isFalse();
        write(store, new ChunkId(9, 0, 1), 0, bytes);
        store.close();
    }

    @Test
    void concurrentWritersNeverOverfillATarget() throws Exception {
        long capacity = 10L << 20;
        ChunkStore store = ChunkStore.open(directory.resolve("t"), 1, capacity);
        byte[] bytes = new byte[700_000];
        java.util.concurrent.atomic.AtomicInteger refused = new java.util.concurrent.atomic.AtomicInteger();
        try (var executor = java.util.concurrent.Executors.newFixedThreadPool(8)) {
            for (int i = 0; i < 64; i++) {
                int chunk = i;
                executor.submit(() -> {
                    try {
                        write(store, new ChunkId(11, 0, chunk), 0, bytes);
                    } catch (PlinthException e) {
                        assertThat(e.code()).isEqualTo(ErrorCode.NO_SPACE);
                        refused.incrementAndGet();
                    }
                });
            }
        }
        assertThat(store.usedBytes()).isLessThanOrEqualTo(capacity);
        assertThat(refused.get()).isEqualTo(64 - (int) (capacity / bytes.length));
        store.close();
        assertThat(ChunkStore.open(directory.resolve("t"), 1, capacity).usedBytes()).isEqualTo(store.usedBytes());
    }

    @Test
    void rejectsBadRangesAndIds() {
        ChunkStore store = ChunkStore.open(directory.resolve("t"), 1, 0);
        assertThatThrownBy(() -> write(store, new ChunkId(9, 0, 0), -1, new byte[1])).isInstanceOf(PlinthException.class);
        assertThatThrownBy(() -> write(store, new ChunkId(9, -1, 0), 0, new byte[1])).isInstanceOf(PlinthException.class);
        assertThatThrownBy(() -> store.read(new ChunkId(0, 0, 0), 0, 1)).isInstanceOf(PlinthException.class);
        assertThatThrownBy(() -> ChunkStore.open(directory.resolve("t"), 2, 0)).isInstanceOf(PlinthException.class);
        store.close();
    }

    @Test
    void pagesOfAListingCoverEveryChunkOnceAndSeeChunksAddedBehindTheCursor() {
        try (ChunkStore store = ChunkStore.open(directory.resolve("t"), 1, 1L << 30)) {
            java.util.Set<ChunkId> written = new java.util.HashSet<>();
            java.util.Random random = new java.util.Random(3);
            for (int i = 0; i < 120; i++) {
                // few buckets (last byte) and several inodes per bucket, so pages end inside buckets and inodes
                long inode = ((long) random.nextInt(1 << 20) << 8) | random.nextInt(3) | (random.nextBoolean() ? 0x8000_0000_0000_0000L : 0);
                ChunkId chunk = new ChunkId(inode, random.nextInt(2), random.nextInt(4));
                write(store, chunk, 0, new byte[] {(byte) i});
                written.add(chunk);
            }
            java.util.List<ChunkId> listed = new java.util.ArrayList<>();
            ChunkId after = null;
            boolean added = false;
            java.util.List<ChunkStore.StoredChunk> page;
            do {
                page = store.scan(after, 7);
                page.forEach(stored -> listed.add(stored.chunk()));
                after = page.isEmpty() ? after : page.getLast().chunk();
                if (!added && listed.size() > 50) {
                    // a chunk created ahead of the cursor, in the bucket being listed, shows up in a later page
                    ChunkId ahead = new ChunkId(after.inodeId(), 9, 9);
                    write(store, ahead, 0, new byte[] {1});
                    written.add(ahead);
                    added = true;
                }
            } while (page.size() == 7);

            assertThat(listed).doesNotHaveDuplicates().containsExactlyInAnyOrderElementsOf(written);
            assertThat(store.listChunks(1, null, 1000)).extracting(ChunkEntry::chunk).containsExactlyElementsOf(
                    store.scan(null, 1000).stream().map(ChunkStore.StoredChunk::chunk).toList());
            assertThat(store.listChunks(2, null, 1000)).isEmpty(); // no chunk of another chain here
        }
    }

    @Test
    void aChunkInstalledWholeKeepsItsPagesOfZerosAsHoles() throws IOException {
        ChunkStore store = ChunkStore.open(directory.resolve("t"), 1, 1L << 30);
        ChunkId chunk = new ChunkId(9, 0, 0);
        write(store, chunk, 0, new byte[] {1, 2, 3}); // an older version with bytes where the new one has a hole
        write(store, chunk, 300_000, new byte[] {4});
        byte[] whole = new byte[(512 << 10) - 1000]; // as compressed slots: a payload at the start of each 64 KiB, the rest never written
        java.util.Random random = new java.util.Random(3);
        for (int slot = 0; slot < 8; slot++) {
            for (int i = 0; i < 5000; i++) {
                whole[slot * 65536 + i] = (byte) random.nextInt();
            }
        }
        whole[whole.length - 1] = 9; // the last page partial, and not zeros
        int[] blockCrcs = Crc32cBlocks.segmentCrcs(ByteBuffer.wrap(whole), 0);
        long version = store.stat(chunk).version() + 1;
        assertThat(store.installRepair(chunk, 1, ByteBuffer.wrap(whole), java.util.Arrays.stream(blockCrcs).boxed().toList(), version)).isTrue();
        assertThat(read(store, chunk, 0, whole.length)).isEqualTo(whole);
        Path file = directory.resolve("t").resolve("chunks");
        long allocated = 0;
        try (var files = java.nio.file.Files.walk(file)) {
            for (Path path : files.filter(p -> p.toString().endsWith(".data")).toList()) {
                assertThat(java.nio.file.Files.size(path)).isEqualTo(whole.length);
                allocated += dev.plinth.common.FileAllocation.of(path);
            }
        }
        assertThat(allocated).as("two 4 KiB pages of each 64 KiB hold bytes, and the file system a few of its own").isLessThan(whole.length / 4);
        byte[] shorter = java.util.Arrays.copyOf(whole, 70_000); // a partial last page of bytes, after a longer version
        version = store.stat(chunk).version() + 1;
        assertThat(store.installRepair(chunk, 1, ByteBuffer.wrap(shorter), java.util.Arrays.stream(Crc32cBlocks.segmentCrcs(
                ByteBuffer.wrap(shorter), 0)).boxed().toList(), version)).isTrue();
        assertThat(read(store, chunk, 0, shorter.length)).isEqualTo(shorter);
        store.close();
    }

    @Test
    void storedBytesCountWhatTheDiskHoldsNotTheHoles() {
        ChunkStore store = ChunkStore.open(directory.resolve("t"), 1, 1L << 30);
        byte[] payload = new byte[6000];
        new java.util.Random(4).nextBytes(payload);
        for (int slot = 0; slot < 16; slot++) { // as compressed slots: 6,000 bytes at the start of each 64 KiB
            write(store, new ChunkId(5, 0, 0), slot * 65536, payload);
        }
        assertThat(store.usedBytes()).as("chunk lengths count the holes").isEqualTo(15 * 65536 + 6000);
        assertThat(store.storedBytes()).as("two 4 KiB pages per slot").isBetween(16 * 8192L, 16 * 8192L + 8192);
        long stored = store.storedBytes();
        store.recountStoredBytes();
        assertThat(store.storedBytes()).isBetween(stored, stored + 8192); // the file system may add an extent block at writeback
        assertThat(store.shownCapacityBytes()).isEqualTo(store.storedBytes() + store.capacityBytes() - store.usedBytes());
        store.removeFile(5);
        assertThat(store.storedBytes()).isZero();
        store.recountStoredBytes();
        assertThat(store.storedBytes()).isZero();
        store.close();
    }

    /**
     * An fsync forces what changed since the last one and nothing else: the chunks written (also
     * those whose files were closed meanwhile, as the open-file cache evicts them), the directory
     * where a chunk was made or removed; a file with nothing changed costs no fsync at all. A store
     * opened again starts with nothing pending (it synced its file system on opening).
     */
    @Test
    void anFsyncForcesWhatChangedSinceTheLast() {
        ChunkStore store = ChunkStore.open(directory.resolve("t"), 1, 0);
        byte[] bytes = new byte[4096];
        write(store, new ChunkId(9, 0, 0), 0, bytes);
        write(store, new ChunkId(9, 1, 0), 0, bytes);
        store.syncFile(9);
        assertThat(store.fsyncs()).as("two new chunks and their directory").isEqualTo(3);
        store.syncFile(9);
        assertThat(store.fsyncs()).as("nothing changed since").isEqualTo(3);
        write(store, new ChunkId(9, 1, 0), 4096, bytes);
        store.syncFile(9);
        assertThat(store.fsyncs()).as("the one chunk written").isEqualTo(4);
        write(store, new ChunkId(9, 0, 0), 4096, bytes);
        for (int other = 0; other < 300; other++) { // more chunks than the store keeps open: chunk 0 of file 9 is closed
            write(store, new ChunkId(10, 0, other), 0, bytes);
        }
        store.syncFile(9);
        assertThat(store.fsyncs()).as("a chunk written and closed before the fsync").isEqualTo(5);
        store.truncateObject(9, 1, 0, 1 << 20);
        store.syncFile(9);
        assertThat(store.fsyncs()).as("a chunk removed: the directory").isEqualTo(6);
        store.syncFile(11);
        assertThat(store.fsyncs()).as("a file this target has nothing of").isEqualTo(6);
        store.close();
        ChunkStore reopened = ChunkStore.open(directory.resolve("t"), 1, 0);
        reopened.syncFile(10);
        assertThat(reopened.fsyncs()).as("a store opened again synced its file system first").isZero();
        reopened.close();
    }

    /**
     * Appends extend the last block's CRC without reading it back: many of every size read back
     * as written, and bytes damaged on the disk before an append still fail the check after it.
     */
    @Test
    void appendsKeepEveryBlockChecked() throws IOException {
        ChunkStore store = ChunkStore.open(directory.resolve("t"), 1, 0);
        Random random = new Random(3);
        ChunkId chunk = new ChunkId(12, 0, 0);
        byte[] model = new byte[3 << 20];
        int length = 0;
        while (length < model.length - 20_000) {
            byte[] bytes = new byte[random.nextInt(4) == 0 ? 4096 : 1 + random.nextInt(20_000)];
            random.nextBytes(bytes);
            write(store, chunk, length, bytes);
            System.arraycopy(bytes, 0, model, length, bytes.length);
            length += bytes.length;
        }
        store.verify(chunk);
        assertThat(read(store, chunk, 0, length)).isEqualTo(Arrays.copyOf(model, length));

        ChunkId damaged = new ChunkId(13, 0, 0);
        write(store, damaged, 0, new byte[1000]);
        ChunkStore.ReadResult stored = store.read(damaged, 0, 1000);
        try (RandomAccessFile data = new RandomAccessFile(stored.file().toFile(), "rw")) {
            data.seek(10);
            data.write(1);
        }
        write(store, damaged, 1000, new byte[1000]);
        assertThatThrownBy(() -> store.verify(damaged)).isInstanceOfSatisfying(PlinthException.class,
                e -> assertThat(e.code()).isEqualTo(ErrorCode.CHECKSUM_MISMATCH));
        store.close();
    }
}
