package dev.plinth.hsm;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;

/** How an object is cut into parts, and the checks every store makes on them. */
final class Parts {
    private Parts() {}

    static int count(long sizeBytes, int partBytes) {
        return sizeBytes == 0 ? 0 : (int) ((sizeBytes + partBytes - 1) / partBytes);
    }

    /** CRC32C of a buffer's remaining bytes, leaving its position where it was. */
    static int crc32c(ByteBuffer bytes) {
        java.util.zip.CRC32C crc = new java.util.zip.CRC32C();
        crc.update(bytes.duplicate());
        return (int) crc.getValue();
    }

    static void awaitAll(List<? extends Future<?>> pending) throws IOException {
        IOException failure = null;
        for (Future<?> part : pending) {
            try {
                part.get();
            } catch (ExecutionException e) {
                if (e.getCause() instanceof RuntimeException runtime) {
                    throw runtime; // the action was lost, or a bug: not an I/O failure to report as one
                }
                if (failure == null) {
                    failure = e.getCause() instanceof IOException io ? io : new IOException(e.getCause().toString(), e.getCause());
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new java.io.InterruptedIOException("interrupted while storing parts");
            }
        }
        if (failure != null) {
            throw failure;
        }
    }
}
