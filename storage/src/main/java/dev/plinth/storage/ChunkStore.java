package dev.plinth.storage;

import static java.util.Objects.requireNonNull;

import dev.plinth.common.ChunkFormat;
import dev.plinth.common.Config;
import dev.plinth.common.Crc32cBlocks;
import dev.plinth.common.ErrorCode;
import dev.plinth.common.FaultPoints;
import dev.plinth.common.Layout;
import dev.plinth.common.PlinthException;
import dev.plinth.common.Settings;
import dev.plinth.wire.messages.StorageMessages.ChunkEntry;
import dev.plinth.wire.messages.StorageMessages.ChunkId;
import io.netty.buffer.ByteBuf;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.DirectoryStream;
import java.nio.file.FileStore;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;

/**
 * One storage target: a directory on one disk holding chunk files.
 *
 * <pre>
 *   DIR/target.properties                 target id and format version
 *   DIR/chunks/XX/INODE/O.C.data|.meta    chunk C of stripe object O of file INODE ({@link ChunkFormat})
 * </pre>
 *
 * Open chunk files are cached (bounded, least recently used first out). Access to one chunk is
 * serialized by locking its {@link ChunkFile}; different chunks proceed in parallel. Thread-safe.
 */
public final class ChunkStore implements AutoCloseable {
    public static final int FORMAT_VERSION = 1;
    /** In a target's directory: why it failed ({@link #fail}); while it is there the target is not served. */
    public static final String FAILED_FILE = "FAILED";
    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(ChunkStore.class);
    private static final int OPEN_CHUNKS_MAX = 256;

    private final int targetId;
    private final Path root;
    private final Path chunksRoot;
    private final long configuredCapacityBytes;
    /** Free space on the disk that chunk writes leave alone (target.reserve-bytes). */
    private final long reserveBytes;
    /** Null where direct writes are off or the file system refuses them. */
    private final DirectWriter directWriter;
    /** Null where direct reads are off or the file system refuses them. */
    private final DirectReader directReader;
    /** Where reads into buffers land ({@link ReadBuffers}); shared with the process's other targets. */
    private final ReadBuffers readBuffers;
    /**
     * The file system under the target, found once: {@code Files.getFileStore} reads the mount
     * table on every call, and free space is asked for on every write that grows a chunk.
     */
    private final FileStore fileStore;
    private final AtomicLong usedBytes = new AtomicLong();
    /**
     * What the chunks' data files take on disk (holes, as compressed layouts leave, not counted):
     * measured after each change, and counted again from the files now and then
     * ({@link #recountStoredBytes}), since a file system may allocate a little more later
     * (an extent block at writeback) than a measurement right after the write saw.
     */
    private final AtomicLong storedBytes = new AtomicLong();
    /** Every measured change to {@link #storedBytes} so far: what happened during a recount. */
    private final AtomicLong storedChanges = new AtomicLong();
    private volatile String failure;
    /** What an fsync of each file has to force; null where it cannot be known (every chunk of the file is forced then). */
    private final UnsyncedChanges unsynced;
    private final java.util.concurrent.atomic.LongAdder fsyncs = new java.util.concurrent.atomic.LongAdder();
    private final LinkedHashMap<Path, ChunkFile> open = new LinkedHashMap<>(64, 0.75f, true);

    /** The chunk bytes to send for a read: a file region plus the stored CRCs that cover it. */
    public record ReadResult(Path file, int alignedOffset, int byteCount, int chunkLength, long chunkVersion, int[] blockCrcs, long cellTag) {}

    private ChunkStore(int targetId, Path root, long configuredCapacityBytes, long reserveBytes, DirectIo directIo) throws IOException {
        this.reserveBytes = reserveBytes;
        this.targetId = targetId;
        this.root = root;
        this.chunksRoot = root.resolve("chunks");
        this.configuredCapacityBytes = configuredCapacityBytes;
        int alignment = directIo.writeBuffers() > 0 || directIo.reads() ? DirectWriter.probeAlignment(root) : 0;
        this.directWriter = alignment > 0 && directIo.writeBuffers() > 0 ? new DirectWriter(alignment, directIo.writeBuffers()) : null;
        this.directReader = alignment > 0 && directIo.reads() ? new DirectReader(alignment, directIo.readBuffers()) : null;
        this.readBuffers = directIo.readBuffers();
        this.fileStore = Files.getFileStore(root);
        this.unsynced = UnsyncedChanges.afterSyncing(root);
    }

    /**
     * Which chunk I/O may go past the page cache (O_DIRECT, where the file system allows):
     * up to {@code writeBuffers} writes at once ({@link DirectWriter}; 0: none), and long reads
     * of uncached ranges ({@link DirectReader}); and the buffers reads land in ({@link ReadBuffers}),
     * shared by the targets opened with one DirectIo.
     */
    public record DirectIo(int writeBuffers, boolean reads, ReadBuffers readBuffers) {
        public static final DirectIo NONE = new DirectIo(0, false);

        /** With read buffers of its own. */
        public DirectIo(int writeBuffers, boolean reads) {
            this(writeBuffers, reads, ReadBuffers.forProcess());
        }

        /**
         * Per {@link Settings#STORAGE_DIRECT_WRITES} (one write buffer per I/O thread) and
         * {@link Settings#STORAGE_DIRECT_READS}; the targets opened with one share its read buffers.
         */
        public static DirectIo of(Config config) {
            return new DirectIo(config.get(Settings.STORAGE_DIRECT_WRITES) ? config.get(Settings.STORAGE_IO_THREADS) : 0,
                    config.get(Settings.STORAGE_DIRECT_READS));
        }
    }

    /** {@link #open(Path, int, long, long, DirectIo)} with direct I/O as the settings default it, and no reserve. */
    public static ChunkStore open(Path root, int targetId, long capacityBytes) {
        return open(root, targetId, capacityBytes, 0, DirectIo.of(Config.defaults()));
    }

    /**
     * Formats {@code root} as target {@code targetId} if it is empty, or opens it if it is that
     * target; it writes no more than {@code capacityBytes} (0: no limit) and leaves
     * {@code reserveBytes} of its disk free.
     */
    public static ChunkStore open(Path root, int targetId, long capacityBytes, long reserveBytes, DirectIo directIo) {
        requireNonNull(root, "root is null");
        try {
            Files.createDirectories(root);
            Path properties = root.resolve("target.properties");
            if (Files.exists(properties)) {
                Properties stored = new Properties();
                try (var reader = Files.newBufferedReader(properties)) {
                    stored.load(reader);
                }
                int storedId = Integer.parseInt(stored.getProperty("targetId", "-1"));
                int format = Integer.parseInt(stored.getProperty("formatVersion", "-1"));
                if (format != FORMAT_VERSION) {
                    throw new PlinthException(ErrorCode.NOT_SUPPORTED, "target " + root + " has format " + format);
                }
                if (targetId >= 0 && storedId != targetId) {
                    throw new PlinthException(ErrorCode.INVALID_ARGUMENT, root + " is target " + storedId + ", not " + targetId);
                }
                targetId = storedId;
            } else {
                if (targetId < 0) {
                    throw new PlinthException(ErrorCode.INVALID_ARGUMENT, root + " is not a formatted target");
                }
                Properties stored = new Properties();
                stored.setProperty("targetId", Integer.toString(targetId));
                stored.setProperty("formatVersion", Integer.toString(FORMAT_VERSION));
                Path temporary = root.resolve("target.properties.tmp");
                try (var writer = Files.newBufferedWriter(temporary)) {
                    stored.store(writer, "Plinth storage target");
                }
                Files.move(temporary, properties, java.nio.file.StandardCopyOption.ATOMIC_MOVE);
            }
            ChunkStore store = new ChunkStore(targetId, root, capacityBytes, reserveBytes, directIo);
            Path failed = root.resolve(FAILED_FILE);
            if (Files.exists(failed)) {
                store.failure = Files.readString(failed).strip();
                LOG.error("target {} failed before ({}); it stays out of service until it is replaced, or {} is removed", targetId,
                        store.failure, failed);
            }
            Files.createDirectories(store.chunksRoot);
            long[] scanned = store.scanUsedAndStoredBytes(true);
            store.usedBytes.set(scanned[0]);
            store.storedBytes.set(scanned[1]);
            return store;
        } catch (IOException e) {
            throw new PlinthException(ErrorCode.IO_ERROR, "cannot open target " + root + ": " + e.getMessage(), e);
        }
    }

    public int targetId() {
        return targetId;
    }

    /** Why this target stopped serving (its {@value #FAILED_FILE} file says so across restarts); null while it serves. */
    public String failure() {
        return failure;
    }

    /**
     * Stops this target for good (fail-stop), as Ceph and PostgreSQL do on a failed fsync: the
     * kernel may have dropped the pages it could not write and report the next fsync as a
     * success, so nothing this disk holds can be vouched for. Its node stops reporting it, mgmt
     * takes it out of its chains (others hold its replicas; with one replica its files read as
     * errors, never as lost bytes acknowledged), and a {@value #FAILED_FILE} file keeps it out after
     * a restart until an operator replaces it or, having checked the disk, removes the file.
     */
    void fail(String reason) {
        synchronized (this) {
            if (failure != null) {
                return;
            }
            failure = reason;
        }
        LOG.error("target {} has failed: {}; it serves nothing from now on. Replace it, or check the disk and remove {} to bring it back",
                targetId, reason, root.resolve(FAILED_FILE));
        try {
            Path temporary = root.resolve(FAILED_FILE + ".tmp");
            Files.writeString(temporary, reason + " at " + java.time.Instant.now() + "\n");
            Files.move(temporary, root.resolve(FAILED_FILE), java.nio.file.StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException e) {
            LOG.error("target {}: cannot record its failure in {}: {}", targetId, root.resolve(FAILED_FILE), e.getMessage());
        }
    }

    public Path root() {
        return root;
    }

    /** The device number of the file system under this target (0 where the platform does not say). */
    public long filesystemId() {
        try {
            return ((Number) Files.getAttribute(root, "unix:dev")).longValue();
        } catch (IOException | UnsupportedOperationException | IllegalArgumentException e) {
            return 0;
        }
    }

    /** Chunks and directories this target forced for {@link #syncFile} since it was opened. */
    long fsyncs() {
        return fsyncs.sum();
    }

    /** Bytes this target wrote past the page cache (O_DIRECT) since it was opened. */
    long directBytesWritten() {
        return directWriter == null ? 0 : directWriter.bytesWritten();
    }

    /** Bytes this target read past the page cache (O_DIRECT) since it was opened. */
    long directBytesRead() {
        return directReader == null ? 0 : directReader.bytesRead();
    }

    public long usedBytes() {
        return usedBytes.get();
    }

    /**
     * What is used plus what may still be written: the configured capacity where the disk has room
     * for it, less where the disk is fuller (so a full disk shows as a full target, whatever
     * was configured), and never the disk's reserve.
     */
    public long capacityBytes() {
        long used = usedBytes.get();
        return used + Math.max(0, freeBytes(used));
    }

    /** The disk's free space beyond the reserve (target.reserve-bytes): what chunk writes may use of it. */
    private long diskFreeBytes() {
        try {
            return Math.max(0, fileStore.getUsableSpace() - reserveBytes);
        } catch (IOException e) {
            return 0;
        }
    }

    /** Free bytes given {@code used}: the configured capacity (within what the disk has) or the disk's free space. */
    private long freeBytes(long used) {
        long diskFree = diskFreeBytes();
        return configuredCapacityBytes > 0 ? Math.min(configuredCapacityBytes - used, diskFree) : diskFree;
    }

    /**
     * Takes {@code bytes} of free space for a write, atomically: concurrent writes to different
     * chunks must not each see the same free space and together overfill the target.
     */
    private void reserve(long bytes) {
        while (bytes > 0) {
            long used = usedBytes.get();
            long free = freeBytes(used);
            if (bytes > free) {
                throw new PlinthException(ErrorCode.NO_SPACE, "target " + targetId + " has " + Math.max(0, free) + " bytes free"
                        + (configuredCapacityBytes > 0 && free == configuredCapacityBytes - used ? " of its capacity"
                        : " on its disk beyond the reserve of " + reserveBytes + " bytes (target.reserve-bytes)"));
            }
            if (usedBytes.compareAndSet(used, used + bytes)) {
                return;
            }
        }
    }

    /** The chunks' data files: their lengths (with {@code lengths}; else 0) and what they take on disk. */
    private long[] scanUsedAndStoredBytes(boolean lengths) throws IOException {
        long[] sums = new long[2];
        try (Stream<Path> files = Files.walk(chunksRoot)) {
            files.filter(p -> p.toString().endsWith(".data")).forEach(p -> {
                try {
                    sums[0] += lengths ? Files.size(p) : 0;
                    sums[1] += dev.plinth.common.FileAllocation.of(p);
                } catch (IOException e) {
                    // removed meanwhile
                }
            });
        }
        return sums;
    }

    /**
     * The size {@code df} shows: what the chunks take on disk ({@link #storedBytes}) and what may
     * still be written ({@link #capacityBytes} less {@link #usedBytes}, which counts chunk lengths).
     */
    public long shownCapacityBytes() {
        return storedBytes() + Math.max(0, capacityBytes() - usedBytes());
    }

    /** What the chunks' data files take on the disk, holes not counted: what {@code df} shows as used. */
    public long storedBytes() {
        return Math.max(0, storedBytes.get());
    }

    private void stored(long change) {
        storedBytes.addAndGet(change);
        storedChanges.addAndGet(change);
    }

    /**
     * Counts {@link #storedBytes} again from the files. Changes measured during the walk are added
     * to what it found, so a change to a file the walk had passed is not lost (one to a file it
     * had not reached yet counts twice until the next recount).
     */
    public void recountStoredBytes() {
        long changesBefore = storedChanges.get();
        long[] scanned;
        try {
            scanned = scanUsedAndStoredBytes(false); // lengths are kept exactly as they change
        } catch (IOException | java.io.UncheckedIOException e) {
            return; // a directory removed during the walk: the next recount
        }
        storedBytes.set(scanned[1] + storedChanges.get() - changesBefore);
    }

    private Path inodeDirectory(long inodeId) {
        return ChunkFormat.inodeDirectory(root, inodeId);
    }

    private Path dataPath(ChunkId chunk) {
        return ChunkFormat.dataPath(root, chunk.inodeId(), chunk.objectIndex(), chunk.chunkIndex());
    }

    private static void validate(ChunkId chunk, long offset, long length) {
        if (chunk.objectIndex() < 0 || chunk.objectIndex() >= Layout.STRIPE_COUNT_MAX || chunk.chunkIndex() < 0
                || chunk.chunkIndex() > (1L << 40) || chunk.inodeId() == 0) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "bad chunk id " + chunk);
        }
        if (offset < 0 || length < 0 || offset + length > Layout.CHUNK_SIZE_MAX) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "range " + offset + "+" + length + " is outside a chunk");
        }
    }

    private interface ChunkAction<T> {
        T apply(ChunkFile chunk) throws IOException;
    }

    /** Runs {@code action} on the chunk with it locked; null result and no call if absent and not {@code create}. */
    private <T> T withChunk(Path dataPath, boolean create, ChunkAction<T> action) {
        return withChunk(dataPath, create, targetId, action);
    }

    /** As above; a chunk created here belongs to chain {@code chainId}. */
    private <T> T withChunk(Path dataPath, boolean create, int chainId, ChunkAction<T> action) {
        while (true) {
            ChunkFile chunk;
            try {
                chunk = acquire(dataPath, create, chainId);
            } catch (IOException e) {
                throw ioError("open", dataPath, e);
            }
            if (chunk == null) {
                return null;
            }
            synchronized (chunk) {
                if (chunk.closed) {
                    continue; // evicted between lookup and lock: open it again
                }
                try {
                    return action.apply(chunk);
                } catch (IOException e) {
                    throw ioError("access", dataPath, e);
                } finally {
                    noteUnsynced(dataPath, chunk); // after the change and before its acknowledgement, so that an fsync sent after that finds it
                    chunk.notifyAll(); // a forwarded write may wait for this one (awaitVersion)
                }
            }
        }
    }

    private void noteUnsynced(Path dataPath, ChunkFile chunk) {
        boolean changed = chunk.takeChanged();
        boolean created = chunk.takeCreated();
        if (unsynced == null || !changed && !created) {
            return;
        }
        try {
            unsynced.chunkChanged(dataPath);
            if (created) {
                unsynced.directoryChanged(dataPath.getParent());
            }
        } catch (IOException e) {
            throw failedSync(root, e);
        }
    }

    private ChunkFile acquire(Path dataPath, boolean create, int chainId) throws IOException {
        synchronized (open) {
            ChunkFile chunk = open.get(dataPath);
            if (chunk != null) {
                return chunk;
            }
            chunk = ChunkFile.open(dataPath, create, chainId, directWriter);
            if (chunk == null) {
                return null;
            }
            open.put(dataPath, chunk);
            if (open.size() > OPEN_CHUNKS_MAX) {
                Iterator<Map.Entry<Path, ChunkFile>> eldest = open.entrySet().iterator();
                ChunkFile evicted = eldest.next().getValue();
                eldest.remove();
                closeQuietly(evicted);
            }
            return chunk;
        }
    }

    private static void closeQuietly(ChunkFile chunk) {
        synchronized (chunk) {
            try {
                chunk.close();
            } catch (IOException e) {
                // nothing more to do for a file we are dropping
            }
        }
    }

    private PlinthException ioError(String what, Path path, IOException e) {
        String message = String.valueOf(e.getMessage());
        if (message.contains("No space left")) {
            return new PlinthException(ErrorCode.NO_SPACE, "target " + targetId + " is full", e);
        }
        return new PlinthException(ErrorCode.IO_ERROR, "cannot " + what + " " + path + ": " + message, e);
    }

    /** A chunk's version and length after a write. */
    public record WriteResult(long version, int length) {}

    /**
     * Writes {@code data} at {@code offset} of a chunk of chain {@code chainId} after checking it
     * against the sender's segment CRCs (so corruption on the way is caught) and against free
     * space.
     *
     * <p>{@code version} 0 is a new write at the head of a chain: the head gives it the chunk's
     * next version, numbered within the chain's version ({@code chainVersion} in the high 32 bits)
     * so that writes made after a membership change never share a version with writes a departed
     * head made and never passed on. The version the chunk had before is left in
     * {@code previousOut[0]}, for the successor.
     *
     * <p>A forwarded write carries the head's {@code version} and {@code previousVersion}: the
     * chunk takes it only if it holds {@code previousVersion}; if it holds {@code version} or newer
     * already (a whole-chunk copy overtook this write) the write is done; otherwise it missed a
     * write, and CHUNK_BEHIND asks the sender for the whole chunk.
     *
     * <p>{@code cellTag}, where not 0, becomes the chunk's cell tag (erasure-coded cells).
     */
    public WriteResult write(ChunkId chunk, ChainWrite chain, int offset, ByteBuffer data, List<Integer> segmentCrcs, long version,
                             long previousVersion, long cellTag, long[] previousOut) {
        validate(chunk, offset, data.remaining());
        int[] received = checkCrcs(chunk, data, offset, segmentCrcs);
        Path path = dataPath(chunk);
        return withChunk(path, true, chain.chainId(), file -> {
            chain.checkCurrent().run();
            long newVersion = versionFor(chunk, file, chain, version, previousVersion);
            if (newVersion == ALREADY_APPLIED) {
                return new WriteResult(file.version(), file.length());
            }
            previousOut[0] = file.version();
            long growth = Math.max(0, (long) offset + data.remaining() - file.length());
            reserve(growth);
            try {
                int grown = file.write(offset, data, received, newVersion, cellTag);
                usedBytes.addAndGet(grown - growth);
            } catch (IOException | RuntimeException e) {
                usedBytes.addAndGet(-growth); // the write left the chunk as it was
                throw e;
            } finally {
                stored(file.allocationChange());
            }
            touched(chain, chunk);
            return new WriteResult(file.version(), file.length());
        });
    }

    private static final long ALREADY_APPLIED = -1;

    /**
     * The version a chain write gives the chunk: at the head ({@code version} 0) the next one
     * within the chain version; behind it, the head's, once the chunk holds the version the
     * write follows (after waiting a little for an overtaken forward). ALREADY_APPLIED where the
     * chunk holds that version or a newer one; CHUNK_BEHIND where it missed the one before.
     */
    private long versionFor(ChunkId chunk, ChunkFile file, ChainWrite chain, long version, long previousVersion)
            throws java.io.InterruptedIOException {
        if (version == 0) {
            return Math.max(file.version() + 1, (chain.chainVersion() << 32) + 1);
        }
        awaitVersion(file, previousVersion);
        if (file.version() >= version) {
            return ALREADY_APPLIED;
        }
        if (file.version() != previousVersion) {
            throw new PlinthException(ErrorCode.CHUNK_BEHIND, chunk + " on target " + targetId + " is at version " + file.version()
                    + ", the write follows version " + previousVersion);
        }
        return version;
    }

    /**
     * Cuts {@code chunk} to {@code length} bytes as a chain write: versioned and passed down the
     * chain like one, so that every member cuts at the same point in the chunk's history (a cut
     * sent to each member on its own could land before a write on one member and after it on
     * another). At the head a chunk that does not exist has nothing to cut: version 0, and
     * nothing is created.
     */
    public WriteResult cut(ChunkId chunk, ChainWrite chain, int length, long version, long previousVersion, long[] previousOut) {
        validate(chunk, length, 0);
        WriteResult result = withChunk(dataPath(chunk), version != 0, chain.chainId(), file -> {
            chain.checkCurrent().run();
            long newVersion = versionFor(chunk, file, chain, version, previousVersion);
            if (newVersion == ALREADY_APPLIED) {
                return new WriteResult(file.version(), file.length());
            }
            previousOut[0] = file.version();
            usedBytes.addAndGet(-file.cut(length, newVersion));
            stored(file.allocationChange());
            touched(chain, chunk);
            return new WriteResult(file.version(), file.length());
        });
        return result == null ? new WriteResult(0, 0) : result;
    }

    /**
     * The chain a write came through: its id, the chain version it carried, and a check, run
     * with the chunk locked just before the write, that this version is still the chain's (a
     * write that waited, say in a paused process, must not land after the chain moved on).
     */
    public record ChainWrite(int chainId, long chainVersion, Runnable checkCurrent) {}

    /**
     * Forwards of one chunk's writes may arrive out of order (several I/O threads, several
     * connections): a write that follows a version not here yet waits a little for it, with the
     * chunk unlocked, rather than ask for the whole chunk at once.
     */
    private static void awaitVersion(ChunkFile file, long previousVersion) throws java.io.InterruptedIOException {
        long deadline = System.nanoTime() + OUT_OF_ORDER_WAIT_NANOS;
        try {
            while (file.version() < previousVersion && !file.closed) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    return;
                }
                file.wait(Math.max(1, left / 1_000_000));
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new java.io.InterruptedIOException("interrupted while waiting for an earlier write of " + file.dataPath());
        }
        // a file evicted meanwhile keeps its last version in memory: the caller answers CHUNK_BEHIND and gets the whole chunk
    }

    private static final long OUT_OF_ORDER_WAIT_NANOS = java.util.concurrent.TimeUnit.MILLISECONDS.toNanos(100);

    /** One-replica callers (and tests): a head write on chain version 1 of this target's own chain. */
    public WriteResult write(ChunkId chunk, int offset, ByteBuffer data, List<Integer> segmentCrcs) {
        return write(chunk, new ChainWrite(targetId, 1, () -> { }), offset, data, segmentCrcs, 0, 0, 0, new long[1]);
    }

    // ---- resync: a returning member copies what it missed while new writes keep arriving

    /** A resync under way: the chain version it syncs to, and the chunks that version of the chain has written since. */
    private record SyncState(long chainVersion, Set<ChunkId> touched) {}

    /** Chunks written by the chain (not by the resync) while a resync of that chain runs; the resync leaves them alone. */
    private final Map<Integer, SyncState> touchedDuringSync = new ConcurrentHashMap<>();

    /**
     * From now until {@link #endSync}, remembers which chunks of {@code chainId} the chain writes
     * at {@code chainVersion} or later (older writes that arrive late are the resync's to fix).
     */
    public void beginSync(int chainId, long chainVersion) {
        touchedDuringSync.put(chainId, new SyncState(chainVersion, ConcurrentHashMap.newKeySet()));
    }

    public void endSync(int chainId) {
        touchedDuringSync.remove(chainId);
    }

    private void touched(ChainWrite chain, ChunkId chunk) {
        SyncState sync = touchedDuringSync.get(chain.chainId());
        if (sync != null && chain.chainVersion() >= sync.chainVersion()) {
            sync.touched().add(chunk);
        }
    }

    private boolean touchedInSync(int chainId, ChunkId chunk) {
        SyncState sync = touchedDuringSync.get(chainId);
        return sync != null && sync.touched().contains(chunk);
    }

    /**
     * Resync: removes a chunk of {@code chainId} that the chain's serving members no longer have,
     * unless the chain wrote it since the resync began.
     */
    public void removeStale(ChunkId chunk, int chainId) {
        validate(chunk, 0, 0);
        Path path = dataPath(chunk);
        Boolean remove = withChunk(path, false, file -> !touchedInSync(chainId, chunk));
        if (Boolean.TRUE.equals(remove)) {
            removeChunk(path);
        }
    }

    private static int[] checkCrcs(ChunkId chunk, ByteBuffer data, int offset, List<Integer> segmentCrcs) {
        int[] expected = segmentCrcs.stream().mapToInt(Integer::intValue).toArray();
        int[] received = Crc32cBlocks.segmentCrcs(data, offset);
        if (!java.util.Arrays.equals(expected, received)) {
            throw new PlinthException(ErrorCode.CHECKSUM_MISMATCH, "write to " + chunk + " arrived corrupted");
        }
        return received;
    }

    /**
     * Makes a chunk hold {@code whole} (its entire content, checked against its block CRCs) at
     * {@code version}, if what it holds is older: a copy passed down the chain to a member that is
     * syncing or missed a version.
     */
    public WriteResult installWhole(ChunkId chunk, ChainWrite chain, ByteBuffer whole, List<Integer> blockCrcs, long version) {
        return install(chunk, chain.chainId(), whole, blockCrcs, version, file -> {
            chain.checkCurrent().run();
            return file.version() < version;
        }, chain);
    }

    /**
     * Resync: makes a chunk of {@code chainId} hold the serving members' copy at {@code version},
     * replacing any other version (the serving members are right, even where a departed head
     * left a newer unacknowledged write), unless the chain wrote the chunk since the resync began.
     */
    public WriteResult installFromResync(ChunkId chunk, int chainId, ByteBuffer whole, List<Integer> blockCrcs, long version) {
        return install(chunk, chainId, whole, blockCrcs, version, file -> file.version() != version && !touchedInSync(chainId, chunk), null);
    }

    private WriteResult install(ChunkId chunk, int chainId, ByteBuffer whole, List<Integer> blockCrcs, long version, ChunkAction<Boolean> replace,
                                ChainWrite touching) {
        validate(chunk, 0, whole.remaining());
        int[] crcs = checkCrcs(chunk, whole, 0, blockCrcs);
        Path path = dataPath(chunk);
        return withChunk(path, true, chainId, file -> {
            if (!replace.apply(file)) {
                return new WriteResult(file.version(), file.length());
            }
            long growth = Math.max(0, (long) whole.remaining() - file.length());
            reserve(growth);
            try {
                int grown = file.replace(whole, crcs, version);
                usedBytes.addAndGet(grown - growth);
            } catch (IOException | RuntimeException e) {
                usedBytes.addAndGet(-growth);
                throw e;
            } finally {
                stored(file.allocationChange());
            }
            if (touching != null) {
                touched(touching, chunk);
            }
            return new WriteResult(file.version(), file.length());
        });
    }

    /** A chunk's whole content with its version and block CRCs, read under its lock; null if absent. */
    public record WholeChunk(ByteBuffer data, long version, int[] blockCrcs) {}

    public WholeChunk readWhole(ChunkId chunk) {
        validate(chunk, 0, 0);
        return withChunk(dataPath(chunk), false, file -> new WholeChunk(file.readWhole(), file.version(),
                file.crcs(0, Crc32cBlocks.blockCount(file.length()))));
    }

    /** The version and length of a chunk; null if absent. */
    public WriteResult stat(ChunkId chunk) {
        validate(chunk, 0, 0);
        return withChunk(dataPath(chunk), false, file -> new WriteResult(file.version(), file.length()));
    }

    /** A chunk as found on disk; a chunk whose header cannot be read has version -1 and chain {@link #UNREADABLE}. */
    public record StoredChunk(ChunkId chunk, int chainId, long version, int length) {}

    public static final int UNREADABLE = Integer.MIN_VALUE;

    /**
     * The order chunks are listed in: the order of the directories they live in (bucket = the
     * inode id's last byte, then inode, object, chunk), so that a page can continue where the
     * last one ended without walking the whole target again.
     */
    public static final Comparator<ChunkId> CHUNK_ORDER = Comparator.<ChunkId>comparingInt(c -> ChunkFormat.bucketOf(c.inodeId()))
            .thenComparing(ChunkId::inodeId, Long::compareUnsigned).thenComparingInt(ChunkId::objectIndex).thenComparingLong(ChunkId::chunkIndex);
    private static final Comparator<ChunkId> IN_INODE_ORDER = Comparator.comparingInt(ChunkId::objectIndex).thenComparingLong(ChunkId::chunkIndex);
    private static final int BUCKET_LISTINGS_CACHED = 8;

    /**
     * A bucket directory's inode ids, sorted, as of the directory's modification time. The kernel
     * keeps that time coarsely (a tick of a few milliseconds): an entry added in the same tick as
     * the change before it leaves the time as it was. So a listing is kept only when it was taken
     * well after the last change ({@link #LISTING_SETTLED_MILLIS}); otherwise a later entry could
     * hide behind an unchanged time, and a resync would take a chunk the source has for one it lacks.
     */
    private record BucketListing(java.nio.file.attribute.FileTime modified, long[] inodes) {}
    private static final long LISTING_SETTLED_MILLIS = 1000;

    /** Recent bucket listings, so that the pages of one pass list each bucket once (refreshed when the directory changes). */
    private final Map<Integer, BucketListing> bucketListings = new ConcurrentHashMap<>();

    /**
     * The chunks of chain {@code chainId} on this target after {@code startAfter} (null: from the
     * first), in listing order, at most {@code limit}.
     */
    public List<ChunkEntry> listChunks(int chainId, ChunkId startAfter, int limit) {
        return scan(startAfter, limit, chainId).stream().map(c -> new ChunkEntry(c.chunk(), c.version(), c.length())).toList();
    }

    /**
     * Every chunk on this target after {@code startAfter} (null: from the first), in listing
     * order, at most {@code limit}, with its chain (a format-1 chunk's is this target's).
     */
    public List<StoredChunk> scan(ChunkId startAfter, int limit) {
        return scan(startAfter, limit, null);
    }

    /**
     * Walks the chunk directories from {@code startAfter} on, reading the headers of the chunks
     * it passes, until {@code limit} chunks (of chain {@code chainId}, where given) are found:
     * a page costs the chunks it passes plus its bucket's listing (kept between pages), not a
     * walk of the whole target.
     */
    private List<StoredChunk> scan(ChunkId startAfter, int limit, Integer chainId) {
        List<StoredChunk> found = new ArrayList<>();
        try {
            int firstBucket = startAfter == null ? 0 : ChunkFormat.bucketOf(startAfter.inodeId());
            for (int bucket = firstBucket; bucket < ChunkFormat.BUCKETS; bucket++) {
                for (long inode : inodesIn(bucket)) {
                    if (startAfter != null && bucket == firstBucket && Long.compareUnsigned(inode, startAfter.inodeId()) < 0) {
                        continue;
                    }
                    for (ChunkId chunk : chunksOf(inode)) {
                        if (startAfter != null && CHUNK_ORDER.compare(chunk, startAfter) <= 0) {
                            continue;
                        }
                        StoredChunk stored = header(chunk);
                        if (stored != null && (chainId == null || stored.chainId() == chainId)) {
                            found.add(stored);
                            if (found.size() >= limit) {
                                return found;
                            }
                        }
                    }
                }
            }
        } catch (IOException | java.io.UncheckedIOException e) {
            throw new PlinthException(ErrorCode.IO_ERROR, "cannot list chunks of target " + targetId + ": " + e.getMessage(), e);
        }
        return found;
    }

    private long[] inodesIn(int bucket) throws IOException {
        Path directory = ChunkFormat.bucketDirectory(root, bucket);
        java.nio.file.attribute.FileTime modified;
        try {
            modified = Files.getLastModifiedTime(directory);
        } catch (NoSuchFileException e) {
            return new long[0];
        }
        BucketListing cached = bucketListings.get(bucket);
        if (cached != null && cached.modified().equals(modified)) {
            return cached.inodes();
        }
        long[] inodes;
        try (Stream<Path> entries = Files.list(directory)) {
            // sorted unsigned: flipping the sign bit turns unsigned order into signed order and back
            inodes = entries.map(p -> p.getFileName().toString()).filter(name -> name.length() == 16).mapToLong(name -> {
                try {
                    return Long.parseUnsignedLong(name, 16);
                } catch (NumberFormatException e) {
                    return 0;
                }
            }).filter(inode -> inode != 0).map(inode -> inode ^ Long.MIN_VALUE).sorted().map(inode -> inode ^ Long.MIN_VALUE).toArray();
        } catch (NoSuchFileException e) {
            return new long[0];
        }
        if (System.currentTimeMillis() - modified.toMillis() > LISTING_SETTLED_MILLIS) {
            if (bucketListings.size() >= BUCKET_LISTINGS_CACHED) {
                bucketListings.clear();
            }
            bucketListings.put(bucket, new BucketListing(modified, inodes));
        }
        return inodes;
    }

    private List<ChunkId> chunksOf(long inode) throws IOException {
        List<ChunkId> chunks = new ArrayList<>();
        try (DirectoryStream<Path> files = Files.newDirectoryStream(ChunkFormat.inodeDirectory(root, inode), "*.meta")) {
            for (Path meta : files) {
                ChunkId chunk = chunkIdOf(meta);
                if (chunk != null) {
                    chunks.add(chunk);
                }
            }
        } catch (NoSuchFileException e) {
            return List.of();
        }
        chunks.sort(IN_INODE_ORDER);
        return chunks;
    }

    /** A chunk's header as a listing reports it; null if the chunk went away meanwhile. */
    private StoredChunk header(ChunkId chunk) {
        try {
            return withChunk(dataPath(chunk), false, file -> new StoredChunk(chunk,
                    file.chainId() == ChunkFormat.OWN_CHAIN ? targetId : file.chainId(), file.version(), file.length()));
        } catch (PlinthException e) {
            return new StoredChunk(chunk, UNREADABLE, -1, 0);
        }
    }

    /**
     * Scrub and read repair: replaces a damaged chunk with a good replica's copy at
     * {@code version}, unless a write has made the chunk newer meanwhile (the caller fetches again).
     * Returns whether it replaced the chunk.
     */
    public boolean installRepair(ChunkId chunk, int chainId, ByteBuffer whole, List<Integer> blockCrcs, long version) {
        validate(chunk, 0, whole.remaining());
        removeIfUnreadable(dataPath(chunk));
        return install(chunk, chainId, whole, blockCrcs, version, file -> file.version() <= version, null).version() == version;
    }

    /** A chunk whose meta cannot even be opened is dropped, so a repair can create it afresh. */
    private void removeIfUnreadable(Path dataPath) {
        try {
            withChunk(dataPath, false, file -> null);
        } catch (PlinthException e) {
            if (e.code() == ErrorCode.CHECKSUM_MISMATCH) {
                removeChunk(dataPath);
            }
        }
    }

    /** The chunk a meta file belongs to, from its path; null for a file that is not a chunk's. */
    private static ChunkId chunkIdOf(Path metaPath) {
        try {
            String name = metaPath.getFileName().toString();
            String[] parts = name.substring(0, name.length() - ".meta".length()).split("\\.");
            long inodeId = Long.parseUnsignedLong(metaPath.getParent().getFileName().toString(), 16);
            return new ChunkId(inodeId, Integer.parseInt(parts[0]), Long.parseLong(parts[1]));
        } catch (RuntimeException e) {
            return null;
        }
    }

    /** Removes one chunk; idempotent. */
    public void removeChunk(ChunkId chunk) {
        validate(chunk, 0, 0);
        removeChunk(dataPath(chunk));
    }

    /** What to send for [offset, offset + length): whole blocks, cut at the chunk's end. */
    public ReadResult read(ChunkId chunk, int offset, int length) {
        validate(chunk, offset, length);
        Path path = dataPath(chunk);
        ReadResult result = withChunk(path, false, file -> {
            int chunkLength = file.length();
            int block = Crc32cBlocks.BLOCK_BYTES;
            int end = Math.min(chunkLength, offset + length);
            if (offset >= end) {
                return new ReadResult(path, offset, 0, chunkLength, file.version(), new int[0], file.cellTag());
            }
            int alignedOffset = offset / block * block;
            int alignedEnd = (int) Math.min(chunkLength, ((long) end + block - 1) / block * block);
            int firstBlock = alignedOffset / block;
            int blocks = Crc32cBlocks.blockCount(alignedEnd - alignedOffset);
            return new ReadResult(path, alignedOffset, alignedEnd - alignedOffset, chunkLength, file.version(),
                    file.crcs(firstBlock, blocks), file.cellTag());
        });
        return result != null ? result : new ReadResult(path, offset, 0, 0, 0, new int[0], 0);
    }

    /**
     * The bytes of {@code read} (a {@link #read} answer) read past the page cache into a buffer the
     * caller releases, or null where they are to be read through it: direct reads off, a short
     * read, a range all in the cache, a direct read that failed ({@link DirectReader}).
     */
    public ByteBuf readIfUncached(ReadResult read) {
        return directReader == null || read.byteCount() == 0 ? null
                : directReader.readIfUncached(read.file(), read.alignedOffset(), read.byteCount());
    }

    /** The bytes of {@code read} (a {@link #read} answer) through the page cache, in a buffer the caller releases. */
    public ByteBuf readThroughCache(ReadResult read) {
        int count = read.byteCount();
        ByteBuf buffer = readBuffers.allocate(count, 1);
        try (FileChannel channel = FileChannel.open(read.file(), StandardOpenOption.READ)) {
            ChunkFormat.readFully(channel, buffer.nioBuffer(buffer.writerIndex(), count), read.alignedOffset());
            return buffer.writerIndex(buffer.writerIndex() + count);
        } catch (IOException e) {
            buffer.release();
            throw new PlinthException(ErrorCode.IO_ERROR, "reading " + read.file() + ": " + e.getMessage(), e);
        } catch (RuntimeException e) {
            buffer.release();
            throw e;
        }
    }

    /** Cuts stripe object {@code objectIndex} of a file to {@code objectLength} bytes. */
    public void truncateObject(long inodeId, int objectIndex, long objectLength, int chunkSizeBytes) {
        validate(new ChunkId(inodeId, objectIndex, 0), 0, 0);
        if (objectLength < 0 || chunkSizeBytes < Layout.CHUNK_SIZE_MIN || chunkSizeBytes > Layout.CHUNK_SIZE_MAX) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "bad truncate " + objectLength + "/" + chunkSizeBytes);
        }
        for (Path path : chunkFiles(inodeId)) {
            String[] parts = path.getFileName().toString().split("\\.");
            if (Integer.parseInt(parts[0]) != objectIndex) {
                continue;
            }
            long chunkIndex = Long.parseLong(parts[1]);
            long chunkStart = chunkIndex * chunkSizeBytes;
            if (chunkStart >= objectLength) {
                removeChunk(path);
            } else if (chunkStart + chunkSizeBytes > objectLength) {
                int keep = (int) (objectLength - chunkStart);
                Integer freed = withChunk(path, false, file -> {
                    int cut = file.truncate(keep);
                    stored(file.allocationChange());
                    return cut;
                });
                if (freed != null) {
                    usedBytes.addAndGet(-freed);
                }
            }
        }
    }

    private List<Path> chunkFiles(long inodeId) {
        Path directory = inodeDirectory(inodeId);
        List<Path> result = new ArrayList<>();
        try (DirectoryStream<Path> files = Files.newDirectoryStream(directory, "*.data")) {
            files.forEach(result::add);
        } catch (NoSuchFileException e) {
            return result;
        } catch (IOException e) {
            throw ioError("list", directory, e);
        }
        result.sort(Comparator.naturalOrder());
        return result;
    }

    private void removeChunk(Path dataPath) {
        synchronized (open) {
            ChunkFile cached = open.remove(dataPath);
            if (cached != null) {
                closeQuietly(cached);
            }
        }
        try {
            long size = Files.exists(dataPath) ? Files.size(dataPath) : 0;
            long allocated = dev.plinth.common.FileAllocation.of(dataPath);
            Files.deleteIfExists(ChunkFormat.metaPath(dataPath));
            if (Files.deleteIfExists(dataPath)) {
                usedBytes.addAndGet(-size);
                stored(-allocated);
            }
        } catch (IOException e) {
            throw ioError("remove", dataPath, e);
        }
        if (unsynced != null) {
            try {
                unsynced.directoryChanged(dataPath.getParent());
            } catch (IOException e) {
                throw failedSync(root, e);
            }
        }
    }

    /** Removes every chunk of a file; idempotent. */
    public void removeFile(long inodeId) {
        for (Path path : chunkFiles(inodeId)) {
            removeChunk(path);
        }
        try {
            if (Files.deleteIfExists(inodeDirectory(inodeId)) && unsynced != null) {
                unsynced.forget(inodeDirectory(inodeId));
            }
        } catch (IOException e) {
            // a concurrent write recreated it; the next removal takes it
        }
    }

    /** What the chunks of a file take here: on disk (holes not counted) and as lengths. */
    public dev.plinth.wire.messages.StorageMessages.FileUsageResult fileUsage(long inodeId) {
        long stored = 0;
        long lengths = 0;
        for (Path path : chunkFiles(inodeId)) {
            try {
                stored += dev.plinth.common.FileAllocation.of(path);
                lengths += Files.size(path);
            } catch (NoSuchFileException e) {
                // removed meanwhile
            } catch (IOException e) {
                throw ioError("stat", path, e);
            }
        }
        return new dev.plinth.wire.messages.StorageMessages.FileUsageResult(stored, lengths);
    }

    /**
     * Forces a file's chunks, and its directory, to stable storage: those changed since they were
     * last forced (and the directory where a chunk was made or removed), or every one where that is
     * not known. A failed fsync fails the target ({@link #fail}).
     */
    public void syncFile(long inodeId) {
        Path directory = inodeDirectory(inodeId);
        if (unsynced == null) {
            forceChunks(chunkFiles(inodeId));
            forceDirectory(directory);
            return;
        }
        UnsyncedChanges.Pending pending;
        try {
            pending = unsynced.take(directory);
        } catch (IOException e) {
            throw failedSync(root, e);
        }
        if (pending == null) {
            return;
        }
        try {
            forceChunks(pending.chunks);
            if (pending.directoryChanged) {
                forceDirectory(directory);
            }
        } catch (RuntimeException e) {
            try {
                unsynced.restore(directory, pending); // a chunk that could not be opened is still to be forced by the next fsync
            } catch (IOException restoreFailure) {
                e.addSuppressed(restoreFailure);
            }
            throw e;
        }
    }

    private void forceChunks(Collection<Path> chunks) {
        for (Path path : chunks) {
            withChunk(path, false, file -> {
                try {
                    if (FaultPoints.take(FaultPoints.STORAGE_FSYNC_FAIL)) {
                        throw new IOException("Input/output error (injected: " + FaultPoints.STORAGE_FSYNC_FAIL + ")");
                    }
                    file.force();
                    fsyncs.increment();
                } catch (IOException e) {
                    throw failedSync(path, e);
                }
                return null;
            });
        }
    }

    private void forceDirectory(Path directory) {
        if (Files.isDirectory(directory)) {
            try (FileChannel channel = FileChannel.open(directory, StandardOpenOption.READ)) {
                channel.force(true);
                fsyncs.increment();
            } catch (IOException e) {
                throw failedSync(directory, e);
            }
        }
    }

    private PlinthException failedSync(Path path, IOException e) {
        fail("fsync of " + path + " failed: " + e.getMessage());
        return new PlinthException(ErrorCode.UNAVAILABLE, "target " + targetId + " has failed (fsync: " + e.getMessage() + ")", e);
    }

    /** Re-reads one chunk and checks every block; for the scrubber and for tests. */
    public void verify(ChunkId chunk) {
        withChunk(dataPath(chunk), false, file -> {
            file.verify(0, Integer.MAX_VALUE);
            return null;
        });
    }

    @Override
    public void close() {
        synchronized (open) {
            open.values().forEach(ChunkStore::closeQuietly);
            open.clear();
        }
    }

}
