package dev.plinth.meta.store;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;

/**
 * What queries read from the store, kept in memory so that the next query for the same key skips
 * RocksDB (a native call, a memtable skip-list search, the levels' filters and a decode): inodes
 * and directory entries decoded, xattrs and Data-on-MDT bytes as stored, and the absence of any of
 * them. A small S3 GET reads five such records (design notes 66, 69).
 *
 * <p>Queries read one RocksDB snapshot each ({@link MetaStore#readConsistently}), and a cached
 * record must be the one that snapshot holds. A generation counter makes sure of it. It is even
 * between commits and odd while a commit that writes a cached kind of key is under way: such a
 * commit forgets its keys and makes the generation odd before it writes, and even again after.
 * A query reads the generation before it takes its snapshot, and
 * <ul>
 * <li>stores what it read only if the generation was even and has not moved since, so no commit
 *     began between its snapshot and the store: the record is the latest, and the next commit
 *     that writes the key forgets it before writing;</li>
 * <li>uses a record only if it was stored at or before the query's own generation, so no commit
 *     that wrote the key (and was visible to the snapshot) can have happened after it was stored.</li>
 * </ul>
 *
 * <p>Bounded by an estimate of the bytes it holds: records go into a recent map until it holds
 * half the budget; it then becomes the older map (the previous older one is dropped) and a new
 * recent map starts. A record found in the older map moves to the recent one. So records read
 * again and again stay, a scan over more files than fit passes through without clearing the rest
 * more than twice, and the cache holds at most its budget. Thread-safe.
 */
final class RecordCache {
    /** The value cached for a key that the store does not hold. */
    static final Object ABSENT = new Object();

    /** What a hit of {@link #get} stands for: the record, or null for {@link #ABSENT}. */
    static Object present(Object cached) {
        return cached == ABSENT ? null : cached;
    }
    /** Estimated cost of one cached record beyond its key and stored value: map node, key wrapper, entry, decoded object. */
    static final int ENTRY_OVERHEAD_BYTES = 160;

    private record Entry(Object value, long generation, long bytes) {}

    private final long halfBytes;
    private final Object lock = new Object();
    private volatile ConcurrentHashMap<ByteBuffer, Entry> recent = new ConcurrentHashMap<>();
    private volatile ConcurrentHashMap<ByteBuffer, Entry> older = new ConcurrentHashMap<>();
    /** Estimated bytes of {@link #recent}, and of {@link #older} when it was recent; guarded by {@link #lock}. */
    private long recentBytes;
    private long olderBytes;
    private volatile long generation;
    private final LongAdder hits = new LongAdder();
    private final LongAdder misses = new LongAdder();

    /** A cache of at most about {@code bytesMax} (0: nothing is kept). */
    RecordCache(long bytesMax) {
        if (bytesMax < 0) {
            throw new IllegalArgumentException("bytesMax < 0: " + bytesMax);
        }
        this.halfBytes = bytesMax / 2;
    }

    /** Read by a query before it takes its snapshot. */
    long generation() {
        return generation;
    }

    /** The record (or {@link #ABSENT}) stored for {@code key}, if a query of {@code queryGeneration} may use it; else null. */
    Object get(byte[] key, long queryGeneration) {
        ByteBuffer wrapped = ByteBuffer.wrap(key);
        Entry entry = recent.get(wrapped);
        if (entry == null && (entry = older.get(wrapped)) != null) {
            synchronized (lock) {
                // only if a commit has not forgotten it meanwhile (committing removes under this lock)
                if (older.remove(wrapped, entry)) {
                    olderBytes -= entry.bytes();
                    add(wrapped, entry);
                }
            }
        }
        if (entry == null || entry.generation() > queryGeneration) {
            misses.increment();
            return null;
        }
        hits.increment();
        return entry.value();
    }

    /**
     * Stores what a query of {@code queryGeneration} read for {@code key} ({@link #ABSENT}: nothing),
     * {@code storedBytes} long in the store, unless a commit has begun since.
     */
    void put(byte[] key, Object record, int storedBytes, long queryGeneration) {
        long bytes = (long) key.length + storedBytes + ENTRY_OVERHEAD_BYTES;
        synchronized (lock) {
            if ((queryGeneration & 1) != 0 || generation != queryGeneration || bytes > halfBytes) {
                return;
            }
            add(ByteBuffer.wrap(key), new Entry(record, queryGeneration, bytes));
        }
    }

    /** Under {@link #lock}. */
    private void add(ByteBuffer key, Entry entry) {
        if (recentBytes + entry.bytes() > halfBytes) {
            older = recent;
            olderBytes = recentBytes;
            recent = new ConcurrentHashMap<>();
            recentBytes = 0;
        }
        Entry replaced = recent.put(key, entry);
        recentBytes += entry.bytes() - (replaced == null ? 0 : replaced.bytes());
    }

    /** Before a commit writes {@code keys}: forgets them, and no query stores anything until {@link #committed}. */
    void committing(List<byte[]> keys) {
        synchronized (lock) {
            generation++;
            for (byte[] key : keys) {
                ByteBuffer wrapped = ByteBuffer.wrap(key);
                Entry removed = recent.remove(wrapped);
                if (removed != null) {
                    recentBytes -= removed.bytes();
                }
                removed = older.remove(wrapped);
                if (removed != null) {
                    olderBytes -= removed.bytes();
                }
            }
        }
    }

    /** After that commit's write, successful or not. */
    void committed() {
        synchronized (lock) {
            generation++;
        }
    }

    /** Estimated bytes held. */
    long bytes() {
        synchronized (lock) {
            return recentBytes + olderBytes;
        }
    }

    int size() {
        return recent.size() + older.size();
    }

    /** Lookups that found a record a query could use, so far. */
    long hits() {
        return hits.sum();
    }

    /** Lookups that did not (the query read the store). */
    long misses() {
        return misses.sum();
    }
}
