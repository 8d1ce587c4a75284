package dev.plinth.storage;

import com.sun.nio.file.ExtendedOpenOption;
import dev.plinth.common.AlignedBufferPool;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Writes the block-aligned part of chunk writes with O_DIRECT, from a few aligned buffers.
 *
 * <p>Why: a buffered write copies every byte into the page cache, and on the machines we measure
 * that copy (into freshly allocated pages) costs about a core per 500 MB/s, more than the network
 * receive and the CRC check together; the dirty pages then cost a second pass in writeback. A
 * direct write hands the buffer to the device instead. A storage target rarely reads back what it
 * just wrote (clients keep their own caches, and readers come later), so the page cache buys it
 * little; Lustre's OSS makes the same choice for bulk writes.
 *
 * <p>O_DIRECT wants the file position, the length and the buffer's address aligned to the file
 * system's block size. Network buffers are not aligned, so the data is copied into one of at most
 * {@code buffers} aligned buffers (a copy into hot memory, much cheaper than the page cache's);
 * a buffer that happens to be aligned already is written as it is. Where every buffer is in use,
 * or the part is not aligned (a write's unaligned head or tail, small writes), the caller writes
 * through the page cache as before: the kernel keeps the two kinds coherent (a direct write flushes
 * and drops cached pages of its range). Durability is unchanged: an fsync of either descriptor
 * flushes the file.
 *
 * <p>Thread-safe.
 */
final class DirectWriter {
    private static final Logger LOG = LoggerFactory.getLogger(DirectWriter.class);
    static final int BUFFER_BYTES = 1 << 20;

    private final int alignment;
    private final AlignedBufferPool buffers;
    private final LongAdder bytesWritten = new LongAdder();
    private final AtomicBoolean openFailureLogged = new AtomicBoolean();

    DirectWriter(int alignment, int buffersMax) {
        this.alignment = alignment;
        this.buffers = new AlignedBufferPool(BUFFER_BYTES, alignment, buffersMax);
    }

    /**
     * The alignment O_DIRECT needs for files under {@code directory} (its file system's block
     * size), or 0 where that file system refuses O_DIRECT (tmpfs on older kernels, some FUSE file
     * systems): tried once, with a probe file. Direct reads ({@link DirectReader}) need the same.
     */
    static int probeAlignment(Path directory) {
        Path probe = directory.resolve(".direct-probe");
        try {
            int alignment = Math.toIntExact(Files.getFileStore(directory).getBlockSize());
            if (alignment <= 0 || Integer.bitCount(alignment) != 1 || alignment > BUFFER_BYTES) {
                return 0;
            }
            try (FileChannel channel = FileChannel.open(probe, StandardOpenOption.CREATE, StandardOpenOption.WRITE, ExtendedOpenOption.DIRECT)) {
                channel.write(AlignedBufferPool.allocate(alignment, alignment), 0);
            } catch (IOException e) {
                if (String.valueOf(e.getMessage()).contains("No space left on device")) {
                    // a full disk says nothing about O_DIRECT, which the open took: direct writes once there is room
                    LOG.warn("{}: no space left to probe O_DIRECT with a write; taking it as supported, since the open was", directory);
                    return alignment;
                }
                throw e;
            }
            return alignment;
        } catch (IOException | UnsupportedOperationException | ArithmeticException e) {
            LOG.info("{}: the file system refuses O_DIRECT ({}); chunk I/O goes through the page cache", directory, e.toString());
            return 0;
        } finally {
            try {
                Files.deleteIfExists(probe);
            } catch (IOException e) {
                LOG.warn("cannot remove {}: {}", probe, e.toString());
            }
        }
    }

    /** Whether {@link #writeAlignedPrefix} could write any of {@code source} at {@code position}. */
    boolean worthTrying(ByteBuffer source, long position) {
        return source.remaining() >= alignment && (position & (alignment - 1)) == 0;
    }

    /**
     * Opens {@code dataPath} (existing) for direct writes, or returns null where that fails (the
     * page cache still works, so a write is not failed for it; the first failure is logged).
     */
    FileChannel open(Path dataPath) {
        try {
            return FileChannel.open(dataPath, StandardOpenOption.WRITE, ExtendedOpenOption.DIRECT);
        } catch (IOException | UnsupportedOperationException e) {
            if (openFailureLogged.compareAndSet(false, true)) {
                LOG.warn("cannot open {} for direct writes ({}); such chunks write through the page cache", dataPath, e.toString());
            }
            return null;
        }
    }

    /**
     * Writes the longest aligned prefix of {@code source} at {@code position} through
     * {@code channel} (opened by {@link #open}) and advances {@code source} past what it wrote;
     * writes nothing where {@code position} is not aligned, the prefix is empty, or no buffer is
     * free. Returns the bytes written.
     */
    int writeAlignedPrefix(FileChannel channel, ByteBuffer source, long position) throws IOException {
        int aligned = source.remaining() & -alignment;
        if (aligned == 0 || (position & (alignment - 1)) != 0) {
            return 0;
        }
        if (source.isDirect() && (MemorySegment.ofBuffer(source).address() & (alignment - 1)) == 0) {
            ByteBuffer piece = source.slice(source.position(), aligned);
            ChunkFile.writeFully(channel, piece, position);
            source.position(source.position() + aligned);
            bytesWritten.add(aligned);
            return aligned;
        }
        ByteBuffer buffer = buffers.take();
        if (buffer == null) {
            return 0;
        }
        try {
            int written = 0;
            while (written < aligned) {
                int piece = Math.min(buffer.capacity(), aligned - written);
                buffer.clear().put(0, source, source.position() + written, piece).limit(piece);
                ChunkFile.writeFully(channel, buffer, position + written);
                written += piece;
            }
            source.position(source.position() + written);
            bytesWritten.add(written);
            return written;
        } finally {
            buffers.giveBack(buffer);
        }
    }

    /** Bytes written with O_DIRECT so far. */
    long bytesWritten() {
        return bytesWritten.sum();
    }
}
