package dev.plinth.meta;

import dev.plinth.common.Credentials;
import dev.plinth.common.ErrorCode;
import dev.plinth.common.FileType;
import dev.plinth.common.InodeId;
import dev.plinth.common.Names;
import dev.plinth.common.Permissions;
import dev.plinth.common.PlinthException;
import dev.plinth.meta.store.DentryRecord;
import dev.plinth.meta.store.InodeRecord;
import dev.plinth.meta.store.MetaKeys;
import dev.plinth.meta.store.MetaStore;
import dev.plinth.wire.messages.MetaMessages.DirEntry;
import dev.plinth.wire.messages.MetaMessages.OpHeader;
import dev.plinth.wire.messages.MetaMessages.RemovedFile;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import org.rocksdb.RocksIterator;
import org.rocksdb.WriteBatchWithIndex;

/**
 * The namespace as one operation sees it: reads go through the operation's pending batch (so it
 * sees its own writes), writes go into the batch, which commits atomically with its Raft index.
 * Queries get a view without a batch and may not write. Also holds the POSIX permission rules.
 * Not thread-safe: one per operation.
 */
public final class Namespace {
    public static final int READ = Permissions.READ;
    public static final int WRITE = Permissions.WRITE;
    public static final int EXECUTE = Permissions.EXECUTE;
    public static final int LINK_COUNT_MAX = 65_000;
    public static final int XATTR_VALUE_BYTES_MAX = 64 * 1024;
    private static final byte[] NEXT_INODE_KEY = MetaKeys.system("next-inode");
    private static final byte[] INODE_COUNT_KEY = MetaKeys.system("inode-count");
    private static final byte[] MDT_DATA_BYTES_KEY = MetaKeys.system("mdt-data-bytes");

    private final MetaStore store;
    private final WriteBatchWithIndex batch;
    private final int mdtIndex;
    private final OpHeader header;
    private final List<RemovedFile> removedFiles = new ArrayList<>();
    /**
     * Every key this operation read or wrote, with its value ({@link #ABSENT}: none). One change
     * reads the same few keys again and again (a publish reads its inode once per step it is
     * built from, and its parent more than once), and each read through the batch is a native
     * call and a memtable search. Values are
     * never changed in place: writers build a new array. Only valid because the Namespace lives
     * for one operation, which alone writes to the batch meanwhile.
     */
    private final HashMap<ByteBuffer, byte[]> seen = new HashMap<>();
    private static final byte[] ABSENT = new byte[0];

    Namespace(MetaStore store, WriteBatchWithIndex batch, int mdtIndex, OpHeader header) {
        this.store = store;
        this.batch = batch;
        this.mdtIndex = mdtIndex;
        this.header = header;
    }

    public long now() {
        return header.timeNanos();
    }

    /** The MDT this namespace is. */
    public int mdtIndex() {
        return mdtIndex;
    }

    /** Whether this MDT holds inode {@code inodeId} (its id names this MDT). */
    public boolean isLocal(long inodeId) {
        return InodeId.mdtIndex(inodeId) == mdtIndex;
    }

    /**
     * An operation reached an inode that another MDT holds (a directory made there with
     * `--mdt`). Operations that only read turn it into a redirect; changes that would need both
     * MDTs, other than the ones coordinated with intents, fail with it: EXDEV, as rename(2) and
     * link(2) answer across file systems.
     */
    public static final class RemoteInode extends PlinthException {
        private final long inodeId;
        private final FileType type;

        RemoteInode(long inodeId, FileType type) {
            super(ErrorCode.CROSS_DEVICE, "inode " + InodeId.format(inodeId) + " is on MDT " + InodeId.mdtIndex(inodeId));
            this.inodeId = inodeId;
            this.type = type;
        }

        public long inodeId() {
            return inodeId;
        }

        public FileType type() {
            return type;
        }
    }

    public Credentials caller() {
        return header.credentials();
    }

    public OpHeader header() {
        return header;
    }

    List<RemovedFile> removedFiles() {
        return removedFiles;
    }

    // ---- raw access

    private byte[] get(byte[] key) {
        ByteBuffer cacheKey = ByteBuffer.wrap(key);
        byte[] known = seen.get(cacheKey);
        if (known != null) {
            return known == ABSENT ? null : known;
        }
        byte[] value = batch == null ? store.get(key) : store.get(batch, key);
        seen.put(cacheKey, value == null ? ABSENT : value);
        return value;
    }

    private WriteBatchWithIndex batch() {
        if (batch == null) {
            throw new IllegalStateException("a query tried to change the namespace");
        }
        return batch;
    }

    public void put(byte[] key, byte[] value) {
        try {
            batch().put(key, value);
        } catch (org.rocksdb.RocksDBException e) {
            throw new IllegalStateException(e);
        }
        store.changing(key);
        seen.put(ByteBuffer.wrap(key), value);
    }

    public void delete(byte[] key) {
        try {
            batch().delete(key);
        } catch (org.rocksdb.RocksDBException e) {
            throw new IllegalStateException(e);
        }
        store.changing(key);
        seen.put(ByteBuffer.wrap(key), ABSENT);
    }

    public byte[] getRaw(byte[] key) {
        return get(key);
    }

    /**
     * Reads {@code keys} that a query is about to read one by one in a single call to the store
     * (one JNI crossing and one pass through RocksDB's levels for all), so the reads that follow
     * come from this operation's memory. A change reads through its batch and skips this.
     */
    public void prefetch(List<byte[]> keys) {
        if (batch != null) {
            return;
        }
        List<byte[]> values = store.getAll(keys);
        for (int i = 0; i < keys.size(); i++) {
            seen.putIfAbsent(ByteBuffer.wrap(keys.get(i)), values.get(i) == null ? ABSENT : values.get(i));
        }
    }

    public long getLong(byte[] key, long absent) {
        byte[] value = get(key);
        return value == null ? absent : ByteBuffer.wrap(value).getLong();
    }

    public void putLong(byte[] key, long value) {
        put(key, ByteBuffer.allocate(8).putLong(value).array());
    }

    /** Keys (and values) with {@code prefix} that sort after {@code after} (null: from the start), at most {@code limit}. */
    public List<byte[][]> scan(byte[] prefix, byte[] after, int limit) {
        List<byte[][]> result = new ArrayList<>();
        try (MetaStore.Scan scan = store.scan(batch, MetaKeys.prefixEnd(prefix))) {
            RocksIterator iterator = scan.iterator();
            if (after == null) {
                iterator.seek(prefix);
            } else {
                iterator.seek(after);
                if (iterator.isValid() && Arrays.equals(iterator.key(), after)) {
                    iterator.next();
                }
            }
            while (iterator.isValid() && result.size() < limit) {
                byte[] key = iterator.key();
                if (!startsWith(key, prefix)) {
                    break;
                }
                result.add(new byte[][] {key, iterator.value()});
                iterator.next();
            }
        }
        return result;
    }

    private static boolean startsWith(byte[] key, byte[] prefix) {
        return key.length >= prefix.length && Arrays.equals(key, 0, prefix.length, prefix, 0, prefix.length);
    }

    // ---- inodes and entries

    public InodeRecord inodeOrNull(long inodeId) {
        if (!isLocal(inodeId)) {
            throw new RemoteInode(inodeId, FileType.DIRECTORY); // only directories are made on another MDT than their parent's
        }
        byte[] key = MetaKeys.id(MetaKeys.INODE, inodeId);
        if (batch == null) {
            return store.getRecord(key, InodeRecord.class); // a query: may come from the record cache
        }
        byte[] value = get(key);
        return value == null ? null : MetaStore.decode(InodeRecord.class, value);
    }

    public InodeRecord inode(long inodeId) {
        InodeRecord inode = inodeOrNull(inodeId);
        if (inode == null) {
            throw new PlinthException(ErrorCode.NOT_FOUND, "inode " + InodeId.format(inodeId));
        }
        return inode;
    }

    public InodeRecord directory(long inodeId) {
        InodeRecord inode = inode(inodeId);
        if (!inode.isDirectory()) {
            throw new PlinthException(ErrorCode.NOT_A_DIRECTORY, "inode " + InodeId.format(inodeId));
        }
        return inode;
    }

    public void putInode(InodeRecord inode) {
        put(MetaKeys.id(MetaKeys.INODE, inode.inodeId()), MetaStore.encode(inode));
    }

    public DentryRecord dentry(long parentId, String name) {
        byte[] key = MetaKeys.named(MetaKeys.DENTRY, parentId, name);
        if (batch == null) {
            return store.getRecord(key, DentryRecord.class);
        }
        byte[] value = get(key);
        return value == null ? null : MetaStore.decode(DentryRecord.class, value);
    }

    public void putDentry(long parentId, String name, DentryRecord entry) {
        put(MetaKeys.named(MetaKeys.DENTRY, parentId, name), MetaStore.encode(entry));
    }

    public void deleteDentry(long parentId, String name) {
        delete(MetaKeys.named(MetaKeys.DENTRY, parentId, name));
    }

    public List<DirEntry> list(long directoryId, String afterName, int limit) {
        byte[] prefix = MetaKeys.id(MetaKeys.DENTRY, directoryId);
        byte[] after = afterName == null || afterName.isEmpty() ? null : MetaKeys.named(MetaKeys.DENTRY, directoryId, afterName);
        List<DirEntry> entries = new ArrayList<>();
        for (byte[][] pair : scan(prefix, after, limit)) {
            DentryRecord entry = MetaStore.decode(DentryRecord.class, pair[1]);
            if (entry.pending()) {
                continue; // a name an open intent reserves: not there yet
            }
            entries.add(new DirEntry(MetaKeys.nameOf(pair[0]), entry.inodeId(), entry.type()));
        }
        return entries;
    }

    /**
     * Inode ids a store restored from a backup skips: files made after the backup may still have
     * chunks on the targets under their ids (until `plinth fsck --repair` removes them), and a new
     * file must not find them. 2^36 of the 2^48 ids per MDT: room for 4,096 restores.
     */
    static final long RESTORE_INODE_GAP = 1L << 36;

    /** Moves the inode counter past every id that may have been handed out after the backup this store came from. */
    public void skipInodeIdsAfterRestore() {
        long next = getLong(NEXT_INODE_KEY, 2);
        if (next + RESTORE_INODE_GAP > InodeId.SEQUENCE_MASK) {
            throw new PlinthException(ErrorCode.NO_SPACE, "MDT " + mdtIndex + " has no inode ids left for another restore");
        }
        putLong(NEXT_INODE_KEY, next + RESTORE_INODE_GAP);
    }

    public long allocateInodeId() {
        long next = getLong(NEXT_INODE_KEY, 2);
        putLong(NEXT_INODE_KEY, next + 1);
        putLong(INODE_COUNT_KEY, inodeCount() + 1);
        long inodeId = InodeId.of(mdtIndex, next);
        // an id never used before has no Data-on-MDT bytes: storing a new file's bytes need not look for old ones
        seen.put(ByteBuffer.wrap(mdtDataKey(inodeId)), ABSENT);
        return inodeId;
    }

    public long inodeCount() {
        return getLong(INODE_COUNT_KEY, rootCount());
    }

    /** Inodes an MDT holds before anything is made: the root on MDT 0, none elsewhere. */
    private long rootCount() {
        return mdtIndex == 0 ? 1 : 0;
    }

    /** Bytes of Data-on-MDT parts stored in this MDT (statfs counts them as used). */
    public long mdtDataBytes() {
        return getLong(MDT_DATA_BYTES_KEY, 0);
    }

    /** The store's key of a file's Data-on-MDT bytes (path resolution prefetches it). */
    public static byte[] mdtDataKey(long inodeId) {
        return MetaKeys.id(MetaKeys.MDT_DATA, inodeId);
    }

    /** A file's stored Data-on-MDT bytes, or null. */
    public byte[] mdtData(long inodeId) {
        return getRaw(mdtDataKey(inodeId));
    }

    /** Stores a file's Data-on-MDT bytes (null: removes them), keeping the MDT's total. */
    public void putMdtData(long inodeId, byte[] bytes) {
        byte[] key = mdtDataKey(inodeId);
        byte[] stored = getRaw(key);
        long delta = (bytes == null ? 0 : bytes.length) - (stored == null ? 0 : stored.length);
        if (bytes == null) {
            delete(key);
        } else {
            put(key, bytes);
        }
        if (delta != 0) {
            putLong(MDT_DATA_BYTES_KEY, Math.max(0, mdtDataBytes() + delta));
        }
    }

    /**
     * Looks up a name in a directory the caller may search; "." and ".." resolve too. A name
     * whose inode another MDT holds throws {@link RemoteInode}.
     */
    public InodeRecord lookup(InodeRecord directory, String name) {
        if (!directory.isDirectory()) {
            throw new PlinthException(ErrorCode.NOT_A_DIRECTORY, "lookup of '" + name + "' in a non-directory");
        }
        check(directory, EXECUTE);
        if (name.equals(".")) {
            return directory;
        }
        if (name.equals("..")) {
            return inode(directory.parentId());
        }
        Names.validateName(name);
        DentryRecord entry = dentry(directory.inodeId(), name);
        if (entry == null || entry.pending()) {
            throw new PlinthException(ErrorCode.NOT_FOUND, "'" + name + "'");
        }
        if (!isLocal(entry.inodeId())) {
            throw new RemoteInode(entry.inodeId(), entry.type());
        }
        return inode(entry.inodeId());
    }

    /** Whether {@code entry} names an inode another MDT holds (or reserves a name for one it is making). */
    public boolean remoteEntry(DentryRecord entry) {
        return entry != null && (entry.pending() || !isLocal(entry.inodeId()));
    }

    /**
     * Drops one link of a file or symlink: at zero links it is removed now, or when its last
     * opener closes it (an orphan until then).
     */
    public void dropLink(InodeRecord inode) {
        int links = inode.linkCount() - 1;
        if (links > 0) {
            putInode(inode.withLinkCount(links, now()));
            return;
        }
        if (isOpen(inode.inodeId())) {
            putInode(inode.withLinkCount(0, now()));
            put(MetaKeys.id(MetaKeys.ORPHAN, inode.inodeId()), new byte[0]);
            return;
        }
        removeInode(inode);
    }

    /** Marks a file with no links as an orphan: it is removed when its last opener closes it. */
    public void addOrphan(InodeRecord inode) {
        put(MetaKeys.id(MetaKeys.ORPHAN, inode.inodeId()), new byte[0]);
    }

    /** A file that was an orphan got a name again. */
    public void removeOrphan(InodeRecord inode) {
        delete(MetaKeys.id(MetaKeys.ORPHAN, inode.inodeId()));
    }

    /** Deletes an inode with no links and no openers, queueing its chunks for removal. */
    public void removeInode(InodeRecord inode) {
        delete(MetaKeys.id(MetaKeys.INODE, inode.inodeId()));
        delete(MetaKeys.id(MetaKeys.ORPHAN, inode.inodeId()));
        delete(MetaKeys.id(MetaKeys.STALE_CELLS, inode.inodeId()));
        putMdtData(inode.inodeId(), null);
        for (byte[][] pair : scan(MetaKeys.id(MetaKeys.XATTR, inode.inodeId()), null, Integer.MAX_VALUE)) {
            delete(pair[0]);
        }
        putLong(INODE_COUNT_KEY, Math.max(rootCount(), inodeCount() - 1));
        dev.plinth.meta.ops.Hsm.forget(this, inode);
        freeChunks(inode);
    }

    /**
     * Queues a file's chunks to be freed on its targets (its last link and open gone, or its bytes
     * released to an archive). The cleaner frees them no sooner than REMOVED_FILE_KEPT_MILLIS
     * later, and the file's REMOVED key stays until it has: a restore waits for it, so freeing can
     * never take bytes written after it.
     */
    public void freeChunks(InodeRecord inode) {
        if (inode.type() == FileType.FILE && inode.layout() != null && !inode.layout().chainIds().isEmpty()) {
            put(MetaKeys.id(MetaKeys.REMOVED, inode.inodeId()), MetaStore.encode(inode.layout()));
            removedFiles.add(new RemovedFile(inode.inodeId(), inode.layout()));
        }
    }

    /** Whether chunks of the file are queued to be freed and not yet freed. */
    public boolean chunksBeingFreed(long inodeId) {
        return getRaw(MetaKeys.id(MetaKeys.REMOVED, inodeId)) != null;
    }

    /** Whether any session has the file open. */
    public boolean isOpen(long inodeId) {
        return !scan(MetaKeys.id(MetaKeys.OPEN_BY_INODE, inodeId), null, 1).isEmpty();
    }

    // ---- permissions

    /** POSIX access check of {@code mask} (READ|WRITE|EXECUTE bits) for the caller. */
    public void check(InodeRecord inode, int mask) {
        check(caller(), inode, mask);
    }

    /** The POSIX access check for {@code caller}, who may be another MDT's (a change arriving from there). */
    public static void check(Credentials caller, InodeRecord inode, int mask) {
        if (!Permissions.allowed(caller, inode.mode(), inode.uid(), inode.gid(), inode.isDirectory(), mask)) {
            throw new PlinthException(ErrorCode.PERMISSION_DENIED, "uid " + caller.uid() + " on inode " + InodeId.format(inode.inodeId()));
        }
    }

    public boolean allowed(InodeRecord inode, int mask) {
        return Permissions.allowed(caller(), inode.mode(), inode.uid(), inode.gid(), inode.isDirectory(), mask);
    }

    public void requireOwner(InodeRecord inode) {
        if (!caller().isRoot() && caller().uid() != inode.uid()) {
            throw new PlinthException(ErrorCode.OPERATION_NOT_PERMITTED, "uid " + caller().uid() + " does not own inode " + InodeId.format(inode.inodeId()));
        }
    }

    /**
     * The checks unlink, rmdir and rename share for removing {@code name} from a directory: the
     * parent is a directory the caller may write and search, the entry exists, and a sticky
     * parent lets the caller remove it. Returns {parent, victim}.
     */
    public InodeRecord[] removableEntry(long parentId, String name) {
        Names.validateName(name);
        InodeRecord parent = directory(parentId);
        check(parent, WRITE | EXECUTE);
        DentryRecord entry = dentry(parent.inodeId(), name);
        if (entry == null || entry.pending()) {
            throw new PlinthException(ErrorCode.NOT_FOUND, "'" + name + "'");
        }
        requireUnmarked(parent.inodeId(), name);
        InodeRecord victim = inode(entry.inodeId()); // CROSS_DEVICE where another MDT holds it
        checkSticky(parent, victim);
        return new InodeRecord[] {parent, victim};
    }

    /** Fails with BUSY while a change between MDTs holds entry {@code name} of {@code parentId} (it goes or moves). */
    public void requireUnmarked(long parentId, String name) {
        if (dev.plinth.meta.ops.RemoteEntries.marked(this, parentId, name)) {
            throw new PlinthException(ErrorCode.BUSY, "'" + name + "' is being changed on another MDT");
        }
    }

    /** Sticky directories (like /tmp) let only the owner of an entry or of the directory remove it. */
    public void checkSticky(InodeRecord directory, InodeRecord victim) {
        checkSticky(caller(), directory, victim);
    }

    /** The sticky rule for {@code caller}, who may be another MDT's (a rename arriving from there): only the owner of the victim or of the directory, or root, removes or replaces an entry of a sticky directory. */
    public static void checkSticky(Credentials caller, InodeRecord directory, InodeRecord victim) {
        if ((directory.mode() & 01000) != 0 && !caller.isRoot() && caller.uid() != victim.uid() && caller.uid() != directory.uid()) {
            throw new PlinthException(ErrorCode.OPERATION_NOT_PERMITTED, "sticky directory");
        }
    }
}
