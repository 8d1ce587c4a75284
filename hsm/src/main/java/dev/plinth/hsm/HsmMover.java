package dev.plinth.hsm;

import static dev.plinth.wire.messages.HsmMessages.*;

import dev.plinth.client.PlinthClient;
import dev.plinth.client.PlinthFile;
import dev.plinth.common.Config;
import dev.plinth.common.ErrorCode;
import dev.plinth.common.InodeId;
import dev.plinth.common.PlinthException;
import dev.plinth.common.Settings;
import dev.plinth.wire.messages.MetaMessages.Attributes;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A mover (Lustre's copytool): takes HSM actions from the metadata service, copies bytes between
 * the file system and the archives, and reports the outcome. Runs inside the embedded server or
 * as its own process ({@code plinth hsm agent}); any number may run, since an action belongs to
 * the mover that took it only while that mover reports progress within its lease. The client
 * must act as root.
 */
public final class HsmMover implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(HsmMover.class);
    /** An idle mover asks the queue this often (a query, no log entry): a reader of a released file waits for it first. */
    private static final long IDLE_POLL_MILLIS_MAX = 100;

    private final PlinthClient client;
    private final ArchiveCatalog archives;
    private final long leaseMillis;
    private final int partBytes;
    private final int partParallelism;
    private final int actionsMax;
    private final Semaphore slots;
    private final long removedCopyGraceMillis;
    private long sweptAtMillis;
    private final ExecutorService workers = Executors.newThreadPerTaskExecutor(Thread.ofVirtual().name("hsm-action-", 0).factory());
    private final Set<Long> running = ConcurrentHashMap.newKeySet();
    private final Thread poller;
    /** How this mover is named in reports: host and process. */
    private final String name = ProcessHandle.current().pid() + "@" + hostName();
    private final AtomicLong actionsDone = new AtomicLong();
    private final io.prometheus.metrics.core.metrics.Counter actionsCounted;
    private final io.prometheus.metrics.core.metrics.Counter bytesCounted;
    private final io.prometheus.metrics.core.metrics.Histogram restoreSeconds;
    private volatile boolean closed;

    /** Restores take from a second to many minutes: wider buckets than the RPC latencies'. */
    private static final double[] RESTORE_SECONDS_BUCKETS = {0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800};

    public HsmMover(PlinthClient client, Config config) {
        this(client, config, dev.plinth.wire.Metrics.unexposed());
    }

    /** As above, counting actions, bytes and restore latency into {@code registry}. */
    public HsmMover(PlinthClient client, Config config, io.prometheus.metrics.model.registry.PrometheusRegistry registry) {
        this.actionsCounted = dev.plinth.wire.Metrics.counter(registry, "plinth_hsm_actions",
                "HSM actions this mover ended, by kind (archive, restore, remove) and result (succeeded, failed, lost).", "kind", "result");
        this.bytesCounted = dev.plinth.wire.Metrics.counter(registry, "plinth_hsm_bytes",
                "Bytes this mover copied to (archive) or from (restore) archives.", "kind");
        this.restoreSeconds = io.prometheus.metrics.core.metrics.Histogram.builder().name("plinth_hsm_restore_duration_seconds")
                .help("Time from a restore's request to its end, as this mover finished it (what a reader of a released file waits).")
                .classicOnly().classicUpperBounds(RESTORE_SECONDS_BUCKETS).register(registry);
        this.client = client;
        this.archives = new ArchiveCatalog(client, config.get(Settings.HSM_ARCHIVE_RETRY_MILLIS));
        this.leaseMillis = config.get(Settings.HSM_ACTION_LEASE_MILLIS);
        this.partBytes = (int) Math.min(1L << 30, Math.max(64 << 10, config.get(Settings.HSM_PART_BYTES)));
        this.partParallelism = Math.max(1, config.get(Settings.HSM_PART_PARALLELISM));
        this.actionsMax = Math.max(1, config.get(Settings.HSM_MOVER_ACTIONS));
        this.slots = new Semaphore(actionsMax);
        this.removedCopyGraceMillis = config.get(Settings.HSM_REMOVED_COPY_GRACE_MILLIS);
        this.poller = Thread.ofPlatform().name("hsm-mover").daemon().unstarted(this::pollLoop);
    }

    public HsmMover start() {
        poller.start();
        return this;
    }

    private static String hostName() {
        try {
            return java.net.InetAddress.getLocalHost().getHostName();
        } catch (java.io.IOException e) {
            return "localhost";
        }
    }

    /** Actions this mover finished, whatever their result. */
    public long actionsDone() {
        return actionsDone.get();
    }

    private static final long REPORT_MILLIS = 5000;
    private static final int FAILURES_KEPT = 20;
    /** The latest failures, newest last, for the status page (mgmt keeps what movers report). */
    private final java.util.ArrayDeque<dev.plinth.wire.messages.MgmtMessages.HsmFailure> failures = new java.util.ArrayDeque<>();
    private long reportedAtMillis;

    private void report() {
        long now = System.currentTimeMillis();
        if (now - reportedAtMillis < REPORT_MILLIS) {
            return;
        }
        reportedAtMillis = now;
        int waiting = 0;
        int active = 0;
        for (int mdt : client.hsm().mdts()) {
            for (Action action : client.hsm().actions(mdt, 0, 1000).actions()) {
                if (action.status() == RUNNING) {
                    active++;
                } else {
                    waiting++;
                }
            }
        }
        List<dev.plinth.wire.messages.MgmtMessages.HsmFailure> latest;
        synchronized (failures) {
            latest = List.copyOf(failures);
        }
        client.mgmt().request(new dev.plinth.wire.messages.MgmtMessages.ReportHsm(name, waiting, active, latest));
    }

    private void pollLoop() {
        long pause = 5;
        while (!closed) {
            try {
                report();
            } catch (RuntimeException e) {
                LOG.debug("HSM report to mgmt not sent: {}", e.toString()); // the status page's view only
            }
            try {
                sweepRemovedCopies();
            } catch (RuntimeException e) {
                LOG.warn("HSM: deleting removed files' copies failed, will retry: {}", e.toString());
            }
            try {
                boolean took = false;
                for (int mdt : client.hsm().mdts()) {
                    took |= takeFrom(mdt);
                }
                if (took) {
                    pause = 5;
                    continue;
                }
            } catch (RuntimeException e) {
                if (!closed) {
                    LOG.warn("HSM mover: {}", e.toString());
                }
                pause = IDLE_POLL_MILLIS_MAX;
            }
            try {
                Thread.sleep(pause);
            } catch (InterruptedException e) {
                return;
            }
            pause = Math.min(IDLE_POLL_MILLIS_MAX, pause * 2);
        }
    }

    /** Takes what MDT {@code mdt} has queued, as far as this mover has free slots; whether it took any. */
    private boolean takeFrom(int mdt) {
        if (slots.availablePermits() == 0 || !anythingToTake(mdt)) {
            return false;
        }
        ActionList taken = client.hsm().take(mdt, leaseMillis, slots.availablePermits());
        for (Action action : taken.actions()) {
            slots.acquireUninterruptibly();
            running.add(action.inodeId()); // one action per file at a time; inode ids, unlike action ids, are unique across MDTs
            workers.execute(() -> {
                try {
                    run(action);
                } finally {
                    running.remove(action.inodeId());
                    slots.release();
                    actionsDone.incrementAndGet();
                }
            });
        }
        return !taken.actions().isEmpty();
    }

    /**
     * Deletes the archived copies of files removed more than hsm.removed-copy-grace-millis ago
     * (with 0, keeps them and only drops the MDT's list of them), at most once every few seconds
     * and a page at a time. Several movers may delete the same copy: deleting is idempotent.
     */
    void sweepRemovedCopies() {
        long now = System.currentTimeMillis();
        if (now - sweptAtMillis < REPORT_MILLIS) {
            return;
        }
        sweptAtMillis = now;
        for (int mdt : client.hsm().mdts()) {
            sweepRemovedCopies(mdt, now);
        }
    }

    private void sweepRemovedCopies(int mdt, long now) {
        long after = 0;
        for (int page = 0; page < 10; page++) {
            RemovedCopies copies = client.hsm().removedCopies(mdt, after, 256);
            List<Long> done = new java.util.ArrayList<>();
            for (RemovedCopy removed : copies.copies()) {
                after = removed.inodeId();
                if (removedCopyGraceMillis == 0) {
                    done.add(removed.inodeId());
                } else if (now * 1_000_000 - removed.removedAtNanos() >= removedCopyGraceMillis * 1_000_000) {
                    try {
                        archives.store(removed.copy().archiveId()).delete(removed.copy().objectKey());
                        done.add(removed.inodeId());
                    } catch (IOException | PlinthException e) {
                        LOG.warn("deleting {} (a removed file's copy) failed, will retry: {}", removed.copy().objectKey(), e.toString());
                    }
                }
            }
            if (!done.isEmpty()) {
                client.hsm().forgetRemovedCopies(mdt, done);
            }
            if (!copies.more()) {
                break;
            }
        }
    }

    /** A read first: taking is a logged change, not to be made every poll of an idle queue. */
    private boolean anythingToTake(int mdt) {
        long now = System.currentTimeMillis() * 1_000_000;
        for (Action action : client.hsm().actions(mdt, 0, 64).actions()) {
            if (!running.contains(action.inodeId()) && (action.status() == WAITING || action.leaseUntilNanos() < now)) {
                return true;
            }
        }
        return false;
    }

    private void run(Action action) {
        try {
            switch (action.kind()) {
                case ARCHIVE -> archive(action);
                case RESTORE -> restore(action);
                case REMOVE -> remove(action);
                default -> finish(action, FAILED, "this mover does not know action kind " + action.kind(), 0, 0, null);
            }
        } catch (ActionLost e) {
            LOG.info("HSM {} of {} was cancelled or taken over", kindName(action.kind()), InodeId.format(action.inodeId()));
        } catch (ObjectStore.ObjectMissingException e) {
            finish(action, COPY_LOST, e.getMessage(), 0, 0, null);
        } catch (IOException | RuntimeException e) {
            LOG.warn("HSM {} of {} failed: {}", kindName(action.kind()), InodeId.format(action.inodeId()), e.toString());
            finish(action, FAILED, e.getMessage() == null ? e.toString() : e.getMessage(), 0, 0, null);
        }
    }

    private void archive(Action action) throws IOException {
        Attributes attributes = client.getAttr(action.inodeId());
        ObjectStore store = archives.store(action.archiveId());
        String key = InodeId.format(action.inodeId()) + "/" + UUID.randomUUID();
        Progress progress = new Progress(action, attributes.sizeBytes());
        ObjectStore.Put put;
        // The bytes as stored (an encrypted file goes to the archive encrypted, and comes back so), through a handle the MDT
        // does not count: a mover that dies mid-copy must not leave the file open (unreleasable) until its session ends. If the
        // file changes or goes meanwhile, its size or mtime differ when the archive finishes, and the copy is dropped.
        try (PlinthFile file = client.openUncounted(attributes)) {
            put = store.put(key, (offset, length) -> read(file, offset, length), attributes.sizeBytes(), partBytes, partParallelism,
                    progress::add);
        }
        ArchivedCopy copy = new ArchivedCopy(action.archiveId(), key, put.stored().sizeBytes(), attributes.mtimeNanos(), put.stored().version(),
                put.partBytes(), put.partCrcs(), System.currentTimeMillis() * 1_000_000);
        HsmState state;
        try {
            state = client.hsm().finish(action, SUCCEEDED, null, attributes.sizeBytes(), attributes.mtimeNanos(), copy);
            count(action, SUCCEEDED, null);
            bytesCounted.labelValues("archive").inc(put.stored().sizeBytes());
        } catch (PlinthException e) {
            deleteQuietly(store, key); // the file changed while it was copied, or the action ended: this copy belongs to nothing
            throw e;
        }
        ArchivedCopy superseded = state.supersededCopy();
        if (superseded != null) {
            try {
                archives.store(superseded.archiveId()).delete(superseded.objectKey());
            } catch (IOException | RuntimeException e) {
                LOG.warn("removing the superseded copy {} failed: {}", superseded.objectKey(), e.toString());
            }
        }
    }

    private void restore(Action action) throws IOException {
        HsmState state = client.hsm().state(action.inodeId());
        ArchivedCopy copy = state.copy();
        if (copy == null) {
            finish(action, COPY_LOST, "the file has no archived copy", 0, 0, null);
            return;
        }
        Attributes attributes = client.getAttr(action.inodeId());
        ObjectStore store = archives.store(copy.archiveId());
        Progress progress = new Progress(action, copy.sizeBytes());
        int parts = copy.partCrcs().size();
        // parts are read from the archive ahead of the one being written back, in order: the first alone (a reader
        // waiting at the file's start gets it sooner), then up to part-parallelism
        java.util.ArrayDeque<java.util.concurrent.Future<ByteBuffer>> ahead = new java.util.ArrayDeque<>();
        try (ExecutorService readers = Executors.newThreadPerTaskExecutor(Thread.ofVirtual().name("hsm-restore-read-", 0).factory())) {
            // the object's size is checked while its first part is on its way: an S3 HEAD is a round trip of its own
            java.util.concurrent.Future<ObjectStore.Stored> head = readers.submit(() -> store.head(copy.objectKey()));
            int requested = 0;
            if (parts > 0) {
                ahead.addLast(readPart(readers, store, copy, 0));
                requested = 1;
            }
            ObjectStore.Stored stored = dev.plinth.common.Futures.await(head);
            if (stored == null || stored.sizeBytes() != copy.sizeBytes()) {
                ahead.forEach(f -> f.cancel(true));
                if (stored == null) {
                    throw new ObjectStore.ObjectMissingException("object " + copy.objectKey() + " is missing from " + store.describe());
                }
                finish(action, COPY_LOST, "object " + copy.objectKey() + " in " + store.describe() + " holds " + stored.sizeBytes()
                        + " bytes, not the " + copy.sizeBytes() + " archived", 0, 0, null);
                return;
            }
            if (!restoreParts(action, copy, store, progress, readers, ahead, requested)) {
                return;
            }
        }
        bytesCounted.labelValues("restore").inc(copy.sizeBytes());
        finish(action, SUCCEEDED, null, copy.sizeBytes(), attributes.mtimeNanos(), null);
    }

    /**
     * Writes the parts back in order, reading ahead, and forces them; false (the action ended as
     * lost) at the first part that fails its check.
     */
    private boolean restoreParts(Action action, ArchivedCopy copy, ObjectStore store, Progress progress, ExecutorService readers,
                              java.util.ArrayDeque<java.util.concurrent.Future<ByteBuffer>> ahead, int requestedBefore) throws IOException {
        int parts = copy.partCrcs().size();
        try (PlinthFile file = client.openToRestore(action.inodeId())) {
            int requested = requestedBefore;
            for (int part = 0; part < parts; part++) {
                int window = part == 0 ? 1 : partParallelism;
                while (requested < parts && ahead.size() < window) {
                    ahead.addLast(readPart(readers, store, copy, requested++));
                }
                long offset = (long) part * copy.partBytes();
                int length = (int) Math.min(copy.partBytes(), copy.sizeBytes() - offset);
                ByteBuffer bytes = awaitPart(ahead.removeFirst());
                if (bytes.remaining() != length || Parts.crc32c(bytes) != copy.partCrcs().get(part)) {
                    ahead.forEach(f -> f.cancel(true));
                    finish(action, COPY_LOST, "part " + (part + 1) + " of object " + copy.objectKey() + " in " + store.describe()
                            + " does not match its checksum", 0, 0, null);
                    return false;
                }
                while (bytes.hasRemaining()) {
                    file.write(offset + bytes.position(), bytes);
                }
                // readers of the file read what is reported back (HsmAccess.RestoreProgress): it must be on the targets first
                progress.add(length, file::flush);
            }
            file.fsync();
        }
        return true;
    }

    /** Starts reading part {@code part} of the archived copy. */
    private static java.util.concurrent.Future<ByteBuffer> readPart(ExecutorService readers, ObjectStore store, ArchivedCopy copy, int part) {
        long from = (long) part * copy.partBytes();
        int size = (int) Math.min(copy.partBytes(), copy.sizeBytes() - from);
        return readers.submit(() -> store.read(copy.objectKey(), from, size));
    }

    private static ByteBuffer awaitPart(java.util.concurrent.Future<ByteBuffer> part) throws IOException {
        return dev.plinth.common.Futures.await(part);
    }

    private void remove(Action action) throws IOException {
        ArchivedCopy copy = client.hsm().state(action.inodeId()).copy();
        if (copy != null) {
            archives.store(copy.archiveId()).delete(copy.objectKey());
        }
        finish(action, SUCCEEDED, null, 0, 0, null);
    }

    private void finish(Action action, int result, String error, long size, long mtime, ArchivedCopy copy) {
        count(action, result, error);
        try {
            client.hsm().finish(action, result, error, size, mtime, copy);
        } catch (PlinthException e) {
            if (e.code() != ErrorCode.NOT_FOUND) {
                LOG.warn("reporting the end of HSM action {} failed: {}", action.actionId(), e.toString());
            }
        }
    }

    private void count(Action action, int result, String error) {
        if (result != SUCCEEDED) {
            synchronized (failures) {
                failures.addLast(new dev.plinth.wire.messages.MgmtMessages.HsmFailure(System.currentTimeMillis(), InodeId.format(action.inodeId()),
                        kindName(action.kind()), error == null ? "failed" : error.length() > 500 ? error.substring(0, 500) : error));
                while (failures.size() > FAILURES_KEPT) {
                    failures.removeFirst();
                }
            }
        }
        actionsCounted.labelValues(kindName(action.kind()), result == SUCCEEDED ? "succeeded" : result == COPY_LOST ? "lost" : "failed").inc();
        if (action.kind() == RESTORE) {
            restoreSeconds.observe(Math.max(0, System.currentTimeMillis() * 1_000_000 - action.enqueuedNanos()) / 1e9);
        }
    }

    private static ByteBuffer read(PlinthFile file, long offset, int length) {
        ByteBuffer bytes = ByteBuffer.allocate(length);
        while (bytes.hasRemaining()) {
            int read = file.read(offset + bytes.position(), bytes);
            if (read <= 0) {
                throw new PlinthException(ErrorCode.IO_ERROR, "the file ended at " + (offset + bytes.position()) + " while it was archived");
            }
        }
        return bytes.flip();
    }

    private static void deleteQuietly(ObjectStore store, String key) {
        try {
            store.delete(key);
        } catch (IOException | RuntimeException e) {
            LOG.warn("removing the unused copy {} failed: {}", key, e.toString());
        }
    }

    /** Counts bytes moved and reports them (keeping the action's lease) every quarter lease. */
    private final class Progress {
        private final Action action;
        private final long totalBytes;
        private final AtomicLong done = new AtomicLong();
        private volatile long reportedAtMillis; // the first part is reported at once: readers of a restore wait for it

        Progress(Action action, long totalBytes) {
            this.action = action;
            this.totalBytes = totalBytes;
        }

        void add(long bytes) {
            add(bytes, () -> {});
        }

        /** Counts {@code bytes} more done; {@code beforeReport} runs before the total is reported, when one is due. */
        void add(long bytes, Runnable beforeReport) {
            dev.plinth.common.FaultPoints.delay(dev.plinth.common.FaultPoints.HSM_PART_DELAY_MILLIS);
            long total = done.addAndGet(bytes);
            long now = System.currentTimeMillis();
            if (now - reportedAtMillis >= Math.max(100, Math.min(1000, leaseMillis / 4)) || closed) {
                reportedAtMillis = now;
                if (closed) {
                    throw new ActionLost();
                }
                beforeReport.run();
                try {
                    client.hsm().progress(action, total, totalBytes, leaseMillis);
                } catch (PlinthException e) {
                    if (e.code() == ErrorCode.NOT_FOUND) {
                        throw new ActionLost();
                    }
                    throw e;
                }
            }
        }
    }

    /** The action was cancelled or handed to another mover: stop working on it. */
    private static final class ActionLost extends RuntimeException {
        ActionLost() {
            super(null, null, false, false);
        }
    }

    @Override
    public void close() {
        closed = true;
        poller.interrupt();
        try {
            poller.join(5000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        workers.shutdownNow();
        archives.close();
    }
}
