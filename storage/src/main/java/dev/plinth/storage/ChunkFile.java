package dev.plinth.storage;

import dev.plinth.common.ChunkFormat;
import dev.plinth.common.Crc32cBlocks;
import dev.plinth.common.ErrorCode;
import dev.plinth.common.PlinthException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.Set;

/**
 * One chunk on disk: a data file holding the chunk's bytes as they are (so reads can be sent
 * with sendfile) and a meta file holding the format version, the chunk version, the length, the
 * writer's cell tag and a CRC32C per 64 KiB block.
 *
 * <p>The meta file ({@link ChunkFormat}) holds one CRC per block at a fixed slot, so a write
 * rewrites only the header and the slots of the blocks it touched. Data is written before meta:
 * a crash in between leaves a block whose CRC does not match, which a read reports as
 * CHECKSUM_MISMATCH rather than returning wrong bytes.
 *
 * <p>Not thread-safe: {@link ChunkStore} serializes access per chunk.
 */
final class ChunkFile implements AutoCloseable {
    private static final int MAGIC = ChunkFormat.MAGIC;
    private static final int FORMAT_VERSION = ChunkFormat.FORMAT_VERSION;
    private static final int BLOCK = Crc32cBlocks.BLOCK_BYTES;
    private static final int ZERO_BLOCK_CRC = Crc32cBlocks.crc(new byte[BLOCK], 0, BLOCK);

    private final Path dataPath;
    private final Path metaPath;
    private final FileChannel data;
    private final FileChannel meta;
    /** Null where the target writes through the page cache only. */
    private final DirectWriter directWriter;
    /** The data file opened for O_DIRECT, on the first write that can use it. */
    private FileChannel direct;
    /** The direct open failed: this chunk writes through the page cache until it is closed. */
    private boolean directRefused;
    private long version;
    private int length;
    private int chainId;
    private long cellTag;
    /** Where the CRC slots start: a format-1 chunk keeps its shorter header. */
    private int headerBytes = ChunkFormat.HEADER_BYTES;
    private int format = FORMAT_VERSION;
    private int[] crcs;
    boolean closed;
    /**
     * What the data file took on disk when last measured (st_blocks; holes not counted), or -1
     * before the first change: measured then, not at open, so opens for reads cost no stat.
     */
    private long allocatedBytes = -1;
    /** Changed since {@link #takeChanged} last looked: the store notes it for the next fsync ({@link UnsyncedChanges}). */
    private boolean changed;
    /** Made by this open (its meta file was empty): the directory changed too. */
    private boolean created;

    private ChunkFile(Path dataPath, Path metaPath, FileChannel data, FileChannel meta, DirectWriter directWriter) {
        this.dataPath = dataPath;
        this.metaPath = metaPath;
        this.data = data;
        this.meta = meta;
        this.directWriter = directWriter;
    }

    private static long measureAllocation(Path dataPath) {
        try {
            return dev.plinth.common.FileAllocation.of(dataPath);
        } catch (IOException e) {
            return 0;
        }
    }

    /** How much more (or, negative, less) the data file takes on disk than before its first change or last measurement; measures it again. */
    long allocationChange() {
        long now = measureAllocation(dataPath);
        long change = allocatedBytes < 0 ? 0 : now - allocatedBytes; // no change since the open: nothing to count
        allocatedBytes = now;
        return change;
    }

    /** Before a change of the data file: what it takes now, where that is not known yet. */
    private void beforeChange() {
        changed = true;
        if (allocatedBytes < 0) {
            allocatedBytes = measureAllocation(dataPath);
        }
    }

    /**
     * Opens a chunk, creating empty files of chain {@code chainId} when {@code create} and it does
     * not exist; null if absent. {@code directWriter} (null for none) writes aligned data past the page cache.
     */
    static ChunkFile open(Path dataPath, boolean create, int chainId, DirectWriter directWriter) throws IOException {
        Path metaPath = ChunkFormat.metaPath(dataPath);
        if (!create && !Files.exists(metaPath)) {
            return null;
        }
        if (create) {
            // only a new chunk may need its directory: for an existing one this is a failed mkdir
            // and an exception per open, which small reads of many chunks paid on every cache miss
            Files.createDirectories(dataPath.getParent());
        }
        // without create, a chunk removed since the check above stays absent instead of coming back empty
        Set<StandardOpenOption> options = create
                ? EnumSet.of(StandardOpenOption.CREATE, StandardOpenOption.READ, StandardOpenOption.WRITE)
                : EnumSet.of(StandardOpenOption.READ, StandardOpenOption.WRITE);
        FileChannel data = null;
        FileChannel meta;
        try {
            data = FileChannel.open(dataPath, options);
            meta = FileChannel.open(metaPath, options);
        } catch (IOException e) {
            if (data != null) {
                data.close();
            }
            if (e instanceof NoSuchFileException && !create) {
                return null;
            }
            throw e;
        }
        ChunkFile chunk = new ChunkFile(dataPath, metaPath, data, meta, directWriter);
        chunk.chainId = chainId;
        try {
            chunk.load();
        } catch (IOException | RuntimeException e) {
            chunk.close();
            throw e;
        }
        return chunk;
    }

    private void load() throws IOException {
        long size = meta.size();
        if (size == 0) {
            created = true;
            changed = true;
            version = 0;
            length = 0;
            crcs = new int[0];
            writeHeader();
            return;
        }
        ChunkFormat.Header header = ChunkFormat.readHeader(meta, metaPath);
        version = header.version();
        length = header.length();
        chainId = header.chainId();
        headerBytes = header.headerBytes();
        format = header.format();
        cellTag = header.cellTag();
        crcs = ChunkFormat.readCrcs(meta, metaPath, header, 0, Crc32cBlocks.blockCount(length));
    }

    /** The chain this chunk belongs to ({@link ChunkFormat#OWN_CHAIN} for a format-1 chunk). */
    int chainId() {
        return chainId;
    }

    long version() {
        return version;
    }

    /** The tag the last tagged write gave the chunk (see {@link ChunkFormat}); 0 where none did. */
    long cellTag() {
        return cellTag;
    }

    int length() {
        return length;
    }

    Path dataPath() {
        return dataPath;
    }

    /** Stored CRCs of blocks [firstBlock, firstBlock + count). */
    int[] crcs(int firstBlock, int count) {
        return Arrays.copyOfRange(crcs, firstBlock, firstBlock + count);
    }

    /**
     * Writes {@code bytes} at {@code offset}, then the meta. {@code segmentCrcs} are the verified
     * CRCs of the data cut at block boundaries: a segment that fills its block gives that block's
     * CRC as is; blocks the write covers in part (and blocks of a hole it opens) are recomputed.
     * The chunk's version becomes {@code newVersion}, or goes up by one where that is 0; its cell
     * tag becomes {@code newCellTag} unless that is 0. Returns how many bytes the chunk grew.
     */
    int write(int offset, ByteBuffer bytes, int[] segmentCrcs, long newVersion, long newCellTag) throws IOException {
        beforeChange();
        if (newCellTag != 0 && format < 3) {
            throw new PlinthException(ErrorCode.NOT_SUPPORTED, "chunk " + dataPath + " has format " + format + ", which keeps no cell tag");
        }
        int count = bytes.remaining();
        int oldLength = length;
        int newLength = Math.max(oldLength, offset + count);
        int oldBlocks = crcs.length;
        int newBlocks = Crc32cBlocks.blockCount(newLength);
        int[] newCrcs = newBlocks == oldBlocks ? crcs.clone() : Arrays.copyOf(crcs, newBlocks);

        // Blocks between the old end and the write are a hole: zeros (the old last block may be partial).
        int holeFirst = oldLength / BLOCK;
        int writeFirst = offset / BLOCK;
        for (int block = holeFirst; block < writeFirst; block++) {
            int blockStart = block * BLOCK;
            if (blockStart + BLOCK <= oldLength) {
                continue;
            }
            newCrcs[block] = blockStart >= oldLength && blockStart + BLOCK <= newLength
                    ? ZERO_BLOCK_CRC
                    : crcOfMerged(block, oldLength, newLength, offset, bytes);
        }
        int writeLast = (offset + count - 1) / BLOCK;
        for (int block = writeFirst; count > 0 && block <= writeLast; block++) {
            int blockStart = block * BLOCK;
            int blockEnd = Math.min(blockStart + BLOCK, newLength);
            if (blockStart >= offset && blockEnd <= offset + count) {
                newCrcs[block] = segmentCrcs[block - writeFirst];
            } else if (offset == oldLength && block == writeFirst) {
                // an append to a partial last block: its CRC extended by the segment's, nothing read back (and old bytes
                // damaged on the disk still fail the check, as their stored CRC carries over)
                newCrcs[block] = Crc32cBlocks.combine(crcs[block], segmentCrcs[0], blockEnd - offset);
            } else {
                newCrcs[block] = crcOfMerged(block, oldLength, newLength, offset, bytes);
            }
        }

        try {
            writeData(bytes.duplicate(), offset);
        } catch (IOException e) {
            if (newLength > oldLength) {
                data.truncate(oldLength);
            }
            throw e;
        }
        crcs = newCrcs;
        length = newLength;
        version = newVersion > 0 ? newVersion : version + 1;
        cellTag = newCellTag != 0 ? newCellTag : cellTag;
        writeMeta(Math.min(holeFirst, writeFirst), newBlocks);
        return newLength - oldLength;
    }

    /**
     * Makes the chunk {@code whole} (its entire content, checked against {@code blockCrcs} by the
     * caller) at version {@code newVersion}: how a replica that missed versions catches up.
     * Returns how many bytes the chunk grew (negative where it shrank).
     */
    int replace(ByteBuffer whole, int[] blockCrcs, long newVersion) throws IOException {
        beforeChange();
        int oldLength = length;
        int newLength = whole.remaining();
        writeSparse(whole.slice());
        crcs = blockCrcs.clone();
        length = newLength;
        version = newVersion;
        meta.truncate(headerBytes + (long) crcs.length * 4);
        writeMeta(0, crcs.length);
        return newLength - oldLength;
    }

    private static final int PAGE_BYTES = 4096;
    private static final ByteBuffer ZERO_PAGE = ByteBuffer.allocateDirect(PAGE_BYTES);

    /**
     * Makes the data file hold exactly {@code whole}, leaving its 4 KiB pages of zeros as holes:
     * a compressed layout's slots (design note 92) stay sparse on a replica sent whole chunks.
     */
    private void writeSparse(ByteBuffer whole) throws IOException { // whole's content starts at index 0
        int total = whole.remaining();
        data.truncate(0);
        int runStart = -1; // where the run of pages with bytes being gathered starts; -1: none
        for (int page = 0; page < total || runStart >= 0; page += PAGE_BYTES) {
            int pageBytes = Math.max(0, Math.min(PAGE_BYTES, total - page));
            boolean zeros = pageBytes == 0 || whole.slice(page, pageBytes).mismatch(ZERO_PAGE.slice(0, pageBytes)) == -1;
            if (!zeros && runStart < 0) {
                runStart = page;
            } else if (zeros && runStart >= 0) {
                writeData(whole.slice(runStart, Math.min(page, total) - runStart), runStart);
                runStart = -1;
            }
        }
        if (total > 0 && data.size() < total) {
            writeFully(data, ByteBuffer.allocate(1), total - 1); // the length, past a last hole
        }
    }

    /** Writes {@code source} at {@code position}: its aligned part directly where the target can, the rest through the page cache. */
    private void writeData(ByteBuffer source, long position) throws IOException {
        if (directWriter != null && !directRefused && directWriter.worthTrying(source, position)) {
            if (direct == null) {
                direct = directWriter.open(dataPath);
                directRefused = direct == null;
            }
            if (direct != null) {
                position += directWriter.writeAlignedPrefix(direct, source, position);
            }
        }
        writeFully(data, source, position);
    }

    /** The chunk's whole content, as stored (the caller checks it against {@link #crcs}). */
    ByteBuffer readWhole() throws IOException {
        ByteBuffer whole = ByteBuffer.allocateDirect(length);
        ChunkFormat.readFully(data, whole, 0);
        whole.flip();
        return whole;
    }

    /** CRC of one block after the write, merging old bytes, zeros of a hole and the new bytes. */
    private int crcOfMerged(int block, int oldLength, int newLength, int offset, ByteBuffer bytes) throws IOException {
        int blockStart = block * BLOCK;
        int blockEnd = Math.min(blockStart + BLOCK, newLength);
        ByteBuffer merged = ByteBuffer.allocate(blockEnd - blockStart);
        int oldEnd = Math.min(blockEnd, oldLength);
        if (oldEnd > blockStart) {
            readVerified(block, merged.duplicate().limit(Math.min(blockStart + BLOCK, oldLength) - blockStart));
        }
        int from = Math.max(blockStart, offset);
        int to = Math.min(blockEnd, offset + bytes.remaining());
        if (to > from) {
            ByteBuffer slice = bytes.duplicate();
            slice.position(bytes.position() + from - offset).limit(bytes.position() + to - offset);
            merged.put(from - blockStart, slice, slice.position(), to - from);
        }
        merged.position(0).limit(blockEnd - blockStart);
        return Crc32cBlocks.crc(merged);
    }

    /**
     * Reads block {@code block} as stored (all of it that the chunk holds, which {@code into}
     * must fit exactly) and checks it against its CRC: bytes kept under a new CRC (a write that
     * covers part of a block, a cut inside one) must be right first, or the new CRC would vouch
     * for damage.
     */
    private void readVerified(int block, ByteBuffer into) throws IOException {
        ByteBuffer target = into.duplicate();
        ChunkFormat.readFully(data, target, (long) block * BLOCK);
        target.flip();
        if (Crc32cBlocks.crc(target) != crcs[block]) {
            throw new PlinthException(ErrorCode.CHECKSUM_MISMATCH, "block " + block + " of " + dataPath
                    + " does not match its checksum: a write or cut that keeps part of it is refused");
        }
    }

    /** Cuts the chunk to {@code newLength} bytes (only ever shrinks); its version goes up by one. Returns bytes freed. */
    int truncate(int newLength) throws IOException {
        return cut(newLength, version + 1);
    }

    /**
     * Cuts the chunk to {@code newLength} bytes where it is longer, and gives it version
     * {@code newVersion} either way (a cut through a chain changes every member's version alike,
     * whether or not it had bytes to cut). Returns bytes freed.
     */
    int cut(int newLength, long newVersion) throws IOException {
        beforeChange();
        if (newLength >= length) {
            if (newVersion != version) {
                version = newVersion;
                writeHeader();
            }
            return 0;
        }
        int freed = length - newLength;
        int blocks = Crc32cBlocks.blockCount(newLength);
        int[] newCrcs = Arrays.copyOf(crcs, blocks);
        if (newLength % BLOCK != 0) {
            int last = blocks - 1;
            ByteBuffer whole = ByteBuffer.allocate(Math.min(BLOCK, length - last * BLOCK));
            readVerified(last, whole);
            newCrcs[last] = Crc32cBlocks.crc(whole.flip().limit(newLength - last * BLOCK));
        }
        data.truncate(newLength);
        crcs = newCrcs;
        length = newLength;
        version = newVersion;
        meta.truncate(headerBytes + (long) blocks * 4);
        writeMeta(Math.max(0, blocks - 1), blocks);
        return freed;
    }

    /** Reads and checks blocks [first, last]: used by the scrubber and tests. */
    void verify(int firstBlock, int lastBlock) throws IOException {
        for (int block = firstBlock; block <= lastBlock && block < crcs.length; block++) {
            int blockStart = block * BLOCK;
            ByteBuffer bytes = ByteBuffer.allocate(Math.min(BLOCK, length - blockStart));
            ChunkFormat.readFully(data, bytes, blockStart);
            bytes.flip();
            if (Crc32cBlocks.crc(bytes) != crcs[block]) {
                throw new PlinthException(ErrorCode.CHECKSUM_MISMATCH, "block " + block + " of " + dataPath);
            }
        }
    }

    /** Whether the chunk changed since the last call. */
    boolean takeChanged() {
        boolean was = changed;
        changed = false;
        return was;
    }

    /** Whether this open made the chunk (and the last call did not say so yet). */
    boolean takeCreated() {
        boolean was = created;
        created = false;
        return was;
    }

    void force() throws IOException {
        data.force(false);
        meta.force(false);
    }

    private void writeHeader() throws IOException {
        ByteBuffer header = ByteBuffer.allocate(headerBytes);
        header.putInt(MAGIC).putShort((short) format).putShort((short) 0).putLong(version).putInt(length).putInt(BLOCK);
        if (format >= 2) {
            header.putInt(chainId).putInt(0);
        }
        if (format >= 3) {
            header.putLong(cellTag);
        }
        header.flip();
        writeFully(meta, header, 0);
    }

    private void writeMeta(int firstBlock, int blockCount) throws IOException {
        if (blockCount > firstBlock) {
            ByteBuffer slots = ByteBuffer.allocate((blockCount - firstBlock) * 4);
            slots.asIntBuffer().put(crcs, firstBlock, blockCount - firstBlock);
            writeFully(meta, slots, headerBytes + (long) firstBlock * 4);
        }
        writeHeader();
    }

    /** Writes all of {@code buffer} at {@code position} (a channel may write less than asked). */
    static void writeFully(FileChannel channel, ByteBuffer buffer, long position) throws IOException {
        // a write(2) that wrote about half of what it was given, as one may: a whole number of 4 KiB blocks, as O_DIRECT's are
        int half = buffer.remaining() / 2 & ~4095;
        if (half > 0 && dev.plinth.common.FaultPoints.take(dev.plinth.common.FaultPoints.STORAGE_SHORT_WRITE)) {
            int limit = buffer.limit();
            buffer.limit(buffer.position() + half);
            position += channel.write(buffer, position);
            buffer.limit(limit);
        }
        while (buffer.hasRemaining()) {
            position += channel.write(buffer, position);
        }
    }

    @Override
    public void close() throws IOException {
        closed = true;
        try (FileChannel dataChannel = data; FileChannel metaChannel = meta; FileChannel directChannel = direct) {
            // try-with-resources closes all three, null included, and keeps the first failure
        }
    }
}
