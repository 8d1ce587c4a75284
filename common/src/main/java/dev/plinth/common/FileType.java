package dev.plinth.common;

/**
 * What an inode is, with the file-type bits of its st_mode. Append-only: stored and sent by
 * ordinal. FIFOs, device nodes and sockets are inodes with no data of their own (a device's
 * number is its rdev): the kernel makes each host's pipe, device or socket of them.
 */
public enum FileType {
    FILE(0100000),
    DIRECTORY(0040000),
    SYMLINK(0120000),
    FIFO(0010000),
    CHARACTER_DEVICE(0020000),
    BLOCK_DEVICE(0060000),
    SOCKET(0140000);

    /** The S_IFMT part of a mode. */
    public static final int MODE_TYPE_BITS = 0170000;

    private final int modeBits;

    FileType(int modeBits) {
        this.modeBits = modeBits;
    }

    /** This type's S_IFMT bits (S_IFREG, S_IFDIR, ...). */
    public int modeBits() {
        return modeBits;
    }

    /** The type a mode's S_IFMT bits name, or null if none. */
    public static FileType ofMode(int mode) {
        for (FileType type : values()) {
            if (type.modeBits == (mode & MODE_TYPE_BITS)) {
                return type;
            }
        }
        return null;
    }

    /** A FIFO, device node or socket: an inode that mknod makes, whose opens the kernel serves. */
    public boolean special() {
        return this == FIFO || this == CHARACTER_DEVICE || this == BLOCK_DEVICE || this == SOCKET;
    }
}
