package dev.plinth.common;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;

/**
 * The on-disk format of a chunk, in one place for the target that writes it and for a client
 * that reads a local target's files directly (short-circuit reads).
 *
 * <pre>
 *   TARGET/chunks/XX/INODE/O.C.data   the chunk's bytes as they are (XX: last byte of INODE in hex)
 *   TARGET/chunks/XX/INODE/O.C.meta   u32 magic "PLCK", u16 format (3), u16 reserved, u64 chunk version,
 *                                     u32 length, u32 block bytes, u32 chain id, u32 reserved,
 *                                     u64 cell tag, then one u32 CRC32C per block
 * </pre>
 *
 * The cell tag is the writer's: an erasure-coded file's client gives every cell of a stripe the
 * same tag when it writes the stripe, so that a decoder can tell cells of one write from cells of
 * another (0 where nobody set one). Format 2 lacks it (reads as 0); format 1 (written before
 * chains had more than one member) also lacks the chain id and its reserved word: such a chunk
 * belongs to the one-replica chain of the target that holds it.
 */
public final class ChunkFormat {
    public static final int MAGIC = 0x504C434B;
    public static final int FORMAT_VERSION = 3;
    private static final int HEADER_BYTES_V1 = 4 + 2 + 2 + 8 + 4 + 4;
    private static final int HEADER_BYTES_V2 = HEADER_BYTES_V1 + 4 + 4;
    public static final int HEADER_BYTES = HEADER_BYTES_V2 + 8;

    /** Where a chunk of {@code format} keeps its first CRC slot. */
    public static int headerBytes(int format) {
        return format == 1 ? HEADER_BYTES_V1 : format == 2 ? HEADER_BYTES_V2 : HEADER_BYTES;
    }
    /** The chain id a format-1 chunk reads as: "the one-replica chain of the target holding it". */
    public static final int OWN_CHAIN = -1;

    private ChunkFormat() {}

    /** A chunk's header: its format, version, length, chain and cell tag; {@code headerBytes} is where the CRC slots start. */
    public record Header(int format, long version, int length, int chainId, long cellTag, int headerBytes) {}

    /** Inode directories are spread over this many bucket directories, by the inode id's last byte. */
    public static final int BUCKETS = 256;

    /** The bucket an inode's directory is in. */
    public static int bucketOf(long inodeId) {
        return (int) (inodeId & (BUCKETS - 1));
    }

    /** The directory of bucket {@code bucket} (its name: the bucket as two hex digits, the inode ids' last two). */
    public static Path bucketDirectory(Path targetRoot, int bucket) {
        return targetRoot.resolve("chunks").resolve(BUCKET_NAMES[bucket]);
    }

    /** Every chunk access names its bucket: String.format for it showed in profiles of small writes. */
    private static final String[] BUCKET_NAMES = java.util.stream.IntStream.range(0, BUCKETS)
            .mapToObj(bucket -> String.format("%02x", bucket)).toArray(String[]::new);

    public static Path inodeDirectory(Path targetRoot, long inodeId) {
        return bucketDirectory(targetRoot, bucketOf(inodeId)).resolve(InodeId.format(inodeId));
    }

    public static Path dataPath(Path targetRoot, long inodeId, int objectIndex, long chunkIndex) {
        return inodeDirectory(targetRoot, inodeId).resolve(objectIndex + "." + chunkIndex + ".data");
    }

    public static Path metaPath(Path dataPath) {
        String name = dataPath.getFileName().toString();
        return dataPath.resolveSibling(name.substring(0, name.length() - ".data".length()) + ".meta");
    }

    /** Reads and checks a meta file's header; a damaged one is CHECKSUM_MISMATCH, a newer format NOT_SUPPORTED. */
    public static Header readHeader(FileChannel meta, Path metaPath) throws IOException {
        if (meta.size() < HEADER_BYTES_V1) {
            throw new PlinthException(ErrorCode.CHECKSUM_MISMATCH, "chunk meta " + metaPath + " is truncated");
        }
        ByteBuffer header = ByteBuffer.allocate((int) Math.min(HEADER_BYTES, meta.size())); // an older format's header may be shorter
        readFully(meta, header, 0);
        header.flip();
        if (header.getInt() != MAGIC) {
            throw new PlinthException(ErrorCode.CHECKSUM_MISMATCH, "chunk meta " + metaPath + " has a bad magic number");
        }
        int format = header.getShort() & 0xFFFF;
        if (format < 1 || format > FORMAT_VERSION) {
            throw new PlinthException(ErrorCode.NOT_SUPPORTED, "chunk meta " + metaPath + " has format " + format);
        }
        header.getShort();
        long version = header.getLong();
        int length = header.getInt();
        if (header.getInt() != Crc32cBlocks.BLOCK_BYTES || length < 0 || meta.size() < headerBytes(format)) {
            throw new PlinthException(ErrorCode.CHECKSUM_MISMATCH, "chunk meta " + metaPath + " is inconsistent");
        }
        int chainId = format == 1 ? OWN_CHAIN : header.getInt();
        if (format >= 2) {
            header.getInt();
        }
        long cellTag = format >= 3 ? header.getLong() : 0;
        return new Header(format, version, length, chainId, cellTag, headerBytes(format));
    }

    /** The stored CRCs of blocks [firstBlock, firstBlock + count). */
    public static int[] readCrcs(FileChannel meta, Path metaPath, Header header, int firstBlock, int count) throws IOException {
        ByteBuffer slots = ByteBuffer.allocate(count * 4);
        if (meta.size() < header.headerBytes() + (long) (firstBlock + count) * 4) {
            throw new PlinthException(ErrorCode.CHECKSUM_MISMATCH, "chunk meta " + metaPath + " lacks checksums");
        }
        readFully(meta, slots, header.headerBytes() + (long) firstBlock * 4);
        slots.flip();
        int[] crcs = new int[count];
        slots.asIntBuffer().get(crcs);
        return crcs;
    }

    public static void readFully(FileChannel channel, ByteBuffer buffer, long position) throws IOException {
        while (buffer.hasRemaining()) {
            int read = channel.read(buffer, position);
            if (read < 0) {
                throw new PlinthException(ErrorCode.CHECKSUM_MISMATCH, "chunk file shorter than its recorded length");
            }
            position += read;
        }
    }
}
