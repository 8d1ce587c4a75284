package dev.plinth.hsm;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.LongConsumer;

/**
 * An archive in a local directory (the embedded default): an object is a file under the
 * directory, named by its key. A put writes a temporary file beside it, forces it to disk and
 * renames it into place, so a crash leaves either the whole object or none (a crash's
 * temporaries are removed when a mover next opens the archive, once ten minutes old).
 */
public final class DirectoryObjectStore implements ObjectStore {
    private static final String TEMPORARY_SUFFIX = ".plinth-partial";
    private final Path root;

    /** A temporary not written for this long belongs to a put that died (a live put writes a part at least every few seconds). */
    private static final long STALE_TEMPORARY_MILLIS = 10 * 60_000;

    public DirectoryObjectStore(Path root) throws IOException {
        this.root = Files.createDirectories(root).toRealPath();
        removeTemporaries(STALE_TEMPORARY_MILLIS);
    }

    private Path pathOf(String key) {
        Path path = root.resolve(key).normalize();
        if (!path.startsWith(root) || path.equals(root) || key.endsWith(TEMPORARY_SUFFIX)) {
            throw new IllegalArgumentException("object key outside the archive: " + key);
        }
        return path;
    }

    @Override
    public Put put(String key, Source source, long sizeBytes, int partBytes, int parallelism, LongConsumer progress) throws IOException {
        Path target = pathOf(key);
        Files.createDirectories(target.getParent());
        Path temporary = target.resolveSibling(target.getFileName() + TEMPORARY_SUFFIX);
        List<Integer> partCrcs;
        try (FileChannel out = FileChannel.open(temporary, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                StandardOpenOption.TRUNCATE_EXISTING); ExecutorService parts = Executors.newFixedThreadPool(Math.max(1, parallelism),
                Thread.ofVirtual().name("archive-put-", 0).factory())) {
            int count = Parts.count(sizeBytes, partBytes);
            int[] crcs = new int[count];
            List<Future<Void>> pending = new ArrayList<>();
            java.util.concurrent.Semaphore window = new java.util.concurrent.Semaphore(Math.max(1, parallelism));
            for (int part = 0; part < count; part++) {
                long offset = (long) part * partBytes;
                int length = (int) Math.min(partBytes, sizeBytes - offset);
                int index = part;
                window.acquireUninterruptibly();
                pending.add(parts.submit(() -> {
                    try {
                        ByteBuffer bytes = source.read(offset, length);
                        crcs[index] = Parts.crc32c(bytes);
                        for (long at = offset; bytes.hasRemaining(); ) {
                            at += out.write(bytes, at);
                        }
                        progress.accept(length);
                        return null;
                    } finally {
                        window.release();
                    }
                }));
            }
            Parts.awaitAll(pending);
            out.force(true);
            partCrcs = java.util.Arrays.stream(crcs).boxed().toList();
        } catch (IOException | RuntimeException e) {
            Files.deleteIfExists(temporary);
            throw e;
        }
        try {
            Files.move(temporary, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } catch (AtomicMoveNotSupportedException e) {
            throw new IOException("the archive directory cannot rename atomically: " + root, e);
        }
        try (FileChannel directory = FileChannel.open(target.getParent(), StandardOpenOption.READ)) {
            directory.force(true);
        }
        return new Put(head(key), partBytes, partCrcs);
    }

    @Override
    public ByteBuffer read(String key, long offset, int length) throws IOException {
        try (FileChannel in = FileChannel.open(pathOf(key), StandardOpenOption.READ)) {
            ByteBuffer bytes = ByteBuffer.allocate(length);
            while (bytes.hasRemaining()) {
                if (in.read(bytes, offset + bytes.position()) < 0) {
                    break;
                }
            }
            return bytes.flip();
        } catch (NoSuchFileException e) {
            throw new ObjectMissingException("no object " + key + " in " + describe());
        }
    }

    @Override
    public Stored head(String key) throws IOException {
        try {
            BasicFileAttributes attributes = Files.readAttributes(pathOf(key), BasicFileAttributes.class);
            // a put replaces the file: its identity (inode) and mtime change, so together they version it
            return new Stored(key, attributes.size(), attributes.fileKey() + "@" + attributes.lastModifiedTime().toMillis());
        } catch (NoSuchFileException e) {
            return null;
        }
    }

    @Override
    public void delete(String key) throws IOException {
        Path path = pathOf(key);
        Files.deleteIfExists(path);
        // and the directories the key made, once empty (another put may be filling one: then it is not empty, or is made again)
        for (Path parent = path.getParent(); parent != null && !parent.equals(root); parent = parent.getParent()) {
            try {
                Files.delete(parent);
            } catch (java.nio.file.DirectoryNotEmptyException | NoSuchFileException e) {
                break;
            }
        }
    }

    /** Removes temporaries that puts interrupted by a crash left, untouched for {@code olderThanMillis}; returns how many. */
    public int removeTemporaries(long olderThanMillis) throws IOException {
        long before = System.currentTimeMillis() - olderThanMillis;
        List<Path> found;
        try (var walk = Files.walk(root)) {
            found = walk.filter(p -> p.getFileName().toString().endsWith(TEMPORARY_SUFFIX)).toList();
        }
        int removed = 0;
        for (Path path : found) {
            try {
                if (Files.getLastModifiedTime(path).toMillis() < before && Files.deleteIfExists(path)) {
                    removed++;
                }
            } catch (NoSuchFileException e) {
                // its put finished or cleaned up meanwhile
            }
        }
        return removed;
    }

    @Override
    public String describe() {
        return root.toUri().toString();
    }

    @Override
    public void close() {}
}
