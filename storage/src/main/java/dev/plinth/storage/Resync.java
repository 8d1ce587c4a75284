package dev.plinth.storage;

import dev.plinth.common.ErrorCode;
import dev.plinth.common.PlinthException;
import dev.plinth.wire.messages.MgmtMessages.ChainInfo;
import dev.plinth.wire.messages.MgmtMessages.ChainSynced;
import dev.plinth.wire.messages.MgmtMessages.MemberState;
import dev.plinth.wire.messages.StorageMessages.ChunkEntry;
import dev.plinth.wire.messages.StorageMessages.ChunkId;
import dev.plinth.wire.messages.StorageMessages.ChunkList;
import dev.plinth.wire.messages.StorageMessages.ListChunks;
import io.prometheus.metrics.core.metrics.Counter;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Brings a returning target up to date with a chain it is SYNCING in: lists the chunks of the
 * chain on the chain's tail (a serving member, so only committed data), copies every chunk whose
 * version differs, drops chunks the chain no longer has, then tells mgmt, which makes the target
 * serving again. New writes reach the target as whole chunks meanwhile (see
 * {@link StorageService}), and the copy leaves those alone. One chain at a time, at a bounded
 * byte rate so client I/O keeps its bandwidth.
 */
final class Resync implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(Resync.class);
    private static final int PAGE = 1024;
    private static final int COPY_ATTEMPTS = 5;

    private final StorageNode node;
    private final StorageService service;
    private final long bytesPerSecond;
    private final Counter copiedBytes;
    private final Counter resyncs;
    private final Thread worker;
    private volatile boolean closed;

    Resync(StorageNode node, StorageService service, long bytesPerSecond, PrometheusRegistry registry) {
        this.node = node;
        this.service = service;
        this.bytesPerSecond = Math.max(1 << 20, bytesPerSecond);
        this.copiedBytes = dev.plinth.wire.Metrics.counter(registry, "plinth_resync_bytes", "Bytes copied to targets catching up with their chains.",
                "target");
        this.resyncs = dev.plinth.wire.Metrics.counter(registry, "plinth_resyncs", "Chain resyncs finished, by result.", "result");
        this.worker = Thread.ofPlatform().name("storage-resync").daemon().unstarted(this::run);
    }

    void start() {
        worker.start();
    }

    private void run() {
        while (!closed) {
            try {
                boolean worked = false;
                for (ChunkStore target : service.targets()) {
                    for (ChainInfo chain : node.map().chains()) {
                        if (!closed && chain.stateOf(target.targetId()) == MemberState.SYNCING && !chain.targetIds().isEmpty()) {
                            worked = true;
                            syncOne(target, chain);
                        }
                    }
                }
                StorageNode.sleep(worked ? 50 : 500);
            } catch (PlinthException e) {
                if (e.code() == ErrorCode.INTERRUPTED || closed) {
                    return;
                }
                LOG.warn("resync: {}", e.getMessage());
                resyncs.labelValues("failed").inc();
                sleepQuietly();
            } catch (RuntimeException e) {
                LOG.warn("resync failed", e);
                resyncs.labelValues("failed").inc();
                sleepQuietly();
            }
        }
    }

    private void sleepQuietly() {
        try {
            Thread.sleep(1000);
        } catch (InterruptedException e) {
            closed = true;
        }
    }

    private void syncOne(ChunkStore target, ChainInfo chain) {
        int source = chain.targetIds().getLast();
        long started = System.nanoTime();
        LOG.info("target {} resyncing chain {} (version {}) from target {}", target.targetId(), chain.chainId(), chain.version(), source);
        target.beginSync(chain.chainId(), chain.version());
        long copied = 0;
        int removed = 0;
        try {
            // Both listings come in the same order (ChunkStore.CHUNK_ORDER), so one pass over the two
            // compares them without holding either: a chunk only here is stale, one only at the source
            // or at another version is copied.
            Listing atSource = new Listing(after -> node.connectionTo(source)
                    .<ChunkList>request(new ListChunks(source, chain.chainId(), chain.version(), after, PAGE)));
            Listing here = new Listing(after -> {
                List<ChunkEntry> page = target.listChunks(chain.chainId(), after, PAGE);
                return new ChunkList(page, page.size() == PAGE);
            });
            long[] counts = new long[2];
            compare(atSource, here, chunk -> counts[0] += Math.max(0, copy(target, chain, source, chunk)), chunk -> {
                // Removing is the one step that can lose data, so the source is asked once more (by copying
                // from it): a listing taken while the source changed may lack a chunk it has.
                long bytes = copy(target, chain, source, chunk);
                if (bytes == NOT_AT_SOURCE) {
                    target.removeStale(chunk, chain.chainId()); // unless the chain wrote it since the sync began
                    counts[1]++;
                } else {
                    counts[0] += bytes;
                }
            }, () -> closed);
            copied = counts[0];
            removed = (int) counts[1];
            if (closed) {
                return;
            }
            node.reportSynced(new ChainSynced(chain.chainId(), target.targetId(), chain.version()));
            resyncs.labelValues("done").inc();
            LOG.info("target {} synced chain {}: {} bytes copied, {} chunks dropped, {} ms", target.targetId(), chain.chainId(), copied, removed,
                    (System.nanoTime() - started) / 1_000_000);
        } finally {
            target.endSync(chain.chainId());
        }
    }

    /**
     * Walks two listings in {@link ChunkStore#CHUNK_ORDER} side by side: a chunk at the source that
     * is missing here or at another version goes to {@code copy}, a chunk only here to
     * {@code remove}. Stops early when {@code stop} says so.
     */
    static void compare(Listing atSource, Listing here, java.util.function.Consumer<ChunkId> copy, java.util.function.Consumer<ChunkId> remove,
                        java.util.function.BooleanSupplier stop) {
        ChunkEntry theirs = atSource.next();
        ChunkEntry mine = here.next();
        while ((theirs != null || mine != null) && !stop.getAsBoolean()) {
            int order = theirs == null ? -1 : mine == null ? 1 : ChunkStore.CHUNK_ORDER.compare(mine.chunk(), theirs.chunk());
            if (order < 0) {
                remove.accept(mine.chunk());
                mine = here.next();
            } else if (order > 0) {
                copy.accept(theirs.chunk());
                theirs = atSource.next();
            } else {
                if (mine.version() != theirs.version()) {
                    copy.accept(theirs.chunk());
                }
                mine = here.next();
                theirs = atSource.next();
            }
        }
    }

    /** A chunk listing read a page at a time, from the start. */
    static final class Listing {
        private final java.util.function.Function<ChunkId, ChunkList> pages;
        private List<ChunkEntry> page = List.of();
        private int position;
        private boolean more = true;
        private ChunkId after;

        Listing(java.util.function.Function<ChunkId, ChunkList> pages) {
            this.pages = pages;
        }

        /** The next chunk, or null after the last. */
        ChunkEntry next() {
            while (position == page.size()) {
                if (!more) {
                    return null;
                }
                ChunkList fetched = pages.apply(after);
                page = fetched.chunks();
                position = 0;
                more = fetched.truncated() && !page.isEmpty();
                if (page.isEmpty()) {
                    return null;
                }
            }
            ChunkEntry entry = page.get(position++);
            after = entry.chunk();
            return entry;
        }
    }

    /** What {@link #copy} returns when the source does not hold the chunk. */
    private static final long NOT_AT_SOURCE = -1;

    /**
     * Copies one chunk whole from {@code source}; retries while writes change it under the read.
     * Returns bytes copied, or NOT_AT_SOURCE.
     */
    private long copy(ChunkStore target, ChainInfo chain, int source, ChunkId chunk) {
        for (int attempt = 1; ; attempt++) {
            try {
                return node.withReplicaCopy(source, chain.chainId(), chunk, copy -> {
                    if (copy == null) {
                        return NOT_AT_SOURCE; // removed since it was listed, or never there
                    }
                    target.installFromResync(chunk, chain.chainId(), copy.data(), copy.blockCrcs(), copy.version());
                    int bytes = copy.data().remaining();
                    copiedBytes.labelValues(Integer.toString(target.targetId())).inc(bytes);
                    throttle(bytes);
                    return (long) bytes;
                });
            } catch (PlinthException e) {
                if (e.code() != ErrorCode.CHECKSUM_MISMATCH || attempt >= COPY_ATTEMPTS) {
                    throw e;
                }
            }
        }
    }

    private void throttle(long bytes) {
        long pauseMillis = bytes * 1000 / bytesPerSecond;
        if (pauseMillis > 0) {
            StorageNode.sleep(pauseMillis);
        }
    }

    @Override
    public void close() {
        closed = true;
        StorageNode.stop(worker);
    }
}
