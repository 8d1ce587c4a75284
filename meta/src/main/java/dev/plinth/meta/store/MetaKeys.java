package dev.plinth.meta.store;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/**
 * RocksDB key layout of one MDT, format 1. The first byte is the kind; ids are big-endian so
 * keys sort by id, and dentry names follow their parent's id so one directory is one key range.
 * <pre>
 *   0x01 name                     system values (format, applied index, inode counter)
 *   0x10 inode                    InodeRecord
 *   0x20 parent name              DentryRecord
 *   0x30 inode name               xattr value
 *   0x40 client request           deduplicated result of a change
 *   0x50 client                   SessionRecord
 *   0x51 inode client             open count of a file by a session
 *   0x52 client inode             the same, indexed by session (to close a session's files)
 *   0x60 inode                    orphan: unlinked while open
 *   0x70 inode                    removed file whose chunks are still to be freed (value: its layout)
 *   0x80 inode                    file locks held on it (LockList)
 *   0x81 client inode             the session holds locks on that inode (to release them when it ends)
 *   0x90 inode                    the file's Data-on-MDT bytes, from offset 0 (zeros past their end)
 *   0xA0 inode                    the file's HSM record (HsmRecord: archive id, archived copy, last error)
 *   0xA1 inode                    the id of the HSM action queued for the file
 *   0xA2 priority action          a queued HSM action (HsmMessages.Action); restores sort first
 *   0xA3 inode                    the archived copy of a removed file, until a mover deletes it (HsmMessages.RemovedCopy)
 *   0xB0 inode                    a layout set with force on that inode (MetaMessages.ForcedLayout), for status
 *   0xB1 inode                    the erasure-coded file has stale cells (its layout says which), for the upkeep to rebuild
 *   0xC0 intent                   an open cross-MDT intent this MDT coordinates (CrossMdtMessages.RemoteIntent)
 *   0xC1 parent name              the intent open on that remote entry (its id)
 *   0xC2 mdt intent               this MDT applied its part of that MDT's intent (value: the inode id it made or changed)
 *   0xC3 mdt                      the newest Raft term of that MDT's leader that sent this MDT an intent's part
 * </pre>
 * A directory entry whose inode id names another MDT is a remote entry; one with inode id 0
 * ({@link DentryRecord#PENDING}) is a name reserved by an open intent to make a directory there.
 */
public final class MetaKeys {
    public static final byte SYSTEM = 0x01;
    public static final byte INODE = 0x10;
    public static final byte DENTRY = 0x20;
    public static final byte XATTR = 0x30;
    public static final byte DEDUP = 0x40;
    public static final byte SESSION = 0x50;
    public static final byte OPEN_BY_INODE = 0x51;
    public static final byte OPEN_BY_SESSION = 0x52;
    public static final byte ORPHAN = 0x60;
    public static final byte REMOVED = 0x70;
    public static final byte LOCKS = (byte) 0x80;
    public static final byte LOCKS_BY_SESSION = (byte) 0x81;
    public static final byte MDT_DATA = (byte) 0x90;
    public static final byte HSM = (byte) 0xA0;
    public static final byte HSM_ACTION_BY_INODE = (byte) 0xA1;
    public static final byte HSM_ACTION = (byte) 0xA2;
    public static final byte HSM_REMOVED_COPY = (byte) 0xA3;
    public static final byte FORCED_LAYOUT = (byte) 0xB0;
    public static final byte STALE_CELLS = (byte) 0xB1;
    public static final byte INTENT = (byte) 0xC0;
    public static final byte INTENT_BY_ENTRY = (byte) 0xC1;
    public static final byte APPLIED_INTENT = (byte) 0xC2;
    public static final byte COORDINATOR_TERM = (byte) 0xC3;

    private MetaKeys() {}

    public static byte[] system(String name) {
        byte[] bytes = name.getBytes(StandardCharsets.US_ASCII);
        return ByteBuffer.allocate(1 + bytes.length).put(SYSTEM).put(bytes).array();
    }

    public static byte[] id(byte kind, long id) {
        return ByteBuffer.allocate(9).put(kind).putLong(id).array();
    }

    public static byte[] twoIds(byte kind, long first, long second) {
        return ByteBuffer.allocate(17).put(kind).putLong(first).putLong(second).array();
    }

    public static byte[] named(byte kind, long id, String name) {
        byte[] bytes = name.getBytes(StandardCharsets.UTF_8);
        return ByteBuffer.allocate(9 + bytes.length).put(kind).putLong(id).put(bytes).array();
    }

    public static String nameOf(byte[] key) {
        return new String(key, 9, key.length - 9, StandardCharsets.UTF_8);
    }

    public static long firstId(byte[] key) {
        return ByteBuffer.wrap(key, 1, 8).getLong();
    }

    public static long secondId(byte[] key) {
        return ByteBuffer.wrap(key, 9, 8).getLong();
    }

    /** The smallest key after every key that starts with {@code prefix}. */
    public static byte[] prefixEnd(byte[] prefix) {
        byte[] end = prefix.clone();
        for (int i = end.length - 1; i >= 0; i--) {
            if (end[i] != (byte) 0xFF) {
                end[i]++;
                return java.util.Arrays.copyOf(end, i + 1);
            }
        }
        throw new IllegalArgumentException("no end for an all-0xFF prefix");
    }
}
