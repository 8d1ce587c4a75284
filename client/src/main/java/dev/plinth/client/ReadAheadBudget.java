package dev.plinth.client;

import java.util.concurrent.Semaphore;

/**
 * The read-ahead one client may hold, all its open files together, counted in MiB
 * ({@link PlinthFile#READ_UNIT_BYTES_MIN}, the smallest read unit): a file fetches a unit ahead of its reader only while its bytes are free here, and
 * gives it back when the unit is read past, dropped or the file closes. Bytes a reader asks for are
 * fetched whatever the budget says; only the speculative part waits its turn, so many streams at
 * once (a FUSE mount, the S3 gateway, a data loader's workers) shrink each other's read-ahead
 * instead of holding {@code client.readahead-bytes} each in direct memory. Lustre's client bounds
 * its read-ahead the same way ({@code max_read_ahead_mb} beside {@code max_read_ahead_per_file_mb}).
 *
 * <p>At most a quarter of the process's direct memory, as for {@link WriteBudget}: every unit is
 * a direct buffer received from the network. Thread-safe.
 */
final class ReadAheadBudget {
    private static final int GRAIN_BYTES = PlinthFile.READ_UNIT_BYTES_MIN;
    private final int grains;
    private final Semaphore free;

    /** {@code directMemoryBytes}: the process's limit, or a value <= 0 when unknown. */
    ReadAheadBudget(long configuredBytes, long directMemoryBytes) {
        long bytes = dev.plinth.common.DirectMemory.shareOf(configuredBytes, directMemoryBytes);
        this.grains = (int) Math.min(Integer.MAX_VALUE, Math.max(0, bytes) / GRAIN_BYTES);
        this.free = new Semaphore(grains);
    }

    /** Takes a unit of {@code unitBytes} (in whole grains, rounded up: a compressed file's unit is 16 bytes a slot short of them) if that much is free; never waits. */
    boolean tryTake(int unitBytes) {
        return free.tryAcquire(grainsOf(unitBytes));
    }

    void giveBack(int unitBytes) {
        free.release(grainsOf(unitBytes));
    }

    /** The bytes taken now. */
    long bytesHeld() {
        return (long) (grains - free.availablePermits()) * GRAIN_BYTES;
    }

    private static int grainsOf(int unitBytes) {
        return (unitBytes + GRAIN_BYTES - 1) / GRAIN_BYTES;
    }
}
