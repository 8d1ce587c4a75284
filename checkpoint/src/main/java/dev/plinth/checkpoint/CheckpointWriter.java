package dev.plinth.checkpoint;

import dev.plinth.common.FileTrees;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * Writes checkpoints into a staging directory in the background, for trainers on the JVM: hand it
 * named buffers or streams and it returns at once (copying a buffer, so the caller may reuse it),
 * holding at most {@code memoryBudgetBytes} of copies; a caller that gets ahead of the disk
 * waits for room. {@link Checkpoint#commit} completes once every file is written and the step is
 * committed by the protocol's rename (see {@link LocalStaging#commit}); the agent takes it from there.
 *
 * <pre>{@code
 * try (CheckpointWriter writer = CheckpointWriter.open(Path.of("/nvme/staging"), 1L << 30, 4)) {
 *     CheckpointWriter.Checkpoint step = writer.begin(500);
 *     step.write("model.bin", weights);
 *     step.write("optimizer.bin", optimizerStream);
 *     step.commit().join(); // or keep training and join later
 * }
 * }</pre>
 */
public final class CheckpointWriter implements AutoCloseable {
    private static final int CHUNK_BYTES = 4 << 20;

    private final LocalStaging staging;
    private final ExecutorService io;
    private final long budgetBytes;
    private final int chunkBytes;
    private long heldBytes;

    private CheckpointWriter(Path staging, long memoryBudgetBytes, int threads) {
        if (memoryBudgetBytes < 1 || threads < 1) {
            throw new IllegalArgumentException("the memory budget and the thread count must be positive");
        }
        this.staging = new LocalStaging(staging);
        this.budgetBytes = memoryBudgetBytes;
        this.chunkBytes = (int) Math.min(CHUNK_BYTES, memoryBudgetBytes);
        this.io = Executors.newFixedThreadPool(threads, Thread.ofPlatform().daemon().name("checkpoint-writer-", 0).factory());
    }

    public static CheckpointWriter open(Path staging, long memoryBudgetBytes, int threads) throws IOException {
        Files.createDirectories(staging);
        return new CheckpointWriter(staging, memoryBudgetBytes, threads);
    }

    /** A single-process checkpoint of {@code step}. */
    public Checkpoint begin(long step) throws IOException {
        return begin(step, 0, 1);
    }

    /**
     * This rank's part of {@code step}, in a job of {@code worldSize} ranks. A directory left by a
     * writer that died is started over, and this rank's uncommitted leftovers of earlier steps go.
     */
    public Checkpoint begin(long step, int rank, int worldSize) throws IOException {
        new RankManifest(step, rank, worldSize, List.of()); // checks the numbers
        Path directory = staging.uncommitted(step, rank, worldSize);
        if (Files.exists(staging.committed(step, rank, worldSize))) {
            throw new java.nio.file.FileAlreadyExistsException(staging.committed(step, rank, worldSize).toString(), null,
                    "step already committed; a committed step never changes");
        }
        staging.removeAbandoned(step, rank, worldSize);
        FileTrees.delete(directory);
        Files.createDirectories(directory);
        return new Checkpoint(step, rank, worldSize, directory);
    }

    private synchronized void acquire(long bytes) throws InterruptedException {
        while (heldBytes > 0 && heldBytes + bytes > budgetBytes) {
            wait();
        }
        heldBytes += bytes;
    }

    private synchronized void release(long bytes) {
        heldBytes -= bytes;
        notifyAll();
    }

    /** Bytes of callers' data copied and not yet on disk. */
    public synchronized long heldBytes() {
        return heldBytes;
    }

    @Override
    public void close() {
        io.shutdown();
    }

    /** One step being written. */
    public final class Checkpoint {
        private final long step;
        private final int rank;
        private final int worldSize;
        private final Path directory;
        private final List<CompletableFuture<Void>> writes = new ArrayList<>();
        private final Set<String> names = new HashSet<>();
        private boolean committing;

        Checkpoint(long step, int rank, int worldSize, Path directory) {
            this.step = step;
            this.rank = rank;
            this.worldSize = worldSize;
            this.directory = directory;
        }

        private Path file(String name) throws IOException {
            RankManifest.checkPath(name);
            synchronized (this) {
                if (committing) {
                    throw new IllegalStateException("step " + step + " is being committed: no more files");
                }
                if (!names.add(name)) {
                    throw new IllegalArgumentException(name + " is already part of step " + step);
                }
            }
            Path file = directory.resolve(name);
            Files.createDirectories(file.getParent());
            return file;
        }

        /**
         * Writes {@code data} (from its position to its limit) as file {@code name}. Returns once the
         * bytes are copied, waiting only while the memory budget is full; the future completes when
         * they are on the staging disk.
         */
        public CompletableFuture<Void> write(String name, ByteBuffer data) throws IOException, InterruptedException {
            Path path = file(name);
            FileChannel channel = FileChannel.open(path, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE);
            CompletableFuture<Void> tail = CompletableFuture.completedFuture(null);
            ByteBuffer source = data.duplicate();
            long offset = 0;
            do {
                int length = Math.min(chunkBytes, source.remaining());
                acquire(length);
                byte[] copy = new byte[length];
                source.get(copy);
                long at = offset;
                tail = tail.whenCompleteAsync((ignored, failure) -> {
                    try {
                        if (failure == null) {
                            writeFully(channel, ByteBuffer.wrap(copy), at);
                        }
                    } finally {
                        release(length);
                    }
                }, io);
                offset += length;
            } while (source.hasRemaining());
            return track(tail.whenCompleteAsync((ignored, failure) -> closeQuietly(channel), io));
        }

        /** Writes everything {@code in} gives as file {@code name}, read in the background one chunk at a time; closes the stream. */
        public CompletableFuture<Void> write(String name, InputStream in) throws IOException {
            Path path = file(name);
            return track(CompletableFuture.runAsync(() -> {
                try (in; FileChannel channel = FileChannel.open(path, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
                    acquire(chunkBytes);
                    try {
                        byte[] chunk = new byte[chunkBytes];
                        long offset = 0;
                        int read;
                        while ((read = in.readNBytes(chunk, 0, chunk.length)) > 0) {
                            writeFully(channel, ByteBuffer.wrap(chunk, 0, read), offset);
                            offset += read;
                        }
                    } finally {
                        release(chunkBytes);
                    }
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IllegalStateException("interrupted", e);
                }
            }, io));
        }

        private synchronized CompletableFuture<Void> track(CompletableFuture<Void> write) {
            writes.add(write);
            return write;
        }

        /**
         * Commits the step once every write is done: manifest with sizes and CRC32C, fsync, rename.
         * The future gives the committed directory; if a write or the commit failed (a full disk),
         * it fails, nothing is committed, and what was written of the step is removed.
         */
        public CompletableFuture<Path> commit() {
            CompletableFuture<?>[] pending;
            synchronized (this) {
                committing = true;
                pending = writes.toArray(CompletableFuture[]::new);
            }
            return CompletableFuture.allOf(pending).thenApplyAsync(ignored -> {
                try {
                    staging.commit(step, rank, worldSize);
                    return staging.committed(step, rank, worldSize);
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            }, io).whenCompleteAsync((committed, failure) -> {
                if (failure != null) {
                    try {
                        FileTrees.delete(directory);
                    } catch (IOException e) {
                        failure.addSuppressed(e);
                    }
                }
            }, io);
        }

        /** Drops what was written of this step (after the writes in flight end). */
        public CompletableFuture<Void> abort() {
            CompletableFuture<?>[] pending;
            synchronized (this) {
                committing = true;
                pending = writes.toArray(CompletableFuture[]::new);
            }
            return CompletableFuture.allOf(pending).handleAsync((ignored, failure) -> {
                try {
                    FileTrees.delete(directory);
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
                return null;
            }, io);
        }
    }

    private static void writeFully(FileChannel channel, ByteBuffer bytes, long offset) {
        try {
            while (bytes.hasRemaining()) {
                offset += channel.write(bytes, offset);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static void closeQuietly(FileChannel channel) {
        try {
            channel.close();
        } catch (IOException e) {
            // the data is written and checked at commit; a failed close of a written file changes nothing
        }
    }
}
