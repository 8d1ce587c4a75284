package dev.plinth.gateway;

import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.security.MessageDigest;
import java.util.Base64;
import java.util.HexFormat;

/**
 * Passes a body through while hashing it, and fails at its end if the hash is not the one the
 * client declared (x-amz-content-sha256, Content-MD5). The object is committed only after the
 * whole body was read, so a mismatch leaves nothing behind.
 */
final class DigestCheckingStream extends FilterInputStream {
    private final MessageDigest digest;
    private final String expected;
    private final boolean hex;
    private final S3Error error;
    private final String message;
    private boolean checked;

    /** {@code expected} in lower-case hex ({@code hex}) or base64. */
    DigestCheckingStream(InputStream in, MessageDigest digest, String expected, boolean hex, S3Error error, String message) {
        super(in);
        this.digest = digest;
        this.expected = expected;
        this.hex = hex;
        this.error = error;
        this.message = message;
    }

    @Override
    public int read() throws IOException {
        byte[] one = new byte[1];
        int n = read(one, 0, 1);
        return n < 0 ? -1 : one[0] & 0xff;
    }

    @Override
    public int read(byte[] buffer, int offset, int length) throws IOException {
        int n = in.read(buffer, offset, length);
        if (n > 0) {
            digest.update(buffer, offset, n);
        } else if (n < 0 && !checked) {
            checked = true;
            byte[] actual = digest.digest();
            String given = hex ? HexFormat.of().formatHex(actual) : Base64.getEncoder().encodeToString(actual);
            if (!given.equals(expected)) {
                throw new S3Exception(error, message);
            }
        }
        return n;
    }
}
