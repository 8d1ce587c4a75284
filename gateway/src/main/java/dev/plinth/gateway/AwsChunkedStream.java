package dev.plinth.gateway;

import java.io.IOException;
import java.io.InputStream;
import java.io.PushbackInputStream;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Decodes an aws-chunked body (what the AWS CLI and SDKs send as STREAMING-AWS4-HMAC-SHA256-PAYLOAD
 * and its -TRAILER and unsigned forms): {@code hex-size[;chunk-signature=SIG]\r\n data \r\n}, ending
 * with a zero-size chunk and, with a trailer, checksum lines and the trailer's signature. Each
 * chunk's signature chains from the one before (the first from the request's), and is checked
 * when the chunk ends; the trailer checksum is checked against the decoded bytes. Streaming:
 * one chunk's hash state, never the chunk, is held.
 */
final class AwsChunkedStream extends ByteArrayReads {
    private static final int LINE_BYTES_MAX = 4096;
    private static final long CHUNK_BYTES_MAX = 64L << 20;

    private final PushbackInputStream in;
    private final boolean signed;
    private final boolean trailer;
    private final byte[] signingKey;
    private final String amzDate;
    private final String scope;
    private final String trailerHeader;
    private final Checksums.Running trailerChecksum;
    private String previousSignature;
    private MessageDigest chunkDigest;
    private String chunkSignature;
    private long chunkLeft = -1; // -1: a chunk header comes next
    private boolean done;
    private String verifiedTrailerChecksum;

    AwsChunkedStream(InputStream in, String mode, byte[] signingKey, String amzDate, String scope, String seedSignature, String trailerHeader) {
        this.in = new PushbackInputStream(new java.io.BufferedInputStream(in, 64 * 1024), 1);
        this.signed = !mode.equals(SigV4.STREAMING_UNSIGNED_TRAILER);
        this.trailer = mode.endsWith("-TRAILER");
        this.signingKey = signingKey;
        this.amzDate = amzDate;
        this.scope = scope;
        this.previousSignature = seedSignature;
        this.trailerHeader = trailerHeader == null ? null : trailerHeader.strip().toLowerCase(java.util.Locale.ROOT);
        this.trailerChecksum = this.trailerHeader == null ? null : Checksums.forHeader(this.trailerHeader);
        if (trailer && this.trailerHeader != null && trailerChecksum == null) {
            throw new S3Exception(S3Error.INVALID_ARGUMENT, "unknown trailing checksum " + trailerHeader);
        }
    }

    /** The checksum header the trailer carries (x-amz-trailer), or null for none. */
    String trailerHeader() {
        return trailer ? trailerHeader : null;
    }

    /**
     * The trailer's checksum once the body was read to its end and it matched (base64); null
     * before, or without one. A signed trailer's signature is checked too, after this is set: a
     * caller reads it only after reading the body to its end without an error.
     */
    String verifiedTrailerChecksum() {
        return verifiedTrailerChecksum;
    }

    @Override
    public int read(byte[] buffer, int offset, int length) throws IOException {
        if (length == 0) {
            return 0;
        }
        while (!done) {
            if (chunkLeft < 0) {
                startChunk();
                continue;
            }
            if (chunkLeft == 0) {
                endChunk();
                continue;
            }
            int n = in.read(buffer, offset, (int) Math.min(length, chunkLeft));
            if (n < 0) {
                throw new S3Exception(S3Error.INCOMPLETE_BODY, "the body ended inside a chunk");
            }
            chunkLeft -= n;
            if (chunkDigest != null) {
                chunkDigest.update(buffer, offset, n);
            }
            if (trailerChecksum != null) {
                trailerChecksum.update(buffer, offset, n);
            }
            return n;
        }
        return -1;
    }

    private void startChunk() throws IOException {
        String header = line();
        int semicolon = header.indexOf(';');
        String size = semicolon < 0 ? header : header.substring(0, semicolon);
        long chunkBytes;
        try {
            chunkBytes = Long.parseLong(size.strip(), 16);
        } catch (NumberFormatException e) {
            throw new S3Exception(S3Error.INCOMPLETE_BODY, "bad aws-chunked chunk header");
        }
        if (chunkBytes < 0 || chunkBytes > CHUNK_BYTES_MAX) {
            throw new S3Exception(S3Error.INVALID_ARGUMENT, "aws-chunked chunk of " + chunkBytes + " bytes");
        }
        if (signed) {
            String extension = semicolon < 0 ? "" : header.substring(semicolon + 1).strip();
            if (!extension.startsWith("chunk-signature=")) {
                throw new S3Exception(S3Error.SIGNATURE_DOES_NOT_MATCH, "a chunk has no chunk-signature");
            }
            chunkSignature = extension.substring("chunk-signature=".length());
            chunkDigest = SigV4.sha256();
        }
        chunkLeft = chunkBytes;
        if (chunkBytes == 0) {
            verifyChunk();
            finish();
        }
    }

    private void endChunk() throws IOException {
        if (!line().isEmpty()) {
            throw new S3Exception(S3Error.INCOMPLETE_BODY, "a chunk is longer than its header says");
        }
        verifyChunk();
        chunkLeft = -1;
    }

    private void verifyChunk() {
        if (!signed) {
            return;
        }
        String expected = SigV4.signature(signingKey, SigV4.chunkStringToSign(amzDate, scope, previousSignature, SigV4.hex(chunkDigest.digest())));
        if (!SigV4.same(expected, chunkSignature)) {
            throw new S3Exception(S3Error.SIGNATURE_DOES_NOT_MATCH, "a chunk's signature does not match");
        }
        previousSignature = expected;
    }

    private void finish() throws IOException {
        done = true;
        Map<String, String> trailers = new LinkedHashMap<>();
        String trailerSignature = null;
        StringBuilder signedTrailer = new StringBuilder();
        for (int lines = 0; lines < 16; lines++) {
            String line = lineOrEnd();
            if (line == null || line.isEmpty()) {
                break;
            }
            int colon = line.indexOf(':');
            if (colon <= 0) {
                throw new S3Exception(S3Error.INCOMPLETE_BODY, "bad trailer line");
            }
            String name = line.substring(0, colon).strip().toLowerCase(java.util.Locale.ROOT);
            String value = line.substring(colon + 1).strip();
            if (name.equals("x-amz-trailer-signature")) {
                trailerSignature = value;
            } else {
                trailers.put(name, value);
                signedTrailer.append(name).append(':').append(value).append('\n');
            }
        }
        if (!trailer) {
            return;
        }
        if (trailerHeader != null) {
            String given = trailers.get(trailerHeader);
            if (given == null) {
                throw new S3Exception(S3Error.INCOMPLETE_BODY, "the trailer " + trailerHeader + " is missing");
            }
            if (!given.equals(trailerChecksum.base64())) {
                throw new S3Exception(S3Error.BAD_DIGEST, "the " + trailerHeader + " you specified did not match the calculated checksum");
            }
            verifiedTrailerChecksum = given;
        }
        if (signed) {
            String expected = SigV4.signature(signingKey, SigV4.trailerStringToSign(amzDate, scope, previousSignature,
                    SigV4.sha256Hex(signedTrailer.toString().getBytes(StandardCharsets.UTF_8))));
            if (!SigV4.same(expected, trailerSignature)) {
                throw new S3Exception(S3Error.SIGNATURE_DOES_NOT_MATCH, "the trailer's signature does not match");
            }
        }
    }

    private String line() throws IOException {
        String line = lineOrEnd();
        if (line == null) {
            throw new S3Exception(S3Error.INCOMPLETE_BODY, "the aws-chunked body ended early");
        }
        return line;
    }

    /** One CRLF-terminated line without its CRLF, or null at the end of the body. */
    private String lineOrEnd() throws IOException {
        StringBuilder line = new StringBuilder();
        while (true) {
            int c = in.read();
            if (c < 0) {
                return line.isEmpty() ? null : line.toString();
            }
            if (c == '\r') {
                int next = in.read();
                if (next != '\n' && next >= 0) {
                    in.unread(next);
                }
                return line.toString();
            }
            if (c == '\n') {
                return line.toString();
            }
            if (line.length() >= LINE_BYTES_MAX) {
                throw new S3Exception(S3Error.INCOMPLETE_BODY, "an aws-chunked line is too long");
            }
            line.append((char) c);
        }
    }
}
