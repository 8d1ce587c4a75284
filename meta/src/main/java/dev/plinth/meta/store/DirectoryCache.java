package dev.plinth.meta.store;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Decoded records that queries read for nearly every request and that change rarely: the inodes
 * of directories and the entries that name directories. Resolving {@code /bucket/key} reads the
 * root's inode, the bucket's entry and the bucket's inode before it reaches the object: three of a
 * small GET's seven RocksDB reads (design note 66).
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
 * Thread-safe. At most {@link #ENTRIES_MAX} records; a full cache starts over.
 */
final class DirectoryCache {
    static final int ENTRIES_MAX = 16_384;

    private record Entry(Object record, long generation) {}

    private final ConcurrentHashMap<ByteBuffer, Entry> entries = new ConcurrentHashMap<>();
    private final Object lock = new Object();
    private volatile long generation;

    /** Read by a query before it takes its snapshot. */
    long generation() {
        return generation;
    }

    /** The record stored for {@code key}, if a query of {@code queryGeneration} may use it; else null. */
    Object get(byte[] key, long queryGeneration) {
        Entry entry = entries.get(ByteBuffer.wrap(key));
        return entry != null && entry.generation() <= queryGeneration ? entry.record() : null;
    }

    /** Stores what a query of {@code queryGeneration} read for {@code key}, unless a commit has begun since. */
    void put(byte[] key, Object record, long queryGeneration) {
        synchronized (lock) {
            if ((queryGeneration & 1) != 0 || generation != queryGeneration) {
                return;
            }
            if (entries.size() >= ENTRIES_MAX) {
                entries.clear();
            }
            entries.put(ByteBuffer.wrap(key), new Entry(record, queryGeneration));
        }
    }

    /** Before a commit writes {@code keys}: forgets them, and no query stores anything until {@link #committed}. */
    void committing(List<byte[]> keys) {
        synchronized (lock) {
            generation++;
            for (byte[] key : keys) {
                entries.remove(ByteBuffer.wrap(key));
            }
        }
    }

    /** After that commit's write, successful or not. */
    void committed() {
        synchronized (lock) {
            generation++;
        }
    }

    int size() {
        return entries.size();
    }
}
