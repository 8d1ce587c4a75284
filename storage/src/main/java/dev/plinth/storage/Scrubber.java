package dev.plinth.storage;

import dev.plinth.common.ErrorCode;
import dev.plinth.common.PlinthException;
import dev.plinth.wire.messages.MgmtMessages.ChainInfo;
import dev.plinth.wire.messages.StorageMessages.ChunkId;
import io.prometheus.metrics.core.metrics.Counter;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Re-reads every chunk of this node's targets at a bounded byte rate, once per
 * {@code storage.scrub-interval-millis}, and checks each block's CRC32C; a damaged chunk is
 * replaced with a copy from another serving member of its chain (a one-replica chunk can only be
 * reported). Chunks that a reader found damaged ({@code RepairChunk}) are checked first, from a
 * bounded queue. Chunks of chains that no longer include the target (it was replaced after
 * being declared lost) are removed as the pass meets them.
 */
final class Scrubber implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(Scrubber.class);
    private static final int PAGE = 256;
    private static final int REPAIR_ATTEMPTS = 5;
    private static final int SUSPECTS_MAX = 1024;

    private record Suspect(ChunkStore target, ChunkId chunk) {}

    private final StorageNode node;
    private final StorageService service;
    private final long bytesPerSecond;
    private final long intervalNanos;
    private final BlockingQueue<Suspect> suspects = new ArrayBlockingQueue<>(SUSPECTS_MAX);
    private final Counter scrubbedBytes;
    private final Counter checkedChunks;
    private final Thread worker;
    private volatile boolean closed;

    Scrubber(StorageNode node, StorageService service, long bytesPerSecond, long intervalMillis, PrometheusRegistry registry) {
        this.node = node;
        this.service = service;
        this.bytesPerSecond = Math.max(1 << 20, bytesPerSecond);
        this.intervalNanos = TimeUnit.MILLISECONDS.toNanos(Math.max(100, intervalMillis));
        this.scrubbedBytes = dev.plinth.wire.Metrics.counter(registry, "plinth_scrub_bytes", "Bytes the scrubber re-read and checked.", "target");
        this.checkedChunks = dev.plinth.wire.Metrics.counter(registry, "plinth_scrub_chunks",
                "Chunks checked by the scrubber or on a reader's report, by result (ok, repaired, unrepairable; orphaned: removed, "
                        + "its chain gave this target's place to another).", "target", "result");
        this.worker = Thread.ofPlatform().name("storage-scrub").daemon().unstarted(this::run);
    }

    void start() {
        worker.start();
    }

    /** A reader found {@code chunk} damaged here: check it soon. Dropped when the queue is full (the scrubber finds it anyway). */
    void suspect(int targetId, ChunkId chunk) {
        ChunkStore target = service.targets().stream().filter(t -> t.targetId() == targetId).findFirst().orElse(null);
        if (target != null) {
            suspects.offer(new Suspect(target, chunk));
        }
    }

    private void run() {
        long nextPass = System.nanoTime() + intervalNanos;
        try {
            while (!closed) {
                Suspect suspect = suspects.poll(Math.max(1, Math.min(1000, (nextPass - System.nanoTime()) / 1_000_000)), TimeUnit.MILLISECONDS);
                if (suspect != null) {
                    check(suspect.target(), suspect.chunk(), ChunkStore.UNREADABLE);
                } else if (System.nanoTime() >= nextPass) {
                    for (ChunkStore target : service.targets()) {
                        pass(target);
                    }
                    nextPass = System.nanoTime() + intervalNanos;
                }
            }
        } catch (InterruptedException e) {
            // closing
        } catch (RuntimeException e) {
            if (!closed) {
                LOG.error("scrubber stopped", e);
            }
        }
    }

    private void pass(ChunkStore target) throws InterruptedException {
        ChunkId after = null;
        List<ChunkStore.StoredChunk> page;
        do {
            page = target.scan(after, PAGE);
            for (ChunkStore.StoredChunk stored : page) {
                if (closed) {
                    return;
                }
                Suspect suspect = suspects.poll();
                if (suspect != null) {
                    check(suspect.target(), suspect.chunk(), ChunkStore.UNREADABLE);
                }
                if (orphaned(target, stored)) {
                    target.removeStale(stored.chunk(), stored.chainId());
                    checkedChunks.labelValues(Integer.toString(target.targetId()), "orphaned").inc();
                    after = stored.chunk();
                    continue;
                }
                check(target, stored.chunk(), stored.chainId());
                scrubbedBytes.labelValues(Integer.toString(target.targetId())).inc(stored.length());
                long pauseMillis = stored.length() * 1000L / bytesPerSecond;
                if (pauseMillis > 0) {
                    Thread.sleep(pauseMillis);
                }
                after = stored.chunk();
            }
        } while (page.size() == PAGE);
    }

    /**
     * Whether a chunk belongs to a chain that no longer has this target: mgmt gave its place to
     * another target (the target was declared lost, then came back), which copied the chain's
     * chunks, so this copy is garbage. A chain this node's map does not know yet is left alone.
     */
    private boolean orphaned(ChunkStore target, ChunkStore.StoredChunk stored) {
        ChainInfo chain = stored.chainId() == ChunkStore.UNREADABLE ? null : node.map().chain(stored.chainId());
        return chain != null && chain.stateOf(target.targetId()) == null;
    }

    /** Verifies one chunk and repairs it if damaged; {@code chainId} as the scan found it, or UNREADABLE to look it up. */
    private void check(ChunkStore target, ChunkId chunk, int chainId) {
        String targetLabel = Integer.toString(target.targetId());
        try {
            target.verify(chunk);
            checkedChunks.labelValues(targetLabel, "ok").inc();
            return;
        } catch (PlinthException e) {
            if (e.code() != ErrorCode.CHECKSUM_MISMATCH) {
                LOG.warn("scrub of {} on target {}: {}", chunk, target.targetId(), e.getMessage());
                return;
            }
            LOG.warn("target {}: {} is damaged ({}); repairing from a replica", target.targetId(), chunk, e.getMessage());
        }
        boolean repaired = repair(target, chunk, chainId);
        checkedChunks.labelValues(targetLabel, repaired ? "repaired" : "unrepairable").inc();
        if (repaired) {
            LOG.info("target {}: {} repaired from a replica", target.targetId(), chunk);
        } else {
            LOG.error("target {}: {} is damaged and no replica could repair it", target.targetId(), chunk);
        }
    }

    private boolean repair(ChunkStore target, ChunkId chunk, int chainId) {
        for (ChainInfo chain : node.map().chains()) {
            if ((chainId != ChunkStore.UNREADABLE && chain.chainId() != chainId) || chain.replicas() < 2
                    || chain.stateOf(target.targetId()) == null) {
                continue;
            }
            for (int source : chain.targetIds()) {
                if (source != target.targetId() && repairFrom(target, chain.chainId(), source, chunk)) {
                    return true;
                }
            }
        }
        return false;
    }

    private boolean repairFrom(ChunkStore target, int chainId, int source, ChunkId chunk) {
        for (int attempt = 0; attempt < REPAIR_ATTEMPTS; attempt++) {
            try {
                Boolean repaired = node.withReplicaCopy(source, chainId, chunk, copy -> {
                    if (copy == null) {
                        return false; // the replica does not have it
                    }
                    if (!target.installRepair(chunk, chainId, copy.data(), copy.blockCrcs(), copy.version())) {
                        return null; // a write made ours newer meanwhile: fetch again
                    }
                    target.verify(chunk);
                    return true;
                });
                if (repaired != null) {
                    return repaired;
                }
            } catch (PlinthException e) {
                if (e.code() != ErrorCode.CHECKSUM_MISMATCH && !e.code().retryable()) {
                    LOG.warn("repair of {} from target {}: {}", chunk, source, e.getMessage());
                    return false;
                }
            }
        }
        return false;
    }

    @Override
    public void close() {
        closed = true;
        StorageNode.stop(worker);
    }
}
