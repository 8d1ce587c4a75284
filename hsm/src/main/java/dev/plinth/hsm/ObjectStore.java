package dev.plinth.hsm;

import java.nio.ByteBuffer;
import java.util.List;

/**
 * An archive's objects: a local directory or an S3 bucket. An object is written whole or not at
 * all (a put that fails or is interrupted leaves no object under its key), in parts whose CRC32C
 * the caller computes and the store checks where it can, and read back by range.
 */
public interface ObjectStore extends AutoCloseable {

    /** Reads {@code length} bytes of the source from {@code offset} into a buffer it returns (flipped). */
    @FunctionalInterface
    interface Source {
        ByteBuffer read(long offset, int length) throws java.io.IOException;
    }

    /** What a put stored: the key, the size and the store's version token (ETag, or the file's identity). */
    record Stored(String key, long sizeBytes, String version) {}

    /** What a put stored, the part size it used, and the CRC32C of each part as it was read from the source. */
    record Put(Stored stored, int partBytes, List<Integer> partCrcs) {}

    /**
     * Stores {@code sizeBytes} of {@code source} under {@code key} in parts of {@code partBytes}
     * or more (the last shorter; an S3 store uses at least S3's 5 MiB and at most 10,000 parts),
     * reading and uploading at most {@code parallelism} parts at a time; an S3 store sends each
     * part's CRC32C for the server to check. {@code progress} is told the bytes of each part stored.
     */
    Put put(String key, Source source, long sizeBytes, int partBytes, int parallelism, java.util.function.LongConsumer progress)
            throws java.io.IOException;

    /** Reads {@code length} bytes of the object from {@code offset}; {@link ObjectMissingException} if it is gone. */
    ByteBuffer read(String key, long offset, int length) throws java.io.IOException;

    /** The object's size and version, or null when there is none. */
    Stored head(String key) throws java.io.IOException;

    /** Removes the object; nothing when there is none. */
    void delete(String key) throws java.io.IOException;

    /** For messages: {@code file:///…} or {@code s3://bucket/prefix}. */
    String describe();

    @Override
    void close();

    /** The object is not in the store (removed out of band, or never completed). */
    final class ObjectMissingException extends java.io.IOException {
        public ObjectMissingException(String message) {
            super(message);
        }
    }
}
