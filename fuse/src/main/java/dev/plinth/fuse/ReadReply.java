package dev.plinth.fuse;

import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.netty.buffer.ByteBuf;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.util.List;

/**
 * The struct iovec array of a read reply (fuse_reply_iov): entries point at the client's own
 * buffers, so the kernel copies the bytes once, straight into the reader's pages. Bytes not in
 * native memory (the zeros of a hole), and the tail of a reply in more pieces than there are
 * entries, are copied into a scratch buffer first.
 */
final class ReadReply {
    /** Bytes of one struct iovec: a pointer and a size_t. */
    static final long IOVEC_BYTES = 16;

    private ReadReply() {}

    /**
     * Fills {@code iov} (room for {@code iovMax} entries) with the bytes of {@code buffers} in order
     * and returns how many entries it used. {@code scratch} must hold as many bytes as the buffers.
     */
    static int gather(List<ByteBuf> buffers, MemorySegment iov, int iovMax, MemorySegment scratch) {
        int parts = 0;
        for (ByteBuf buffer : buffers) {
            parts += buffer.nioBufferCount();
        }
        int ownEntriesMax = parts <= iovMax ? iovMax : iovMax - 1; // the last entry is then the copied tail
        int count = 0;
        long copied = 0;
        long tailStart = -1;
        for (ByteBuf buffer : buffers) {
            for (ByteBuffer part : buffer.nioBuffers()) {
                int n = part.remaining();
                if (n == 0) {
                    continue;
                }
                MemorySegment source = MemorySegment.ofBuffer(part);
                if (count < ownEntriesMax && tailStart < 0) {
                    if (!source.isNative()) {
                        source = scratch.asSlice(copied, n).copyFrom(source);
                        copied += n;
                    }
                    set(iov, count++, source.address(), n);
                } else {
                    if (tailStart < 0) {
                        tailStart = copied;
                    }
                    scratch.asSlice(copied, n).copyFrom(source);
                    copied += n;
                }
            }
        }
        if (tailStart >= 0) {
            set(iov, count++, scratch.address() + tailStart, copied - tailStart);
        }
        return count;
    }

    private static void set(MemorySegment iov, int index, long address, long length) {
        iov.setAtIndex(JAVA_LONG, 2L * index, address);
        iov.setAtIndex(JAVA_LONG, 2L * index + 1, length);
    }
}
