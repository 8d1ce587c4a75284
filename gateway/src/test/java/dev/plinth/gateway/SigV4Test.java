package dev.plinth.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Signature V4 against the worked examples in AWS's S3 API reference (sig-v4 header, query and streaming pages). */
class SigV4Test {
    private static final String SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
    private static final String DATE = "20130524T000000Z";
    private static final String SCOPE = "20130524/us-east-1/s3/aws4_request";
    private static final byte[] SIGNING_KEY = SigV4.signingKey(SECRET, "20130524", "us-east-1", "s3");

    @Test
    void getObjectWithRangeInTheAuthorizationHeader() {
        Map<String, String> headers = Map.of("host", "examplebucket.s3.amazonaws.com", "range", "bytes=0-9",
                "x-amz-content-sha256", SigV4.EMPTY_SHA256, "x-amz-date", DATE);
        String canonical = SigV4.canonicalRequest("GET", "/test.txt", "", List.of("host", "range", "x-amz-content-sha256", "x-amz-date"),
                headers::get, SigV4.EMPTY_SHA256);
        String stringToSign = SigV4.stringToSign(DATE, SCOPE, canonical);
        assertThat(stringToSign).endsWith("7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972");
        assertThat(SigV4.signature(SIGNING_KEY, stringToSign)).isEqualTo("f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
    }

    @Test
    void presignedGetInTheQueryString() {
        List<Map.Entry<String, String>> query = List.of(Map.entry("X-Amz-Algorithm", "AWS4-HMAC-SHA256"),
                Map.entry("X-Amz-Credential", "AKIAIOSFODNN7EXAMPLE/" + SCOPE), Map.entry("X-Amz-Date", DATE),
                Map.entry("X-Amz-Expires", "86400"), Map.entry("X-Amz-SignedHeaders", "host"), Map.entry("X-Amz-Signature", "ignored"));
        String canonicalQuery = SigV4.canonicalQuery(query, "X-Amz-Signature");
        assertThat(canonicalQuery).isEqualTo("X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1"
                + "%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host");
        String canonical = SigV4.canonicalRequest("GET", "/test.txt", canonicalQuery, List.of("host"),
                name -> "examplebucket.s3.amazonaws.com", SigV4.UNSIGNED_PAYLOAD);
        assertThat(SigV4.signature(SIGNING_KEY, SigV4.stringToSign(DATE, SCOPE, canonical)))
                .isEqualTo("aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404");
    }

    private static final String SEED = "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9";

    @Test
    void streamingPayloadSeedSignature() {
        Map<String, String> headers = Map.of("content-encoding", "aws-chunked", "content-length", "66824", "host", "s3.amazonaws.com",
                "x-amz-content-sha256", SigV4.STREAMING_SIGNED, "x-amz-date", DATE, "x-amz-decoded-content-length", "66560",
                "x-amz-storage-class", "REDUCED_REDUNDANCY");
        List<String> signed = List.of("content-encoding", "content-length", "host", "x-amz-content-sha256", "x-amz-date",
                "x-amz-decoded-content-length", "x-amz-storage-class");
        String canonical = SigV4.canonicalRequest("PUT", "/examplebucket/chunkObject.txt", "", signed, headers::get, SigV4.STREAMING_SIGNED);
        assertThat(SigV4.signature(SIGNING_KEY, SigV4.stringToSign(DATE, SCOPE, canonical))).isEqualTo(SEED);
    }

    /** AWS's example body: 64 KiB and 1 KiB of 'a', then the final chunk, each signed in a chain from the seed. */
    private static byte[] exampleChunkedBody() {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.writeBytes(("10000;chunk-signature=ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648\r\n").getBytes(StandardCharsets.US_ASCII));
        out.writeBytes("a".repeat(65536).getBytes(StandardCharsets.US_ASCII));
        out.writeBytes(("\r\n400;chunk-signature=0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497\r\n").getBytes(StandardCharsets.US_ASCII));
        out.writeBytes("a".repeat(1024).getBytes(StandardCharsets.US_ASCII));
        out.writeBytes(("\r\n0;chunk-signature=b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
        return out.toByteArray();
    }

    private static InputStream decoder(byte[] body) {
        return new AwsChunkedStream(new ByteArrayInputStream(body), SigV4.STREAMING_SIGNED, SIGNING_KEY, DATE, SCOPE, SEED, null);
    }

    @Test
    void streamingPayloadChunksVerifyInAChain() throws IOException {
        byte[] body = exampleChunkedBody();
        assertThat(body).hasSize(66824);
        assertThat(decoder(body).readAllBytes()).isEqualTo("a".repeat(66560).getBytes(StandardCharsets.US_ASCII));
    }

    @Test
    void aChangedByteOrSignatureIsRefused() {
        byte[] flipped = exampleChunkedBody();
        flipped[100] = 'b';
        assertThatThrownBy(() -> decoder(flipped).readAllBytes()).isInstanceOf(S3Exception.class)
                .satisfies(e -> assertThat(((S3Exception) e).error()).isEqualTo(S3Error.SIGNATURE_DOES_NOT_MATCH));
        byte[] truncated = java.util.Arrays.copyOf(exampleChunkedBody(), 70_000 - 4000);
        assertThatThrownBy(() -> decoder(truncated).readAllBytes()).isInstanceOf(S3Exception.class)
                .satisfies(e -> assertThat(((S3Exception) e).error()).isEqualTo(S3Error.INCOMPLETE_BODY));
        byte[] hugeChunk = "fffffffff;chunk-signature=00\r\n".getBytes(StandardCharsets.US_ASCII);
        assertThatThrownBy(() -> decoder(hugeChunk).readAllBytes()).isInstanceOf(S3Exception.class);
    }

    @Test
    void uriEncodingFollowsAwsRules() {
        assertThat(SigV4.uriEncode("/a b/ü+x~y*", true)).isEqualTo("/a%20b/%C3%BC%2Bx~y%2A");
        assertThat(SigV4.uriEncode("a/b=c", false)).isEqualTo("a%2Fb%3Dc");
        assertThat(SigV4.canonicalHeaderValue("  a   b  c ")).isEqualTo("a b c");
        assertThat(SigV4.canonicalHeaderValue("\tAWS4-HMAC-SHA256 Credential=x ")).isEqualTo("AWS4-HMAC-SHA256 Credential=x");
        assertThat(SigV4.canonicalHeaderValue("a\t  b")).as("only spaces collapse").isEqualTo("a\t b");
    }

    @Test
    void bucketNamesFollowS3Rules() {
        assertThat(S3Namespace.validBucketName("my-bucket.1")).isTrue();
        assertThat(S3Namespace.validBucketName("192.168.1.2")).as("shaped like an IP address").isFalse();
        assertThat(S3Namespace.validBucketName("a..b")).isFalse();
        assertThat(S3Namespace.validBucketName("ab")).as("too short").isFalse();
    }
}
