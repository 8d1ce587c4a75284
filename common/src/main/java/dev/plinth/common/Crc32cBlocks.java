package dev.plinth.common;

import java.nio.ByteBuffer;
import java.util.zip.CRC32C;

/** CRC32C per fixed-size block: how chunks are checked on write, on read and by the client. */
public final class Crc32cBlocks {
    /** The checked unit inside a chunk. Part of the chunk file format: changing it needs a new version. */
    public static final int BLOCK_BYTES = 64 * 1024;

    private Crc32cBlocks() {}

    public static int crc(ByteBuffer data) {
        CRC32C crc = new CRC32C();
        crc.update(data.duplicate());
        return (int) crc.getValue();
    }

    /** CRC32C of {@code parts} one after the other (a buffer that arrived in several pieces). */
    public static int crc(ByteBuffer... parts) {
        CRC32C crc = new CRC32C();
        for (ByteBuffer part : parts) {
            crc.update(part.duplicate());
        }
        return (int) crc.getValue();
    }

    public static int crc(byte[] data, int offset, int length) {
        CRC32C crc = new CRC32C();
        crc.update(data, offset, length);
        return (int) crc.getValue();
    }

    /**
     * CRC32C of each segment of {@code data}, cut where the chunk's block boundaries fall given
     * that the data lands at {@code chunkOffset}. What a writer sends: the target checks each
     * segment once and keeps the CRC of every segment that fills a whole block.
     */
    public static int[] segmentCrcs(ByteBuffer data, long chunkOffset) {
        int count = data.remaining();
        if (count == 0) {
            return new int[0];
        }
        long first = chunkOffset / BLOCK_BYTES;
        long last = (chunkOffset + count - 1) / BLOCK_BYTES;
        int[] crcs = new int[(int) (last - first + 1)];
        int position = data.position();
        for (int i = 0; i < crcs.length; i++) {
            long segmentStart = Math.max(chunkOffset, (first + i) * BLOCK_BYTES);
            long segmentEnd = Math.min(chunkOffset + count, (first + i + 1) * BLOCK_BYTES);
            ByteBuffer segment = data.duplicate();
            segment.position(position + (int) (segmentStart - chunkOffset)).limit(position + (int) (segmentEnd - chunkOffset));
            crcs[i] = crc(segment);
        }
        return crcs;
    }

    /** CRC32C's polynomial, bit-reflected. */
    private static final int POLYNOMIAL = 0x82F63B78;

    /**
     * The CRC32C of A followed by B, from the CRCs of A and B and B's length, without the bytes
     * (zlib's {@code crc32_combine}, on CRC32C's polynomial): an append to a block extends the
     * block's stored CRC instead of reading back what the block held.
     */
    public static int combine(int crcA, int crcB, long lengthB) {
        int[] operator = new int[32]; // what appending one zero bit does to a CRC, as a matrix over GF(2)
        operator[0] = POLYNOMIAL;
        for (int n = 1; n < 32; n++) {
            operator[n] = 1 << (n - 1);
        }
        operator = square(square(square(operator))); // one zero byte
        int crc = crcA;
        for (long bytes = lengthB; bytes > 0; bytes >>>= 1) { // B's length in zero bytes, by squaring
            if ((bytes & 1) != 0) {
                crc = times(operator, crc);
            }
            operator = square(operator);
        }
        return crc ^ crcB;
    }

    private static int times(int[] matrix, int vector) {
        int sum = 0;
        for (int i = 0; vector != 0; i++, vector >>>= 1) {
            if ((vector & 1) != 0) {
                sum ^= matrix[i];
            }
        }
        return sum;
    }

    private static int[] square(int[] matrix) {
        int[] square = new int[32];
        for (int n = 0; n < 32; n++) {
            square[n] = times(matrix, matrix[n]);
        }
        return square;
    }

    public static int blockCount(long length) {
        return (int) ((length + BLOCK_BYTES - 1) / BLOCK_BYTES);
    }
}
