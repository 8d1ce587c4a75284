package dev.plinth.storage;

import dev.plinth.common.FileSystemSync;
import java.io.IOException;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;

/**
 * What an fsync of a file has to force on one target: per inode directory, the chunks changed since
 * they were last forced, and whether the directory itself changed (a chunk made or removed).
 *
 * <p>Complete only from a point where nothing was unsynced: it starts after a {@code syncfs} of the
 * target's file system (what an earlier process wrote and never forced is durable before this one
 * acknowledges an fsync), and a change is noted after it is made and before it is acknowledged, so
 * a {@code SyncFile} sent after the acknowledgement finds it. Bounded: when
 * {@link #DIRECTORIES_MAX} directories have changes pending, the file system is synced as a whole
 * and the record starts afresh.
 */
final class UnsyncedChanges {
    static final int DIRECTORIES_MAX = 65_536;

    /** One directory's pending changes; changed only inside the map's {@code compute}, so never after {@link #take} removed it. */
    static final class Pending {
        final Set<Path> chunks = new HashSet<>();
        boolean directoryChanged;
    }

    private final Path root;
    private volatile ConcurrentHashMap<Path, Pending> pending = new ConcurrentHashMap<>();
    /** A sync of the whole file system under way ({@link #syncEverything}), or null. */
    private volatile CompletableFuture<Void> syncingEverything;

    private UnsyncedChanges(Path root) {
        this.root = root;
    }

    /** Syncs the file system of {@code root} and starts recording there; null where syncfs cannot be called (every fsync then forces every chunk). */
    static UnsyncedChanges afterSyncing(Path root) throws IOException {
        if (!FileSystemSync.available()) {
            return null;
        }
        FileSystemSync.sync(root);
        return new UnsyncedChanges(root);
    }

    /** A chunk's files changed (written, cut, replaced, created). */
    void chunkChanged(Path dataPath) throws IOException {
        record(dataPath.getParent(), dataPath);
    }

    /** A chunk was made or removed in {@code directory}. */
    void directoryChanged(Path directory) throws IOException {
        record(directory, null);
    }

    private void record(Path directory, Path chunk) throws IOException {
        ConcurrentHashMap<Path, Pending> current = pending;
        if (current.size() >= DIRECTORIES_MAX && !current.containsKey(directory)) {
            syncEverything();
            current = pending;
        }
        current.compute(directory, (key, found) -> {
            Pending changes = found != null ? found : new Pending();
            if (chunk != null) {
                changes.chunks.add(chunk);
            } else {
                changes.directoryChanged = true;
            }
            return changes;
        });
    }

    /**
     * Removes and returns what {@code directory} has pending (null for nothing). Where a sync of the
     * whole file system is under way, waits for it first: changes noted before it began are in the
     * record it replaced.
     */
    Pending take(Path directory) throws IOException {
        Pending taken = pending.remove(directory);
        CompletableFuture<Void> everything = syncingEverything;
        if (everything != null) {
            try {
                everything.join();
            } catch (java.util.concurrent.CompletionException e) {
                throw new IOException("syncfs failed: " + e.getCause().getMessage(), e.getCause());
            }
        }
        return taken;
    }

    /** Puts back what {@link #take} returned, where forcing it failed part-way. */
    void restore(Path directory, Pending changes) throws IOException {
        for (Path chunk : changes.chunks) {
            record(directory, chunk);
        }
        if (changes.directoryChanged) {
            record(directory, null);
        }
    }

    /** Forgets {@code directory}: it was removed with all its chunks. */
    void forget(Path directory) {
        pending.remove(directory);
    }

    /** Syncs the file system and starts a new record; a failure is the caller's (the target fails, as on any failed fsync). */
    private synchronized void syncEverything() throws IOException {
        if (pending.size() < DIRECTORIES_MAX) {
            return; // another thread did it
        }
        CompletableFuture<Void> done = new CompletableFuture<>();
        // set before the record is replaced: a take that finds the new record then waits for this sync
        syncingEverything = done;
        pending = new ConcurrentHashMap<>();
        try {
            FileSystemSync.sync(root);
            done.complete(null);
        } catch (IOException | RuntimeException e) {
            done.completeExceptionally(e);
            throw e;
        } finally {
            syncingEverything = null;
        }
    }
}
