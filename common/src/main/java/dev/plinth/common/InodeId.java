package dev.plinth.common;

/**
 * Inode ids carry the index of the MDT that owns them in their top 16 bits, so a client knows
 * which metadata shard to ask without a lookup table, and several MDTs never hand out the same id.
 */
public final class InodeId {
    public static final int MDT_BITS = 16;
    public static final long SEQUENCE_MASK = (1L << (64 - MDT_BITS)) - 1;
    /** The root directory: MDT 0, sequence 1. */
    public static final long ROOT = of(0, 1);

    private InodeId() {}

    public static long of(int mdtIndex, long sequence) {
        if (mdtIndex < 0 || mdtIndex >= (1 << MDT_BITS)) {
            throw new IllegalArgumentException("MDT index out of range: " + mdtIndex);
        }
        if (sequence <= 0 || sequence > SEQUENCE_MASK) {
            throw new IllegalArgumentException("inode sequence out of range: " + sequence);
        }
        return ((long) mdtIndex << (64 - MDT_BITS)) | sequence;
    }

    public static int mdtIndex(long inodeId) {
        return (int) (inodeId >>> (64 - MDT_BITS));
    }

    public static long sequence(long inodeId) {
        return inodeId & SEQUENCE_MASK;
    }

    public static String format(long inodeId) {
        return String.format("%016x", inodeId);
    }
}
