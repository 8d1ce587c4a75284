package dev.plinth.gateway;

import dev.plinth.client.PlinthFile;
import dev.plinth.common.PlinthException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.security.MessageDigest;

/** Moving bytes between request bodies, files and responses, in bounded pieces. */
final class ObjectIo {
    static final int PIECE_BYTES = 1 << 20;

    private ObjectIo() {}

    /** What a body held: its length and MD5. */
    record Written(long sizeBytes, byte[] md5) {}

    /** Writes a whole body into {@code file} from offset 0, hashing it; fails if it is not {@code expectedBytes} long (when >= 0). */
    static Written writeBody(InputStream body, PlinthFile file, long expectedBytes, long sizeBytesMax) {
        return writeBody(body, file, expectedBytes, sizeBytesMax, null);
    }

    /** As above, encrypting what it writes with {@code encryptor} (null: as it is) after hashing the plaintext. */
    static Written writeBody(InputStream body, PlinthFile file, long expectedBytes, long sizeBytesMax, dev.plinth.client.ObjectCipher encryptor) {
        return writeBody(body, file, 0, expectedBytes, sizeBytesMax, encryptor);
    }

    /**
     * As above, into the file from {@code fileOffset} on (a part written in place in its upload's
     * object); the encryptor counts from the body's first byte.
     */
    static Written writeBody(InputStream body, PlinthFile file, long fileOffset, long expectedBytes, long sizeBytesMax,
                             dev.plinth.client.ObjectCipher encryptor) {
        MessageDigest md5 = S3Namespace.md5();
        // a small object needs a small buffer: a MiB for every 4 KiB PUT was most of the gateway's allocation
        byte[] piece = new byte[expectedBytes >= 0 ? (int) Math.max(1, Math.min(PIECE_BYTES, expectedBytes + 1)) : PIECE_BYTES];
        long offset = 0;
        try {
            while (true) {
                int filled = 0;
                int n = 0;
                while (filled < piece.length && (n = body.read(piece, filled, piece.length - filled)) > 0) {
                    filled += n;
                }
                if (filled > 0) {
                    if (offset + filled > sizeBytesMax) {
                        throw new S3Exception(S3Error.ENTITY_TOO_LARGE, "the object is larger than " + sizeBytesMax + " bytes");
                    }
                    md5.update(piece, 0, filled);
                    if (encryptor != null) {
                        encryptor.apply(offset, piece, 0, filled);
                    }
                    file.write(fileOffset + offset, ByteBuffer.wrap(piece, 0, filled));
                    offset += filled;
                }
                if (n < 0 || filled == 0) {
                    break;
                }
            }
        } catch (IOException e) {
            throw new S3Exception(S3Error.INCOMPLETE_BODY, "the request body ended early: " + e.getMessage());
        } catch (PlinthException e) {
            throw S3Namespace.translate(e);
        }
        if (expectedBytes >= 0 && offset != expectedBytes) {
            throw new S3Exception(S3Error.INCOMPLETE_BODY, "the body has " + offset + " bytes, the request said " + expectedBytes);
        }
        return new Written(offset, md5.digest());
    }

    /** A whole body of {@code expectedBytes} (small: it is held in memory), read to its end so that its checks run. */
    static byte[] readBody(InputStream body, int expectedBytes) {
        try {
            byte[] bytes = body.readNBytes(expectedBytes);
            if (bytes.length < expectedBytes || body.read() >= 0) {
                throw new S3Exception(S3Error.INCOMPLETE_BODY, "the body does not have the " + expectedBytes + " bytes the request said");
            }
            return bytes;
        } catch (IOException e) {
            throw new S3Exception(S3Error.INCOMPLETE_BODY, "the request body ended early: " + e.getMessage());
        }
    }

    /** Reads into {@code target} until it is full or the file ends; returns how many bytes it read. */
    static int readFully(PlinthFile file, long offset, ByteBuffer target) {
        int total = 0;
        while (target.hasRemaining()) {
            int n = file.read(offset + total, target);
            if (n <= 0) {
                break;
            }
            total += n;
        }
        return total;
    }

    /** Appends {@code length} bytes of {@code source} from {@code sourceOffset} to {@code target} at {@code targetOffset}. */
    static void copy(PlinthFile source, long sourceOffset, long length, PlinthFile target, long targetOffset, MessageDigest md5,
                     Checksums.Running checksum) {
        copy(source, sourceOffset, length, target, targetOffset, md5, checksum, null);
    }

    /** As above, encrypting what it writes with {@code encryptor} (null: as read) after hashing and checksumming what it read. */
    static void copy(PlinthFile source, long sourceOffset, long length, PlinthFile target, long targetOffset, MessageDigest md5,
                     Checksums.Running checksum, dev.plinth.client.ObjectCipher encryptor) {
        ByteBuffer piece = ByteBuffer.allocate((int) Math.max(1, Math.min(PIECE_BYTES, length)));
        source.adviseSequential(sourceOffset, length); // read-ahead within the copied range (a part copy's is a slice)
        long done = 0;
        while (done < length) {
            piece.clear().limit((int) Math.min(PIECE_BYTES, length - done));
            int n = source.read(sourceOffset + done, piece);
            if (n <= 0) {
                throw new S3Exception(S3Error.INTERNAL_ERROR, "the source ended early (changed while it was copied)");
            }
            piece.flip();
            if (md5 != null) {
                md5.update(piece.duplicate());
            }
            if (checksum != null) {
                checksum.update(piece.duplicate());
            }
            if (encryptor != null) {
                encryptor.apply(targetOffset + done, piece);
            }
            target.write(targetOffset + done, piece);
            done += n;
        }
    }
}
