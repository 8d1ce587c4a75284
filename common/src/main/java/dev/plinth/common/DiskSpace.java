package dev.plinth.common;

import java.io.IOException;
import java.nio.file.FileStore;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The free space of the file system under a directory, as a role checks it before it lets a
 * change use some: read from the kernel (statvfs) at most every {@link #REFRESH_NANOS}, since a
 * role asks for every change. Thread-safe.
 */
public final class DiskSpace {
    static final long REFRESH_NANOS = 100_000_000L;

    private final FileStore fileStore;
    private volatile long freeBytes;
    private volatile long readAtNanos;

    public DiskSpace(Path directory) {
        try {
            this.fileStore = Files.getFileStore(directory);
        } catch (IOException e) {
            throw new PlinthException(ErrorCode.IO_ERROR, "cannot read the file system of " + directory + ": " + e.getMessage(), e);
        }
        this.readAtNanos = System.nanoTime() - REFRESH_NANOS;
    }

    /** The bytes an unprivileged writer may still use there (0 where it cannot be read). */
    public long freeBytes() {
        long now = System.nanoTime();
        if (now - readAtNanos >= REFRESH_NANOS) {
            try {
                freeBytes = fileStore.getUsableSpace();
            } catch (IOException e) {
                freeBytes = 0;
            }
            readAtNanos = now;
        }
        return freeBytes;
    }
}
