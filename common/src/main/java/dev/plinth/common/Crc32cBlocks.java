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

    public static int crc(byte[] data, int offset, int length) {
        CRC32C crc = new CRC32C();
        crc.update(data, offset, length);
        return (int) crc.getValue();
    }

    public static int blockCount(long length) {
        return (int) ((length + BLOCK_BYTES - 1) / BLOCK_BYTES);
    }
}
