package dev.plinth.client;

import dev.plinth.common.ErrorCode;
import dev.plinth.common.Layout;
import dev.plinth.common.PlinthException;
import dev.plinth.common.Settings;
import dev.plinth.wire.RpcClient;
import dev.plinth.wire.messages.MetaMessages;
import dev.plinth.wire.messages.MetaMessages.Attributes;
import io.netty.buffer.ByteBuf;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * An open file: positional reads and writes. What every layout shares is here; how the bytes
 * past the Data-on-MDT part lie on the targets is the layout's {@link StripeIo} (replicated
 * chains: {@link ReplicatedChains}, many pieces in parallel, every block's CRC checked).
 *
 * <p>Writes are write-behind: a write returns once its bytes are sent, holding a share of the
 * client's bounded byte budget ({@link WriteBudget}) until the targets acknowledge; a failure is
 * reported by the next write, fsync or close, as with NFS and Lustre. Writes that overlap one
 * still in flight wait for it, so the targets apply overlapping writes in order. Size and mtime
 * are settled with the metadata service at fsync and close (close-to-open consistency).
 *
 * <p>A sequential reader gets read-ahead: units of the stripe size (1 to 4 MiB,
 * {@link #readUnitBytes}) fetched ahead of it, up to the read-ahead window. Methods are
 * synchronized: one handle serves one caller at a time, except that a read outside a stream waits
 * for its targets without the handle's lock, so that a handle shared by many readers (a FUSE file
 * with 32 O_DIRECT reads in flight, threads of a map-style dataset) has them all in flight.
 *
 * <p>Bytes below the layout's {@code mdtBytes} (Data-on-MDT) live in the metadata service: writes
 * there are held by the handle (one contiguous run, at most {@code mdtBytes}) and go out with the
 * close, fsync or publish that settles the size, so a small file is written by one metadata
 * change; reads there are one metadata query.
 */
public final class PlinthFile implements AutoCloseable {
    /**
     * The smallest read-ahead unit, and the grain of the client's read-ahead budget. A file's unit
     * is its stripe size within these bounds (design note 68): a unit of one stripe is one request
     * to one target, and this disk gave 1.5x the bytes per second to 4 MiB O_DIRECT reads that it
     * gave to 1 MiB ones at the same depth.
     */
    static final int READ_UNIT_BYTES_MIN = 1 << 20;
    static final int READ_UNIT_BYTES_MAX = 4 << 20;
    /** How many read units behind the furthest read a read still counts as part of a sequential stream. */
    private static final int STREAM_SLACK_UNITS = 2;
    private static final byte[] ZEROS = new byte[64 * 1024];

    private final PlinthClient client;
    private final long inodeId;
    private final Layout layout;
    /** Where the bytes past the Data-on-MDT part lie: the layout's own way ({@link StripeIo}). */
    private final StripeIo stripes;
    private final boolean writable;
    /** Whether the metadata service counts this handle as an open (see {@link PlinthClient#openUncounted}). */
    private boolean counted;
    /** For a handle from {@link PlinthClient#openLookedUp}: what its lookup gave; else null. */
    private LookedUp lookedUp;
    /** Decrypts what this handle reads (an encrypted file), or null. */
    private ObjectCipher cipher;
    /** While the file is being restored from its archive: how much of it is back (null once it is resident). */
    private volatile HsmAccess.RestoreProgress restoring;
    private final int readUnitBytes;
    /** Where read unit 0 begins (see {@link #unitPhase(Layout)}): unit {@code u} is [u * readUnitBytes + unitPhase, + readUnitBytes). */
    private final long unitPhase;
    private final int readaheadUnits;
    /** The file's Data-on-MDT size: bytes below it are the metadata service's. */
    private final int mdtBytes;
    /** Written bytes of the Data-on-MDT part not yet sent, in {@code [pendingFrom, pendingTo)}; allocated on first use. */
    private byte[] inlinePending;
    private int pendingFrom;
    private int pendingTo;
    private final Object inflightLock = new Object();
    private final List<InflightWrite> inflight = new ArrayList<>();
    private final LinkedHashMap<Long, ReadUnit> readUnits = new LinkedHashMap<>();
    private volatile PlinthException writeFailure;
    private long sizeBytes;
    private long writtenEndBytes;
    private boolean wrote;
    private long lastReadEnd = -1;
    /** Where the reader said its stream ends ({@link #adviseSequential}): read-ahead stops there. */
    private long streamEnd = Long.MAX_VALUE;
    private boolean closed;
    private Attributes attributes;
    /**
     * Whether the file may still have set-user-ID or set-group-ID that a write by anyone but root
     * may clear (SET_KILL_PRIVILEGES; meta applies the rule): known from its mode at open, and
     * cleared once, by the first such write through this handle.
     */
    private boolean privilegesKept;

    private record InflightWrite(long start, long end, CompletableFuture<Void> done) {}

    private final String jobId;
    /** Whether this handle told the client it read the file (once per handle: atime moves at most once a flush anyway). */
    private boolean readNoted;

    PlinthFile(PlinthClient client, Attributes attributes, boolean writable) {
        this(client, attributes, writable, true);
    }

    PlinthFile(PlinthClient client, Attributes attributes, boolean writable, boolean counted) {
        this.client = client;
        this.counted = counted;
        this.jobId = client.currentJob(); // a handle's I/O belongs to the job that opened it (writeback comes from the kernel)
        this.inodeId = attributes.inodeId();
        this.layout = attributes.layout();
        if (layout == null || layout.chainIds().isEmpty()) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "file has no layout");
        }
        this.stripes = StripeIo.of(client, inodeId, layout);
        this.writable = writable;
        this.mdtBytes = layout.mdtBytes();
        this.sizeBytes = attributes.sizeBytes();
        this.attributes = attributes;
        this.privilegesKept = writable && (attributes.mode() & 06000) != 0; // meta decides what goes
        this.readUnitBytes = readUnitBytes(layout);
        this.unitPhase = unitPhase(layout);
        this.readaheadUnits = (int) Math.max(1, client.options().config().get(Settings.CLIENT_READAHEAD_BYTES) / readUnitBytes);
    }

    /**
     * The read-ahead unit of a file with this layout: its stripe size, at least 1 MiB and at most
     * 4 MiB, of stored bytes. A compressed layout stores a block of the file per 64 KiB slot, so
     * its unit is the blocks of that many slots: one stripe of slots, one request to one target
     * (a unit of 1 MiB of the file would take 17 slots, from two targets, one slot read twice).
     */
    static int readUnitBytes(Layout layout) {
        int stored = Math.clamp(layout.stripeSizeBytes(), READ_UNIT_BYTES_MIN, READ_UNIT_BYTES_MAX);
        return layout.compressed() ? stored / Layout.COMPRESSED_SLOT_BYTES * Layout.COMPRESSED_BLOCK_BYTES : stored;
    }

    /**
     * Where the units of a file with this layout are aligned: 0, or for a compressed layout (whose
     * blocks start at the Data-on-MDT size) the file offset of the first block whose slot starts a
     * unit of stored bytes, taken modulo the unit.
     */
    static long unitPhase(Layout layout) {
        if (!layout.compressed()) {
            return 0;
        }
        long storedUnit = Math.clamp(layout.stripeSizeBytes(), READ_UNIT_BYTES_MIN, READ_UNIT_BYTES_MAX);
        long firstBoundary = Math.ceilDiv(layout.mdtBytes(), storedUnit) * storedUnit;
        long block = (firstBoundary - layout.mdtBytes()) / Layout.COMPRESSED_SLOT_BYTES;
        return Math.floorMod(layout.mdtBytes() + block * Layout.COMPRESSED_BLOCK_BYTES, (long) readUnitBytes(layout));
    }

    private long unitOf(long offset) {
        return Math.floorDiv(offset - unitPhase, readUnitBytes);
    }

    private long unitStart(long unit) {
        return unit * readUnitBytes + unitPhase;
    }

    public long inodeId() {
        return inodeId;
    }

    public Layout layout() {
        return layout;
    }

    /** The size as this handle sees it: the size at open, grown by its own writes. */
    public synchronized long size() {
        return sizeBytes;
    }

    private void checkOpen() {
        if (closed) {
            throw new PlinthException(ErrorCode.BAD_DESCRIPTOR, "file is closed");
        }
    }

    private void throwWriteFailure() {
        PlinthException failure = writeFailure;
        if (failure != null) {
            writeFailure = null;
            throw new PlinthException(failure.code(), "an earlier write failed: " + failure.detail(), failure);
        }
    }

    // ---- writes

    /** Writes all of {@code source} at {@code offset}; returns the byte count. */
    public synchronized int write(long offset, ByteBuffer source) {
        checkOpen();
        if (!writable) {
            throw new PlinthException(ErrorCode.BAD_DESCRIPTOR, "file is open for reading only");
        }
        throwWriteFailure();
        int length = source.remaining();
        if (offset < 0 || offset + length > Layout.FILE_SIZE_MAX) {
            throw new PlinthException(offset < 0 ? ErrorCode.INVALID_ARGUMENT : ErrorCode.FILE_TOO_LARGE, "write at " + offset);
        }
        if (length == 0) {
            return 0;
        }
        if (clearsPrivilegesOnWrite()) {
            client.setAttr(inodeId, MetaMessages.SET_KILL_PRIVILEGES, 0, 0, 0, 0, 0, 0);
            privilegesKept = false;
        }
        dropReadUnits(offset, length);
        client.jobStats().write(jobId, length);
        int position = source.position();
        int inlineLength = inlineLength(offset, length);
        if (inlineLength > 0) {
            holdInline((int) offset, source.duplicate().position(position).limit(position + inlineLength));
        }
        if (inlineLength < length) {
            long start = offset + inlineLength;
            awaitOverlapping(start, offset + length); // overlapping writes reach the targets in order
            CompletableFuture<Void> done = stripes.write(start, source.duplicate().position(position + inlineLength), length - inlineLength);
            InflightWrite write = new InflightWrite(start, offset + length, done);
            synchronized (inflightLock) {
                inflight.add(write);
            }
            done.whenComplete((ignored, failure) -> {
                synchronized (inflightLock) {
                    inflight.remove(write);
                }
                if (failure != null) {
                    RuntimeException error = RpcClient.unwrap(failure);
                    writeFailure = error instanceof PlinthException plinth ? plinth
                            : new PlinthException(ErrorCode.IO_ERROR, error.toString(), error);
                }
            });
        }
        source.position(position + length);
        sizeBytes = Math.max(sizeBytes, offset + length);
        writtenEndBytes = Math.max(writtenEndBytes, offset + length);
        wrote = true;
        return length;
    }

    /** How many of the {@code length} bytes at {@code offset} lie in the Data-on-MDT part. */
    private int inlineLength(long offset, int length) {
        return offset < mdtBytes ? (int) Math.min(length, mdtBytes - offset) : 0;
    }

    /**
     * Keeps bytes written into the Data-on-MDT part until the next settle. The held run stays
     * contiguous (every byte in it written by this handle): a write that neither touches nor
     * overlaps it sends the run first.
     */
    private void holdInline(int at, ByteBuffer bytes) {
        int end = at + bytes.remaining();
        if (pendingTo > pendingFrom && (at > pendingTo || end < pendingFrom)) {
            flushInline();
        }
        if (inlinePending == null) {
            inlinePending = new byte[mdtBytes];
        }
        bytes.get(inlinePending, at, end - at);
        if (pendingTo > pendingFrom) {
            pendingFrom = Math.min(pendingFrom, at);
            pendingTo = Math.max(pendingTo, end);
        } else {
            pendingFrom = at;
            pendingTo = end;
        }
    }

    /** The held Data-on-MDT run as a metadata change carries it (null if none); held until {@link #sentInline()}. */
    private MetaMessages.InlineWrite heldInline() {
        if (pendingTo <= pendingFrom) {
            return null;
        }
        return new MetaMessages.InlineWrite(pendingFrom, Arrays.copyOfRange(inlinePending, pendingFrom, pendingTo));
    }

    /** A change that carried the held run succeeded (one that failed, e.g. a publish over an existing name, leaves it held). */
    private void sentInline() {
        pendingFrom = 0;
        pendingTo = 0;
    }

    private void flushInline() {
        MetaMessages.InlineWrite write = heldInline();
        if (write != null) {
            client.writeInline(inodeId, write);
            sentInline();
        }
    }

    private void awaitOverlapping(long start, long end) {
        while (true) {
            CompletableFuture<Void> blocking = null;
            synchronized (inflightLock) {
                for (InflightWrite write : inflight) {
                    if (write.start() < end && start < write.end()) {
                        blocking = write.done();
                        break;
                    }
                }
            }
            if (blocking == null) {
                return;
            }
            stripes.flush(); // a held write completes only once it is sent
            try {
                PlinthClient.await(blocking);
            } catch (RuntimeException e) {
                rethrowIfInterrupted(e); // other failures are recorded in writeFailure; the caller reports them
            }
        }
    }

    private static void rethrowIfInterrupted(RuntimeException e) {
        if (e instanceof PlinthException plinth && plinth.code() == ErrorCode.INTERRUPTED) {
            throw plinth;
        }
    }

    /** Waits until every write sent so far is acknowledged; reports a failure among them. */
    public synchronized void flush() {
        awaitSentWrites();
        flushInline();
    }

    /** Waits for the writes sent to targets and reports a failure among them (the held Data-on-MDT run stays held). */
    private void awaitSentWrites() {
        checkOpen();
        drainWrites();
        throwWriteFailure();
    }

    private void drainWrites() {
        stripes.flush();
        List<CompletableFuture<Void>> pending;
        synchronized (inflightLock) {
            pending = inflight.stream().map(InflightWrite::done).toList();
        }
        for (CompletableFuture<Void> future : pending) {
            try {
                PlinthClient.await(future);
            } catch (RuntimeException e) {
                rethrowIfInterrupted(e); // other failures are recorded in writeFailure
            }
        }
    }

    /**
     * Makes what this handle wrote visible to other clients without forcing it to disk: waits for
     * the targets to acknowledge and settles size and mtime with the metadata service. What a FUSE
     * flush (every close(2)) does, so that close-to-open consistency holds across clients.
     */
    public synchronized void publish() {
        awaitSentWrites();
        if (wrote) {
            settle(false);
        }
    }

    /**
     * Tells this handle that the file is at least {@code knownSize} bytes long: another handle
     * in the same process wrote it, and a reader through this one should see those bytes.
     */
    public synchronized void observeSize(long knownSize) {
        if (knownSize > sizeBytes) {
            sizeBytes = knownSize;
        }
    }

    /** Another handle cut the file to {@code newSize}: forget bytes past it that this one may hold. */
    public synchronized void observeTruncate(long newSize) {
        dropAllReadUnits();
        sizeBytes = newSize;
        writtenEndBytes = Math.min(writtenEndBytes, newSize);
    }

    /** Makes everything written durable on the targets and settles size and mtime (fsync). */
    public synchronized void fsync() {
        awaitSentWrites();
        // the targets' fsync and the metadata change run together: a 4 KiB write + fsync waited for one after the other
        StripeIo.SyncInFlight synced = stripes.startSync();
        try {
            settle(false);
        } catch (RuntimeException e) {
            try {
                synced.await();
            } catch (RuntimeException syncFailure) {
                e.addSuppressed(syncFailure);
            }
            throw e;
        }
        synced.await();
    }

    private void settle(boolean release) {
        attributes = client.close(inodeId, writtenEndBytes, wrote, release, heldInline());
        sentInline();
        wrote = false;
    }

    /** The file's attributes as the metadata service gave them at open, or at the last settle (fsync, publish, close). */
    public synchronized Attributes attributes() {
        return attributes;
    }

    /**
     * Ends this handle by putting its file in place with one metadata change (see
     * {@link MetaMessages.Publish}): waits for the writes, then settles and closes the file, sets
     * its mtime and {@code xattrs}, and renames {@code sourceName} (this file's name in directory
     * {@code parentId}; null for a file from {@link PlinthClient#createUnnamed}, which is linked
     * there instead) over {@code targetName}. On failure the handle stays open, so
     * {@link #close()} still releases it (and removes an unnamed file).
     */
    public synchronized Attributes publish(long parentId, String sourceName, String targetName, boolean noReplace, long mtimeNanos,
                                           List<MetaMessages.Xattr> xattrs) {
        return publish(parentId, sourceName, targetName, noReplace, mtimeNanos, xattrs, 0);
    }

    /** As above; with {@code onlyReplacing} not 0, {@code targetName} must name that inode now (else CHANGED, and the handle stays open). */
    public synchronized Attributes publish(long parentId, String sourceName, String targetName, boolean noReplace, long mtimeNanos,
                                           List<MetaMessages.Xattr> xattrs, long onlyReplacing) {
        return publish(parentId, sourceName, parentId, targetName, noReplace, mtimeNanos, xattrs, onlyReplacing);
    }

    /** As above, for a file named {@code sourceName} in directory {@code sourceParentId}, moved to {@code targetName} in {@code parentId}. */
    public synchronized Attributes publish(long sourceParentId, String sourceName, long parentId, String targetName, boolean noReplace,
                                           long mtimeNanos, List<MetaMessages.Xattr> xattrs, long onlyReplacing) {
        checkOpen();
        if (!writable) {
            throw new PlinthException(ErrorCode.BAD_DESCRIPTOR, "publish needs a handle opened for writing");
        }
        drainWrites();
        PlinthException failure = writeFailure;
        if (failure != null) {
            throw new PlinthException(failure.code(), "a write failed: " + failure.detail(), failure);
        }
        attributes = client.publish(inodeId, writtenEndBytes, mtimeNanos, xattrs, sourceParentId, sourceName, parentId, targetName, noReplace, heldInline(),
                onlyReplacing);
        sentInline();
        wrote = false;
        closed = true;
        dropAllReadUnits();
        return attributes;
    }

    /**
     * Whether the caller's next write clears the file's set-user-ID or set-group-ID bits (a change
     * of its mode that those who cache attributes need to hear of).
     */
    public synchronized boolean clearsPrivilegesOnWrite() {
        return privilegesKept && !client.caller().isRoot();
    }

    /** Cuts or extends the file to {@code newSize} bytes. */
    public synchronized void truncate(long newSize) {
        checkOpen();
        if (newSize < 0) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "negative size");
        }
        flush();
        stripes.truncate(Math.max(sizeBytes, writtenEndBytes), newSize);
        client.setAttr(inodeId, MetaMessages.SET_SIZE | MetaMessages.SET_THROUGH_WRITABLE_HANDLE, 0, 0, 0, newSize, 0, 0);
        privilegesKept = false;
        dropAllReadUnits();
        sizeBytes = newSize;
        writtenEndBytes = Math.min(writtenEndBytes, newSize);
    }

    // ---- reads

    /** Reads up to {@code target.remaining()} bytes at {@code offset}; returns the count, or -1 at end of file. */
    public int read(long offset, ByteBuffer target) {
        return read(offset, target.remaining(), new CopyInto(target));
    }

    /**
     * Reads up to {@code maxLength} bytes at {@code offset} without copying them: the verified
     * buffers the client received, as retained slices that the caller must release (holes come as
     * zeros). They hold all {@code min(maxLength, size - offset)} bytes, so one call reads up to the
     * end of the file; empty at the end of the file. For servers that pass the bytes on (the S3 gateway, the
     * FUSE mount); applications, which own their buffers, use {@link #read(long, ByteBuffer)}.
     */
    public List<ByteBuf> readBuffers(long offset, int maxLength) {
        if (maxLength < 0) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "negative length");
        }
        SliceInto slices = new SliceInto();
        try {
            read(offset, maxLength, slices);
        } catch (RuntimeException e) {
            slices.buffers.forEach(ByteBuf::release);
            throw e;
        }
        return slices.buffers;
    }

    /**
     * Makes this handle decrypt what it reads with {@code cipher} (an encrypted file's keystream,
     * {@link ObjectEncryption}); null reads the bytes as they are stored.
     */
    public synchronized void decryptWith(ObjectCipher cipher) {
        this.cipher = cipher;
    }

    /**
     * Reads under the handle's lock, except the wait for a read outside a stream: that one is sent
     * under the lock (after this handle's own writes in flight, so it sees them) and awaited
     * without it. Its bytes are then the targets' at some moment after the read began, as a read
     * racing another caller's write may find them on any file system.
     */
    private int read(long offset, int maxLength, ExtentSink sink) {
        awaitRestored(offset, maxLength);
        int length;
        long stripedOffset;
        CompletableFuture<Extent> pending;
        synchronized (this) {
            if (cipher != null) {
                sink = new DecryptInto(sink, cipher, offset);
            }
            checkOpen();
            if (offset < 0) {
                throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "negative offset");
            }
            if (offset >= sizeBytes) {
                return maxLength == 0 ? 0 : -1;
            }
            length = (int) Math.min(maxLength, sizeBytes - offset);
            if (length == 0) {
                return 0;
            }
            if (!readNoted) {
                readNoted = true;
                client.noteRead(attributes);
            }
            client.jobStats().read(jobId, length);
            int inlineLength = inlineLength(offset, length);
            if (inlineLength > 0) {
                readInline((int) offset, inlineLength, sink);
                lastReadEnd = offset + inlineLength; // a read that goes on past the part continues this one
            }
            stripedOffset = offset + inlineLength;
            if (inlineLength == length) {
                pending = null;
            } else if (restoring != null) {
                pending = stripes.read(stripedOffset, length - inlineLength); // no read-ahead past what is back
            } else {
                pending = readStriped(stripedOffset, length - inlineLength, sink);
            }
            if (pending == null) {
                openIfReadingLong();
                return length;
            }
        }
        Extent extent = await(pending);
        synchronized (this) {
            try {
                openIfReadingLong();
            } catch (RuntimeException e) {
                extent.release();
                throw e;
            }
        }
        deliverOnce(extent, stripedOffset, offset + length, sink);
        return length;
    }

    /** Makes this handle, opened on a released file, read while the restore runs ({@link HsmAccess#restoreInOrder}). */
    void readWhileRestoring(HsmAccess.RestoreProgress progress) {
        this.restoring = progress;
    }

    /**
     * While the file is being restored from its archive (a handle opened on a released file), waits
     * until {@code [offset, offset + length)} is back, as each read does for its own range; at
     * most hsm.restore-wait-millis, then RESTORE_PENDING; ARCHIVE_UNREADABLE if the copy is found
     * damaged. Returns at once on a resident file. For servers that must know a range reads
     * before they answer (an S3 GET's status comes before its body).
     */
    public void awaitRestored(long offset, long length) {
        HsmAccess.RestoreProgress progress = restoring;
        if (progress == null || offset < 0 || length <= 0) {
            return;
        }
        long end;
        synchronized (this) {
            end = Math.min(sizeBytes, offset + Math.min(length, Long.MAX_VALUE - offset));
        }
        if (end > offset && progress.await(end)) {
            restoring = null; // resident: reads go on as on any file, with read-ahead
        }
    }

    /**
     * A handle's lookup ({@link ObjectAccess#openLookedUp}): from when (the client's clock) its reads
     * need the file opened, and the Data-on-MDT part the lookup brought (null: none).
     */
    record LookedUp(long openByNanos, byte[] mdtPart) {}

    /** Makes this handle one that reads without an open as {@code lookedUp} allows. */
    void readWithoutOpen(LookedUp lookedUp) {
        this.lookedUp = lookedUp;
    }

    /**
     * A handle reading without an open ({@link PlinthClient#openLookedUp}) knows what it read to
     * be the file's only while the file's chunks are sure to be kept: once that time is over, it
     * opens the file (counted, as an open handle is), before it hands out what it read. The open
     * finding the file proves it was not removed, so nothing read so far was freed, and it keeps
     * the chunks from then on. A file removed meanwhile fails the read (NOT_FOUND).
     */
    private void openIfReadingLong() {
        if (lookedUp != null && !counted && client.clock().nanoTime() - lookedUp.openByNanos() >= 0) {
            client.openCounted(inodeId, false);
            counted = true;
        }
    }

    /** Hands {@code [offset, offset + length)} of the Data-on-MDT part to {@code sink}, with this handle's own writes. */
    private void readInline(int offset, int length, ExtentSink sink) {
        flushInline();
        byte[] part = lookedUp == null ? null : lookedUp.mdtPart();
        byte[] bytes = part != null ? Arrays.copyOfRange(part, Math.min(offset, part.length), Math.min(offset + length, part.length))
                : client.readInline(inodeId, offset, length).bytes();
        int available = Math.min(bytes.length, length);
        if (available > 0) {
            ByteBuf wrapped = io.netty.buffer.Unpooled.wrappedBuffer(bytes);
            try {
                sink.bytes(wrapped, 0, available);
            } finally {
                wrapped.release();
            }
        }
        if (length - available > 0) {
            sink.zeros(length - available);
        }
    }

    /**
     * Reads bytes past the Data-on-MDT part from the targets, through the read-ahead units when the
     * reader streams; a read outside a stream is only sent, and its extent returned for the caller
     * to await without the lock (null when the bytes went to {@code sink} here).
     */
    private CompletableFuture<Extent> readStriped(long offset, int length, ExtentSink sink) {
        boolean hasInflightWrites;
        synchronized (inflightLock) {
            hasInflightWrites = !inflight.isEmpty();
        }
        if (hasInflightWrites) {
            flush(); // a handle reads its own writes
        }
        // A stream need not arrive in order: the kernel (FUSE) sends read-ahead requests concurrently, so a
        // read a little behind or ahead of the last one still belongs to the stream and its read-ahead
        boolean sequential = offset == lastReadEnd || (offset == 0 && lastReadEnd < 0)
                || (lastReadEnd >= 0 && offset >= lastReadEnd - (long) STREAM_SLACK_UNITS * readUnitBytes
                        && offset <= lastReadEnd + (long) readaheadUnits * readUnitBytes);
        if (sequential) {
            readThroughUnits(offset, length, sink);
            lastReadEnd = Math.max(lastReadEnd, offset + length);
            return null;
        }
        dropAllReadUnits();
        streamEnd = Long.MAX_VALUE; // a new stream, whose end nobody said
        lastReadEnd = offset + length;
        return stripes.read(offset, length);
    }

    /** What {@link #readAll} hands each block it read to. */
    public interface BlockSink {
        void accept(ByteBuffer block) throws java.io.IOException;
    }

    /**
     * Reads the whole file from its start, in blocks of up to {@code blockBytes}, with read-ahead
     * for a sequential reader, handing each block to {@code sink} (the buffer is reused: copy what
     * is kept). Returns the bytes read.
     */
    public long readAll(int blockBytes, BlockSink sink) throws java.io.IOException {
        adviseSequential(0, size());
        ByteBuffer buffer = ByteBuffer.allocate(blockBytes);
        long offset = 0;
        while (true) {
            buffer.clear();
            int read = read(offset, buffer);
            if (read <= 0) {
                return offset;
            }
            buffer.flip();
            sink.accept(buffer);
            offset += read;
        }
    }

    /**
     * Says that the reader will read {@code length} bytes from {@code offset} in order, as
     * {@code posix_fadvise(SEQUENTIAL)} does for a range: its first read there already counts as
     * part of a stream (with read-ahead), and read-ahead never reaches past the range. A reader
     * that goes on past it gets what it asks for, without read-ahead. For servers that know what
     * they will read (the S3 gateway: a ranged GET fetched a whole read-ahead window past its
     * range, 16 MiB, where the AWS CLI downloads in 8 MiB ranges).
     */
    public synchronized void adviseSequential(long offset, long length) {
        checkOpen();
        if (offset < 0 || length <= 0) {
            return;
        }
        streamEnd = offset + length;
        lastReadEnd = offset;
    }

    private void readThroughUnits(long offset, int length, ExtentSink sink) {
        long end = offset + length;
        long firstUnit = unitOf(offset);
        long lastUnit = unitOf(end - 1);
        // keep the window full: everything up to readaheadUnits past the last unit read, within the file and the stream
        long windowEnd = Math.max(lastUnit, Math.min(lastUnit + readaheadUnits, unitOf(Math.min(sizeBytes, streamEnd) - 1)));
        long fetchEnd = Math.max(streamEnd, end); // a unit that reaches past the advised range is fetched only up to its end
        // A unit the read needs that is not on its way (a stream's first read, or one that outran its read-ahead)
        // and that the read ends inside is fetched as two requests at once: the part the read asks for, which it
        // waits for, and the rest, which becomes the unit. A GET's first 1 MiB then waits for 1 MiB from the disk,
        // not for a whole 4 MiB stripe (design note 70).
        CompletableFuture<Extent> head = null;
        if (!readUnits.containsKey(lastUnit) && end < unitStart(lastUnit + 1) && end < Math.min(sizeBytes, fetchEnd)) {
            long headStart = Math.max(offset, unitStart(lastUnit));
            head = stripes.read(headStart, (int) (end - headStart));
            readUnits.put(lastUnit, new ReadUnit(fetchUnit(lastUnit, end, fetchEnd), false));
        }
        for (long unit = firstUnit; unit <= windowEnd; unit++) {
            if (!readUnits.containsKey(unit)) {
                boolean ahead = unit > lastUnit;
                if (ahead && !client.readAheadBudget().tryTake(readUnitBytes)) {
                    break; // the client's read-ahead is all taken (many streams at once): fetch what is asked for
                }
                readUnits.put(unit, new ReadUnit(fetchUnit(unit, 0, fetchEnd), ahead));
            }
        }
        for (long unit = firstUnit; unit <= lastUnit; unit++) {
            long unitStart = unitStart(unit);
            long from = Math.max(offset, unitStart);
            long to = Math.min(end, unitStart + readUnitBytes);
            if (unit == lastUnit && head != null) {
                deliverOnce(await(head), from, to, sink);
                continue;
            }
            ReadUnit pending = readUnits.get(unit);
            Extent extent = pending == null ? null : await(pending.extent());
            if (extent != null && extent.start > from) {
                // a read behind where its unit's extent begins (out of order, after a split): just its own bytes
                deliverOnce(await(stripes.read(from, (int) (to - from))), from, to, sink);
                continue;
            }
            if (extent == null || extent.start + extent.length < to) {
                // dropped behind the stream, or fetched when the file ended inside it and it has grown since
                if (pending != null) {
                    release(pending);
                }
                pending = new ReadUnit(fetchUnit(unit, 0, Long.MAX_VALUE), false);
                readUnits.put(unit, pending);
                extent = await(pending.extent());
            }
            extent.deliver(from, (int) (to - from), sink);
        }
        // drop units well behind the reader (a few stay for reads that arrive out of order)
        long headUnit = Math.max(lastUnit, unitOf(Math.max(0, lastReadEnd - 1)));
        Iterator<Map.Entry<Long, ReadUnit>> entries = readUnits.entrySet().iterator();
        while (entries.hasNext()) {
            Map.Entry<Long, ReadUnit> entry = entries.next();
            if (entry.getKey() < headUnit - STREAM_SLACK_UNITS) {
                release(entry.getValue());
                entries.remove();
            }
        }
    }

    /** Delivers [from, to) of an extent fetched for one read alone, and releases it. */
    private static void deliverOnce(Extent extent, long from, long to, ExtentSink sink) {
        try {
            extent.deliver(from, (int) (to - from), sink);
        } finally {
            extent.release();
        }
    }

    private void dropReadUnits(long offset, int length) {
        if (readUnits.isEmpty()) {
            return;
        }
        long first = unitOf(offset);
        long last = unitOf(offset + length - 1);
        readUnits.entrySet().removeIf(entry -> {
            boolean drop = entry.getKey() >= first && entry.getKey() <= last;
            if (drop) {
                release(entry.getValue());
            }
            return drop;
        });
    }

    private void dropAllReadUnits() {
        readUnits.values().forEach(this::release);
        readUnits.clear();
    }

    /** A read-ahead unit being fetched or held; {@code budgeted}: it holds its bytes of the client's {@link ReadAheadBudget}. */
    private record ReadUnit(CompletableFuture<Extent> extent, boolean budgeted) {}

    /** Releases a unit's buffers now, or when it arrives if it is still in flight, and gives back its budget. */
    private void release(ReadUnit unit) {
        unit.extent().whenComplete((extent, failure) -> {
            if (extent != null) {
                extent.release();
            }
        });
        if (unit.budgeted()) {
            client.readAheadBudget().giveBack(readUnitBytes);
        }
    }

    private static <T> T await(CompletableFuture<T> future) {
        try {
            return PlinthClient.await(future);
        } catch (RuntimeException e) {
            throw RpcClient.unwrap(e);
        }
    }

    /** Copies into the caller's buffer ({@link #read(long, ByteBuffer)}). */
    record CopyInto(ByteBuffer target) implements ExtentSink {
        @Override
        public void bytes(ByteBuf source, int index, int length) {
            source.getBytes(index, target.slice(target.position(), length));
            target.position(target.position() + length);
        }

        @Override
        public void zeros(int length) {
            for (int left = length; left > 0; ) {
                int run = Math.min(left, ZEROS.length);
                target.put(ZEROS, 0, run);
                left -= run;
            }
        }
    }

    /**
     * Decrypts what a read hands out, in order from the read's offset, into buffers of its own
     * (the received ones may be read-ahead units that other reads still slice), then passes them on.
     */
    private static final class DecryptInto implements ExtentSink {
        private final ExtentSink next;
        private final ObjectCipher cipher;
        private long position;

        DecryptInto(ExtentSink next, ObjectCipher cipher, long position) {
            this.next = next;
            this.cipher = cipher;
            this.position = position;
        }

        @Override
        public void bytes(ByteBuf source, int index, int length) {
            byte[] plain = new byte[length];
            source.getBytes(index, plain);
            pass(plain);
        }

        @Override
        public void zeros(int length) {
            pass(new byte[length]); // a hole reads as the keystream's XOR of zeros, as stored zeros would
        }

        private void pass(byte[] bytes) {
            cipher.apply(position, bytes, 0, bytes.length);
            position += bytes.length;
            ByteBuf wrapped = io.netty.buffer.Unpooled.wrappedBuffer(bytes);
            try {
                next.bytes(wrapped, 0, bytes.length);
            } finally {
                wrapped.release();
            }
        }
    }

    /** Collects retained slices, no copy ({@link #readBuffers}). */
    private static final class SliceInto implements ExtentSink {
        final List<ByteBuf> buffers = new ArrayList<>();

        @Override
        public void bytes(ByteBuf source, int index, int length) {
            buffers.add(source.retainedSlice(index, length));
        }

        @Override
        public void zeros(int length) {
            for (int left = length; left > 0; ) {
                int run = Math.min(left, ZEROS.length);
                buffers.add(io.netty.buffer.Unpooled.wrappedBuffer(ZEROS, 0, run).asReadOnly());
                left -= run;
            }
        }
    }

    /**
     * Fetches a read-ahead unit from {@code from} (or its start) as far as the file goes and at
     * most up to {@code limit}, less the Data-on-MDT part (which the targets do not hold).
     */
    private CompletableFuture<Extent> fetchUnit(long unit, long from, long limit) {
        long start = Math.max(Math.max(unitStart(unit), from), mdtBytes);
        long end = Math.min(Math.min(unitStart(unit + 1), sizeBytes), limit);
        return stripes.read(start, (int) Math.max(0, end - start));
    }

    /** Flushes, settles size and mtime, and ends this open; reports a failed write-behind. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        drainWrites();
        closed = true;
        dropAllReadUnits();
        PlinthException failure = writeFailure;
        if (!counted) {
            return; // read-only and never counted: nothing to settle or release
        }
        try {
            settle(true);
        } finally {
            if (failure != null) {
                throw new PlinthException(failure.code(), "a write failed: " + failure.detail(), failure);
            }
        }
    }
}
