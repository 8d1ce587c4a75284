package dev.plinth.meta.store;

import dev.plinth.common.ErrorCode;
import dev.plinth.common.NonBlocking;
import dev.plinth.common.PlinthException;
import dev.plinth.common.codec.RecordCodec;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.rocksdb.BlockBasedTableConfig;
import org.rocksdb.BloomFilter;
import org.rocksdb.FlushOptions;
import org.rocksdb.Options;
import org.rocksdb.ReadOptions;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;
import org.rocksdb.RocksIterator;
import org.rocksdb.Slice;
import org.rocksdb.WriteBatchWithIndex;
import org.rocksdb.WriteOptions;

/**
 * The RocksDB of one MDT replica. RocksDB's own WAL is off: the Raft log is the source of truth,
 * and every write batch carries the Raft index it applies, so after a crash the state machine
 * replays the log from the last index that reached an SST file. Values are a format byte and a
 * {@link RecordCodec} encoding. Thread-safe (RocksDB is); writes come from the one apply thread.
 */
public final class MetaStore implements AutoCloseable {
    public static final int FORMAT_VERSION = 1;
    private static final byte VALUE_FORMAT = 1;
    private static final byte[] FORMAT_KEY = MetaKeys.system("format");
    private static final byte[] APPLIED_KEY = MetaKeys.system("applied");

    static {
        RocksLibrary.load();
    }

    private final RocksDB db;
    private final Options options;
    private final WriteOptions writeOptions;
    private final ReadOptions readOptions;
    private final RecordCache cache;

    private MetaStore(RocksDB db, Options options, RecordCache cache) {
        this.db = db;
        this.cache = cache;
        this.options = options;
        this.writeOptions = new WriteOptions().setDisableWAL(true);
        this.readOptions = new ReadOptions();
    }

    /**
     * Bloom filters on the SST files and on the memtable: most point reads of a change look for a
     * key that is not there (the deduplication record of a new request id, the name a create or a
     * publish is about to take), and without a filter such a miss searches the memtable's skip list
     * and then every level's index. Files written before the filters were configured still read,
     * without one, until compaction rewrites them.
     */
    private static Options storeOptions() {
        BlockBasedTableConfig table = new BlockBasedTableConfig().setFilterPolicy(new BloomFilter(10, false));
        return new Options().setCreateIfMissing(true).setMaxBackgroundJobs(2).setTableFormatConfig(table)
                .setMemtablePrefixBloomSizeRatio(0.1).setMemtableWholeKeyFiltering(true);
    }

    /** Opens (creating if missing) the store in {@code directory}, keeping up to about {@code cacheBytes} of what queries read in memory. */
    public static MetaStore open(Path directory, long cacheBytes) {
        RecordCache cache = new RecordCache(cacheBytes);
        Options options = storeOptions();
        try {
            Files.createDirectories(directory);
            RocksDB db = RocksDB.open(options, directory.toString());
            MetaStore store = new MetaStore(db, options, cache);
            byte[] format = db.get(FORMAT_KEY);
            if (format == null) {
                db.put(FORMAT_KEY, ByteBuffer.allocate(4).putInt(FORMAT_VERSION).array());
                db.flush(new FlushOptions().setWaitForFlush(true));
            } else if (ByteBuffer.wrap(format).getInt() != FORMAT_VERSION) {
                store.close();
                throw new PlinthException(ErrorCode.NOT_SUPPORTED, "metadata store " + directory + " has format " + ByteBuffer.wrap(format).getInt());
            }
            return store;
        } catch (RocksDBException | java.io.IOException e) {
            options.close();
            throw new PlinthException(ErrorCode.IO_ERROR, "cannot open metadata store " + directory + ": " + e.getMessage(), e);
        }
    }

    /** What this thread reads while it runs {@link #readConsistently}: one snapshot, and the record cache's generation before it. */
    private record SnapshotView(ReadOptions options, long generation) {}

    private final ThreadLocal<SnapshotView> snapshotReads = new ThreadLocal<>();
    /** Keys of cached kinds that the batch being built writes (only the one apply thread writes). */
    private List<byte[]> changing = new ArrayList<>();

    /**
     * Runs {@code reads} against one snapshot of the store: a query that reads several keys (a
     * path's entries, then the inode an entry names) must not see a change land between two of
     * them, or a file replaced by a rename looks missing for a moment. Reads of the kinds the
     * {@link RecordCache} keeps go through it.
     */
    public <T> T readConsistently(java.util.function.Supplier<T> reads) {
        long generation = cache.generation(); // before the snapshot: see RecordCache
        org.rocksdb.Snapshot taken = db.getSnapshot();
        try (ReadOptions options = new ReadOptions().setSnapshot(taken)) {
            snapshotReads.set(new SnapshotView(options, generation));
            return reads.get();
        } finally {
            snapshotReads.remove();
            db.releaseSnapshot(taken);
        }
    }

    /** The value at {@code key}, or null; inside {@link #readConsistently} from its snapshot, through the cache for xattrs and Data-on-MDT bytes. */
    public byte[] get(byte[] key) {
        SnapshotView view = snapshotReads.get();
        if (view == null || !cachedAsStored(key)) {
            return get(optionsFor(view), key);
        }
        Object cached = cache.get(key, view.generation());
        if (cached != null) {
            return (byte[]) RecordCache.present(cached);
        }
        byte[] value = get(view.options(), key);
        keep(key, value, value, view);
        return value;
    }

    private byte[] get(ReadOptions options, byte[] key) {
        NonBlocking.check("a read of the metadata store"); // what the record cache does not hold may be on the disk
        try {
            return db.get(options, key);
        } catch (RocksDBException e) {
            throw readFailed(e);
        }
    }

    /**
     * The values of {@code keys} (null where absent), read in one call, from this thread's snapshot
     * if it has one (through the cache for the kinds it keeps as stored, as {@link #get(byte[])}).
     */
    public List<byte[]> getAll(List<byte[]> keys) {
        SnapshotView view = snapshotReads.get();
        List<byte[]> values = view == null ? null : cachedValues(keys, view);
        if (values != null) {
            return values;
        }
        NonBlocking.check("a read of the metadata store");
        try {
            values = db.multiGetAsList(optionsFor(view), keys);
        } catch (RocksDBException e) {
            throw readFailed(e);
        }
        if (view != null) {
            for (int i = 0; i < keys.size(); i++) {
                if (cachedAsStored(keys.get(i))) {
                    keep(keys.get(i), values.get(i), values.get(i), view);
                }
            }
        }
        return values;
    }

    /** All of {@code keys}' values from the cache, or null if any is not there (then one call reads them all). */
    private List<byte[]> cachedValues(List<byte[]> keys, SnapshotView view) {
        List<byte[]> values = new ArrayList<>(keys.size());
        for (byte[] key : keys) {
            Object cached = cachedAsStored(key) ? cache.get(key, view.generation()) : null;
            if (cached == null) {
                return null;
            }
            values.add((byte[]) RecordCache.present(cached));
        }
        return values;
    }

    /** Keeps what a query read at {@code key}: {@code record} (null: nothing there), stored as {@code stored}. */
    private void keep(byte[] key, Object record, byte[] stored, SnapshotView view) {
        cache.put(key, record == null ? RecordCache.ABSENT : record, stored == null ? 0 : stored.length, view.generation());
    }

    /** How a read sees the store: from the snapshot of {@link #readConsistently} where the thread runs in one ({@code view}). */
    private ReadOptions optionsFor(SnapshotView view) {
        return view != null ? view.options() : readOptions;
    }

    private static PlinthException readFailed(RocksDBException e) {
        return new PlinthException(ErrorCode.IO_ERROR, "metadata read failed: " + e.getMessage(), e);
    }

    /**
     * The record at an inode or directory-entry key, decoded (null: none), as a query reads it:
     * from the {@link RecordCache} where it may, and kept there. Outside {@link #readConsistently}
     * a plain read.
     */
    public <T extends Record> T getRecord(byte[] key, Class<T> type) {
        if (!cachedDecoded(key)) {
            throw new IllegalArgumentException("not an inode or directory-entry key");
        }
        SnapshotView view = snapshotReads.get();
        if (view != null) {
            Object cached = cache.get(key, view.generation());
            if (cached != null) {
                return type.cast(RecordCache.present(cached));
            }
        }
        byte[] value = get(optionsFor(view), key);
        T record = value == null ? null : decode(type, value);
        if (view != null) {
            keep(key, record, value, view);
        }
        return record;
    }

    /** Kinds of keys the cache keeps decoded: read with {@link #getRecord}. */
    private static boolean cachedDecoded(byte[] key) {
        return key.length > 0 && (key[0] == MetaKeys.INODE || key[0] == MetaKeys.DENTRY);
    }

    /** Kinds of keys the cache keeps as stored: read with {@link #get(byte[])} and {@link #getAll}. */
    private static boolean cachedAsStored(byte[] key) {
        return key.length > 0 && (key[0] == MetaKeys.XATTR || key[0] == MetaKeys.MDT_DATA);
    }

    /** Told of every key a change puts or deletes in the batch being built, before the batch commits. */
    public void changing(byte[] key) {
        if (cachedDecoded(key) || cachedAsStored(key)) {
            changing.add(key);
        }
    }

    /** Estimated bytes the record cache holds. */
    public long cacheBytes() {
        return cache.bytes();
    }

    /** Lookups the record cache answered, so far. */
    public long cacheHits() {
        return cache.hits();
    }

    /** Lookups it did not (read from RocksDB). */
    public long cacheMisses() {
        return cache.misses();
    }

    /** Reads through a pending batch, so a change sees its own writes. */
    public byte[] get(WriteBatchWithIndex batch, byte[] key) {
        try {
            return batch.getFromBatchAndDB(db, readOptions, key);
        } catch (RocksDBException e) {
            throw readFailed(e);
        }
    }

    /**
     * An iterator over keys below {@code upperBound} (exclusive), through {@code batch} if given.
     * The bound matters: without it a prefix scan of an empty range walks on through every
     * deleted key after it (RocksDB tombstones) to the next live key, a cost that grows with
     * every change ever made. Close the returned scan.
     */
    public Scan scan(WriteBatchWithIndex batch, byte[] upperBound) {
        NonBlocking.check("a scan of the metadata store");
        Slice bound = new Slice(upperBound);
        ReadOptions options = new ReadOptions().setIterateUpperBound(bound);
        if (batch == null && snapshotReads.get() != null) {
            options.setSnapshot(snapshotReads.get().options().snapshot());
        }
        RocksIterator base = db.newIterator(options);
        return new Scan(batch == null ? base : batch.newIteratorWithBase(base), options, bound);
    }

    /** A bounded iterator with the native objects it holds. */
    public record Scan(RocksIterator iterator, ReadOptions options, Slice bound) implements AutoCloseable {
        @Override
        public void close() {
            iterator.close();
            options.close();
            bound.close();
        }
    }

    /** Commits a batch together with the Raft term and index it applies. */
    public void commit(WriteBatchWithIndex batch, long term, long index) {
        List<byte[]> cachedKinds = changing;
        changing = new ArrayList<>();
        if (!cachedKinds.isEmpty()) {
            cache.committing(cachedKinds);
        }
        try {
            batch.put(APPLIED_KEY, ByteBuffer.allocate(16).putLong(term).putLong(index).array());
            db.write(writeOptions, batch);
        } catch (RocksDBException e) {
            // A failed local write leaves this replica behind the log: stop rather than diverge.
            throw new IllegalStateException("metadata write failed: " + e.getMessage(), e);
        } finally {
            if (!cachedKinds.isEmpty()) {
                cache.committed();
            }
        }
    }

    /** {term, index} of the last applied Raft entry that is in the store, or {0, 0}. */
    public long[] appliedTermIndex() {
        byte[] value = get(APPLIED_KEY);
        if (value == null) {
            return new long[] {0, 0};
        }
        ByteBuffer buffer = ByteBuffer.wrap(value);
        return new long[] {buffer.getLong(), buffer.getLong()};
    }

    /**
     * Writes a consistent copy of the store to {@code target} (which must not exist): hard links
     * to its table files and copies of the rest, as of one moment between two applied changes.
     * RocksDB's checkpoint flushes the memtables first (our WAL is off, so nothing else holds
     * them).
     */
    public void checkpoint(Path target) {
        try (org.rocksdb.Checkpoint checkpoint = org.rocksdb.Checkpoint.create(db)) {
            checkpoint.createCheckpoint(target.toString());
        } catch (RocksDBException e) {
            throw new PlinthException(ErrorCode.IO_ERROR, "cannot copy the metadata store to " + target + ": " + e.getMessage(), e);
        }
    }

    /** Persists everything written so far (memtables to SST), as a snapshot needs. */
    public void flush() {
        try (FlushOptions flushOptions = new FlushOptions().setWaitForFlush(true)) {
            db.flush(flushOptions);
        } catch (RocksDBException e) {
            throw new PlinthException(ErrorCode.IO_ERROR, "metadata flush failed: " + e.getMessage(), e);
        }
    }

    public static byte[] encode(Record value) {
        byte[] body = RecordCodec.encode(value);
        byte[] result = new byte[body.length + 1];
        result[0] = VALUE_FORMAT;
        System.arraycopy(body, 0, result, 1, body.length);
        return result;
    }

    public static <T extends Record> T decode(Class<T> type, byte[] value) {
        if (value.length == 0 || value[0] != VALUE_FORMAT) {
            throw new IllegalStateException("stored " + type.getSimpleName() + " has unknown value format");
        }
        return RecordCodec.decode(type, ByteBuffer.wrap(value, 1, value.length - 1));
    }

    @Override
    public void close() {
        writeOptions.close();
        readOptions.close();
        db.close();
        options.close();
    }
}
