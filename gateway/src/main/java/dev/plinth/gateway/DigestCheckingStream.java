package dev.plinth.gateway;

import java.io.IOException;
import java.io.InputStream;

/**
 * Passes a body through while hashing it, and fails at its end if the hash is not the one the
 * client declared (x-amz-content-sha256, Content-MD5, x-amz-checksum-*). The object is committed only after the
 * whole body was read, so a mismatch leaves nothing behind.
 */
final class DigestCheckingStream extends ByteArrayReads {
    private final InputStream in;
    private final Checksums.Running checksum;
    private final String expected;
    private final boolean hex;
    private final S3Error error;
    private final String message;
    private boolean checked;

    /** {@code expected} in lower-case hex ({@code hex}) or base64. */
    DigestCheckingStream(InputStream in, Checksums.Running checksum, String expected, boolean hex, S3Error error, String message) {
        this.in = in;
        this.checksum = checksum;
        this.expected = expected;
        this.hex = hex;
        this.error = error;
        this.message = message;
    }

    @Override
    public int read(byte[] buffer, int offset, int length) throws IOException {
        int n = in.read(buffer, offset, length);
        if (n > 0) {
            checksum.update(buffer, offset, n);
        } else if (n < 0 && !checked) {
            checked = true;
            if (!(hex ? checksum.hex() : checksum.base64()).equals(expected)) {
                throw new S3Exception(error, message);
            }
        }
        return n;
    }

    @Override
    public void close() throws IOException {
        in.close();
    }
}
