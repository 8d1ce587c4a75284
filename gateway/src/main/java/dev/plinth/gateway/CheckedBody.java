package dev.plinth.gateway;

import java.io.IOException;
import java.io.InputStream;
import java.util.Base64;

/**
 * A request body read through the checks its headers ask for (Content-MD5 and one flexible
 * checksum), and the flexible checksum of what was read. The checksum's algorithm is the one the request names: in an x-amz-checksum-*
 * header (checked at the end of the body), in its aws-chunked trailer (checked by
 * {@link AwsChunkedStream}), or only in x-amz-sdk-checksum-algorithm or by the upload a part
 * belongs to (then computed here). A mismatch fails the read at the body's end, before anything is
 * committed, so nothing is left behind.
 */
final class CheckedBody extends ByteArrayReads {
    private final InputStream in;
    private final Checksums.Algorithm algorithm;
    private final Checksums.Running running;
    private final String declared;
    private final AwsChunkedStream trailerSource;
    private String value;

    private CheckedBody(InputStream in, Checksums.Algorithm algorithm, Checksums.Running running, String declared,
                        AwsChunkedStream trailerSource) {
        this.in = in;
        this.algorithm = algorithm;
        this.running = running;
        this.declared = declared;
        this.trailerSource = trailerSource;
    }

    /**
     * The body of {@code exchange} with its checks. {@code required}: the algorithm the body's
     * checksum must have (a part of an upload made with one), or null; a body that names another
     * is refused, one that names none gets it computed.
     */
    static CheckedBody of(S3Exchange exchange, InputStream body, Checksums.Algorithm required) {
        AwsChunkedStream chunked = body instanceof AwsChunkedStream stream && stream.trailerHeader() != null ? stream : null;
        String contentMd5 = exchange.header("Content-MD5");
        if (contentMd5 != null) {
            if (!validBase64(contentMd5.strip(), 16)) {
                throw new S3Exception(S3Error.INVALID_DIGEST, "Content-MD5 is not a base64 MD5");
            }
            body = new DigestCheckingStream(body, Checksums.forHeader("md5"), contentMd5.strip(), false, S3Error.BAD_DIGEST,
                    "the Content-MD5 you specified did not match what we received");
        }
        Checksums.Algorithm inHeader = null;
        for (Checksums.Algorithm candidate : Checksums.Algorithm.values()) {
            if (exchange.header(candidate.header()) != null) {
                if (inHeader != null) {
                    throw new S3Exception(S3Error.INVALID_REQUEST, "Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed.");
                }
                inHeader = candidate;
            }
        }
        Checksums.Algorithm inTrailer = chunked == null ? null : Checksums.Algorithm.named(chunked.trailerHeader());
        String sdkName = exchange.header("x-amz-sdk-checksum-algorithm");
        Checksums.Algorithm named = Checksums.Algorithm.named(sdkName);
        if (sdkName != null && named == null) {
            throw new S3Exception(S3Error.INVALID_REQUEST, "Value for x-amz-sdk-checksum-algorithm header is invalid.");
        }
        Checksums.Algorithm algorithm = inHeader != null ? inHeader : inTrailer != null ? inTrailer : named != null ? named : required;
        if (required != null && algorithm != required) {
            throw new S3Exception(S3Error.INVALID_REQUEST, "Checksum Type mismatch occurred, expected checksum Type: "
                    + required.name().toLowerCase(java.util.Locale.ROOT) + ", actual checksum Type: " + algorithm.name().toLowerCase(java.util.Locale.ROOT));
        }
        if (algorithm == null) {
            return new CheckedBody(body, null, null, null, null);
        }
        if (inHeader != null) {
            String declared = exchange.header(inHeader.header()).strip();
            int bytes = inHeader.running().value().length;
            if (!validBase64(declared, bytes)) {
                throw new S3Exception(S3Error.INVALID_REQUEST, "Value for " + inHeader.header() + " header is invalid.");
            }
            return new CheckedBody(body, algorithm, algorithm.running(), declared, null);
        }
        if (inTrailer != null) {
            return new CheckedBody(body, algorithm, null, null, chunked);
        }
        return new CheckedBody(body, algorithm, algorithm.running(), null, null);
    }

    private static boolean validBase64(String value, int bytes) {
        try {
            return Base64.getDecoder().decode(value).length == bytes;
        } catch (IllegalArgumentException e) {
            return false;
        }
    }

    @Override
    public int read(byte[] buffer, int offset, int length) throws IOException {
        int n = in.read(buffer, offset, length);
        if (n > 0 && running != null) {
            running.update(buffer, offset, n);
        } else if (n < 0 && value == null && algorithm != null) {
            finish();
        }
        return n;
    }

    private void finish() {
        if (trailerSource != null) {
            value = trailerSource.verifiedTrailerChecksum();
            if (value == null) {
                throw new S3Exception(S3Error.INCOMPLETE_BODY, "the body ended without its trailing checksum");
            }
            return;
        }
        String computed = running.base64();
        if (declared != null && !declared.equals(computed)) {
            throw new S3Exception(S3Error.BAD_DIGEST, "The " + algorithm.header() + " you specified did not match the calculated checksum.");
        }
        value = computed;
    }

    /** The algorithm of the body's checksum, or null if the request names none. */
    Checksums.Algorithm algorithm() {
        return algorithm;
    }

    /** The body's checksum (base64) once it was read to its end; null if the request names no algorithm. */
    String checksum() {
        if (algorithm != null && value == null) {
            throw new IllegalStateException("the body was not read to its end");
        }
        return value;
    }

    /** The body's checksum as an object's record keeps it (a whole object's), or null. */
    ObjectRecord.Checksum objectChecksum() {
        return algorithm == null ? null : new ObjectRecord.Checksum(algorithm.name(), Checksums.Algorithm.FULL_OBJECT, checksum());
    }

    @Override
    public void close() throws IOException {
        in.close();
    }
}
