package dev.plinth.client;

import dev.plinth.common.Layout;
import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;

/**
 * How a file's bytes past its Data-on-MDT part lie on the targets: the one line along which
 * layouts differ. {@link PlinthFile} keeps what every layout shares (write-behind and its
 * ordering, the Data-on-MDT part, read-ahead, size and mtime); an implementation maps byte
 * ranges onto target requests, with its own checksums, retries and repair. Replicated chains
 * ({@link ReplicatedChains}) are one; erasure-coded stripes and compressed blocks are others,
 * chosen by the file's layout ({@link #of}). Thread-safe: a handle calls it under its own lock,
 * and its futures complete on network threads.
 */
interface StripeIo {
    /**
     * Stores {@code length} bytes of {@code source} (from its position; copied before this
     * returns, so the caller may reuse it) at file offset {@code offset}; the future completes when
     * every byte is acknowledged as the layout defines it, or fails with the first failure once
     * retries are over. Takes its share of the client's write budget while in flight.
     */
    CompletableFuture<Void> write(long offset, ByteBuffer source, int length);

    /** Reads [offset, offset + length), verified; holes read as zeros. */
    CompletableFuture<Extent> read(long offset, int length);

    /** Cuts (or extends) the stored bytes from a file of at most {@code oldSize} bytes to {@code newSize}. */
    void truncate(long oldSize, long newSize);

    /** Makes everything acknowledged so far durable on the targets (fsync). */
    void sync();

    /** A {@link #startSync} under way. */
    interface SyncInFlight {
        /** Waits for the sync to end (retrying it as {@link #sync} does), or throws its failure. */
        void await();
    }

    /**
     * Starts {@link #sync} and returns without waiting for the targets, so that the caller can
     * settle the file's size with meta meanwhile: neither needs anything from the other. A layout
     * whose sync writes first (an erasure-coded row still held) syncs here and returns it done.
     */
    default SyncInFlight startSync() {
        sync();
        return () -> {};
    }

    /**
     * Sends what the layout holds back to write in larger units (an erasure-coded row being
     * filled): a handle calls it before it waits for its writes, whose futures complete only
     * once their bytes are sent.
     */
    default void flush() {}

    /** The implementation a file's layout chooses, for the chunks the layout names (a migrated file's are its copy's). */
    static StripeIo of(PlinthClient client, long fileInodeId, Layout layout) {
        long inodeId = layout.chunkOwner(fileInodeId);
        StripeIo stored = layout.erasureCoded() ? new ErasureCodedStripes(client, fileInodeId, layout)
                : new ReplicatedChains(client, inodeId, layout);
        return layout.compressed() ? new CompressedBlocks(stored, layout, client.codingExecutor()) : stored;
    }
}
