package dev.plinth.storage;

import com.sun.nio.file.ExtendedOpenOption;
import io.netty.buffer.ByteBuf;
import java.io.EOFException;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reads chunk ranges that are not in the page cache with O_DIRECT, into a pooled buffer.
 *
 * <p>Why: a buffered read of cold data first fills the page cache, allocating and mapping fresh
 * pages, and then copies them out (or sendfile sends them). On the machines we measure, filling
 * the cache cost 0.08-0.42 s of system time per GiB (it swings with the host), where the device's
 * DMA into a buffer costs next to nothing; for the embedded server's own S3 gateway and mount,
 * whose reads arrive in buffers anyway, the copy out of the cache goes too. A target rarely reads
 * the same range twice soon (clients keep their caches), so the cache it would fill buys little;
 * Ceph's BlueStore reads past the kernel's cache for the same reason.
 *
 * <p>Ranges that are all in the page cache are left to it (sendfile to a socket costs no copy),
 * and so are short ones ({@link #READ_BYTES_MIN}), whose reads are latency-bound and may well
 * come again. Whether a range is cached is asked without touching it: a mapping that is never
 * read, checked with mincore ({@link java.lang.foreign.MemorySegment#isLoaded}) and unmapped at once. The kernel
 * keeps the two kinds of access coherent: a direct read first writes back dirty cached pages of
 * its range.
 *
 * <p>O_DIRECT wants the position, the length and the buffer's address aligned to the file
 * system's block size; a read's offset is a CRC block boundary (64 KiB), its length is rounded
 * up (a read past the end of the file stops there), and the buffers are aligned ({@link ReadBuffers}).
 * Thread-safe.
 */
final class DirectReader {
    private static final Logger LOG = LoggerFactory.getLogger(DirectReader.class);

    /** Reads shorter than this go through the page cache. */
    static final int READ_BYTES_MIN = 256 << 10;

    private final int alignment;
    private final ReadBuffers buffers;
    private final LongAdder bytesRead = new LongAdder();
    private final AtomicBoolean failureLogged = new AtomicBoolean();

    /** {@code buffers}: shared by the targets of one process. */
    DirectReader(int alignment, ReadBuffers buffers) {
        this.alignment = alignment;
        this.buffers = java.util.Objects.requireNonNull(buffers, "buffers is null");
    }

    /**
     * The {@code length} bytes of {@code file} at {@code offset} (aligned, and all within the file)
     * read past the page cache into a buffer the caller releases, or null where the caller should
     * read them through the cache: a short read, a range all in the cache, or a direct read that
     * failed (a file that refuses O_DIRECT, one shorter than its metadata): the cached read then
     * reports what is wrong the way it always has, and the first such failure is logged.
     */
    ByteBuf readIfUncached(Path file, long offset, int length) {
        if (length < READ_BYTES_MIN || (offset & (alignment - 1)) != 0) {
            return null;
        }
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ, ExtendedOpenOption.DIRECT)) {
            if (cached(channel, offset, length)) {
                return null;
            }
            int rounded = (length + alignment - 1) & -alignment;
            ByteBuf buffer = buffers.allocate(rounded, alignment);
            try {
                ByteBuffer target = buffer.nioBuffer(buffer.readerIndex(), rounded);
                while (target.position() < length) {
                    if (channel.read(target, offset + target.position()) <= 0) {
                        throw new EOFException("it is shorter than its metadata says");
                    }
                }
                buffer.writerIndex(buffer.readerIndex() + length);
                bytesRead.add(length);
                return buffer;
            } catch (IOException | RuntimeException e) {
                buffer.release();
                throw e;
            }
        } catch (IOException | UnsupportedOperationException e) {
            if (failureLogged.compareAndSet(false, true)) {
                LOG.warn("direct read of {} failed ({}); such reads go through the page cache", file, e.toString());
            }
            return null;
        }
    }

    /** Whether every page of the range is in the page cache: mincore over a mapping that nothing reads. */
    private static boolean cached(FileChannel channel, long offset, int length) throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            return channel.map(FileChannel.MapMode.READ_ONLY, offset, length, arena).isLoaded();
        }
    }

    /** Bytes read with O_DIRECT so far. */
    long bytesRead() {
        return bytesRead.sum();
    }
}
