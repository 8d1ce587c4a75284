package dev.plinth.client;

import dev.plinth.common.DirectMemory;
import dev.plinth.common.ErrorCode;
import dev.plinth.common.PlinthException;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;

/**
 * The bytes of write-behind one client holds in flight, shared by all its open files: a write
 * returns once its pieces are sent, and each piece holds its share until the target acknowledges.
 *
 * <p>The budget is {@code client.write-behind-bytes}, but at most a quarter of the process's
 * direct memory, because every byte in flight is a direct buffer: a gateway started with 64 MiB
 * of direct memory and a 64 MiB budget per file ran out of direct memory whenever the disk fell
 * behind a large PUT (S3StreamingTest, one run in three), and the memory left for receiving the
 * request body went with it. Thread-safe.
 */
final class WriteBudget {
    static final int UNIT_BYTES = 4096;
    static final long BYTES_MIN = 2L << 20;

    private final int units;
    private final Semaphore free;

    /** {@code directMemoryBytes}: the process's limit, or a value <= 0 when unknown. */
    WriteBudget(long configuredBytes, long directMemoryBytes) {
        long bytes = DirectMemory.shareOf(configuredBytes, directMemoryBytes);
        this.units = (int) Math.min(Integer.MAX_VALUE, Math.max(BYTES_MIN, bytes) / UNIT_BYTES);
        this.free = new Semaphore(units);
    }

    long bytes() {
        return (long) units * UNIT_BYTES;
    }

    /**
     * Waits until {@code bytes} can be held, giving up if the caller does; returns the units taken,
     * for {@link #release}. A piece larger than the whole budget takes all of it (it would wait forever otherwise).
     */
    int acquire(int bytes) {
        int wanted = (int) Math.min(units, ((long) bytes + UNIT_BYTES - 1) / UNIT_BYTES);
        try {
            while (!free.tryAcquire(wanted, 100, TimeUnit.MILLISECONDS)) {
                PlinthClient.checkCancelled();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new PlinthException(ErrorCode.INTERRUPTED, "interrupted while waiting to write");
        }
        return wanted;
    }

    void release(int taken) {
        free.release(taken);
    }

    int available() {
        return free.availablePermits();
    }
}
