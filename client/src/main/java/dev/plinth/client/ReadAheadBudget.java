package dev.plinth.client;

import java.util.concurrent.Semaphore;

/**
 * The read-ahead one client may hold, all its open files together, in read units
 * ({@link PlinthFile#READ_UNIT_BYTES}): a file fetches a unit ahead of its reader only while one is free here, and
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
    private final int units;
    private final Semaphore free;

    /** {@code directMemoryBytes}: the process's limit, or a value <= 0 when unknown. */
    ReadAheadBudget(long configuredBytes, long directMemoryBytes) {
        long bytes = dev.plinth.common.DirectMemory.shareOf(configuredBytes, directMemoryBytes);
        this.units = (int) Math.min(Integer.MAX_VALUE, Math.max(0, bytes) / PlinthFile.READ_UNIT_BYTES);
        this.free = new Semaphore(units);
    }

    /** Takes one unit if one is free; never waits. */
    boolean tryTake() {
        return free.tryAcquire();
    }

    void giveBack() {
        free.release();
    }

    int units() {
        return units;
    }

    int free() {
        return free.availablePermits();
    }
}
