package dev.plinth.fuse;

import dev.plinth.common.ErrorCode;
import dev.plinth.common.PlinthException;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongFunction;

/**
 * The {@code security.capability} attribute of the inodes this mount writes, kept for up to the
 * attribute timeout.
 *
 * <p>Before every write the kernel asks whether the file has file capabilities to strip
 * ({@code file_remove_privs}): FUSE clears {@code SB_NOSEC}, so no inode is ever marked as having
 * none. Without this cache each 4 KiB write cost a metadata round trip for an attribute that
 * almost no file has. The kernel already trusts its cached mode for the same decision about
 * set-user-ID bits for the attribute timeout, so the answer is trusted as long; a change made
 * through this mount (set, remove, or the kernel's own removal after a write) is seen at once.
 */
final class CapabilityCache {
    static final String NAME = "security.capability";
    private static final int INODES_MAX = 4096;

    /** {@code value} null: the inode has no such attribute. */
    private record Entry(byte[] value, long fetchedNanos) {}

    private final long timeoutNanos;
    /** Asks the cluster for the attribute; fails with NO_ATTRIBUTE where there is none. */
    private final LongFunction<byte[]> fetch;
    private final Map<Long, Entry> entries = new ConcurrentHashMap<>();
    /** Moves on every change through this mount: a fetch that overlapped one is not kept. */
    private final AtomicLong changes = new AtomicLong();

    CapabilityCache(long timeoutMillis, LongFunction<byte[]> fetch) {
        this.timeoutNanos = timeoutMillis * 1_000_000;
        this.fetch = fetch;
    }

    /** The attribute's value (null for none), from the cache while fresh, else from the cluster. */
    byte[] get(long inodeId) {
        long now = System.nanoTime();
        Entry cached = entries.get(inodeId);
        if (cached != null && now - cached.fetchedNanos < timeoutNanos) {
            return cached.value;
        }
        long changesBefore = changes.get();
        byte[] value;
        try {
            value = fetch.apply(inodeId);
        } catch (PlinthException e) {
            if (e.code() != ErrorCode.NO_ATTRIBUTE) {
                throw e;
            }
            value = null;
        }
        if (timeoutNanos > 0 && changes.get() == changesBefore) {
            if (entries.size() >= INODES_MAX) {
                entries.clear(); // bounded; the entries are only worth a round trip each
            }
            entries.put(inodeId, new Entry(value, now));
        }
        return value;
    }

    /** The attribute of {@code inodeId} changed (or may have) through this mount. */
    void forget(long inodeId) {
        changes.incrementAndGet();
        entries.remove(inodeId);
    }
}
