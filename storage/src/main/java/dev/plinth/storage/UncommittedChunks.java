package dev.plinth.storage;

import dev.plinth.wire.messages.StorageMessages.ChunkId;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Which chunks of this node hold a write that the rest of their chain has not acknowledged:
 * while a write is on its way down, and after one failed to get there (until a later write of
 * the chunk does). Such a chunk is not served to readers by a non-tail member (CRAQ's dirty
 * versions). Bounded: past {@link #FAILED_MAX} failed chunks, every chunk counts as uncommitted,
 * which sends reads to tails (slower, never wrong). In memory: after a restart a failed write
 * is forgotten, and the replicas agree again with the chunk's next write or resync.
 */
final class UncommittedChunks {
    static final int FAILED_MAX = 65_536;

    private record Key(int targetId, ChunkId chunk) {}

    private final ConcurrentHashMap<Key, Integer> inFlight = new ConcurrentHashMap<>();
    private final Set<Key> failed = ConcurrentHashMap.newKeySet();
    private volatile boolean overflowed;

    void begin(int targetId, ChunkId chunk) {
        inFlight.merge(new Key(targetId, chunk), 1, Integer::sum);
    }

    /** A write that changed nothing here after all. */
    void abort(int targetId, ChunkId chunk) {
        inFlight.computeIfPresent(new Key(targetId, chunk), (k, count) -> count == 1 ? null : count - 1);
    }

    void end(int targetId, ChunkId chunk, boolean reachedTail) {
        Key key = new Key(targetId, chunk);
        inFlight.computeIfPresent(key, (k, count) -> count == 1 ? null : count - 1);
        if (reachedTail) {
            failed.remove(key);
        } else if (failed.size() < FAILED_MAX) {
            failed.add(key);
        } else {
            overflowed = true;
        }
    }

    boolean uncommitted(int targetId, ChunkId chunk) {
        Key key = new Key(targetId, chunk);
        return overflowed || inFlight.containsKey(key) || failed.contains(key);
    }
}
