package dev.plinth.integration.s3;

import static org.assertj.core.api.Assertions.assertThat;

import dev.plinth.gateway.S3Credentials;
import dev.plinth.gateway.SigV4;
import dev.plinth.gateway.Http;
import dev.plinth.gateway.S3Gateway;
import dev.plinth.client.PlinthClient;
import dev.plinth.integration.MiniCluster;
import java.io.IOException;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * Bad input over raw HTTP: malformed XML, missing and wrong headers, oversize headers, bad
 * ranges, unknown parameters, keys that would leave their bucket, bodies that end early or do
 * not match their digests. Each gets an S3 XML error with the right code and status, nothing
 * half-written becomes visible, and the gateway keeps serving (checked after every test).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class S3BadInputTest {
    @TempDir
    static Path directory;

    private MiniCluster cluster;
    private PlinthClient plinth;
    private S3Client s3;
    private String endpoint;
    private S3Credentials.KeyPair key;

    @BeforeAll
    void start() {
        cluster = MiniCluster.start(directory.resolve("data"));
        plinth = cluster.client();
        endpoint = S3Testing.endpoint(cluster);
        key = S3Testing.ownerKey(cluster);
        s3 = S3Testing.sdk(endpoint, key);
        s3.createBucket(b -> b.bucket("bad"));
        s3.putObject(b -> b.bucket("bad").key("object"), RequestBody.fromBytes(new byte[1000]));
    }

    @AfterEach
    void stillServing() {
        assertThat(s3.headObject(b -> b.bucket("bad").key("object")).contentLength()).isEqualTo(1000);
        // nothing half-written is left in the bucket
        assertThat(plinth.list("/bad")).extracting(e -> e.name()).containsExactly("object");
    }

    @AfterAll
    void stop() throws Exception {
        S3Testing.closeAll(s3, plinth, cluster);
    }

    private S3Testing.Response signed(String method, String pathAndQuery, Map<String, String> headers, byte[] body) throws IOException {
        Map<String, String> all = new java.util.HashMap<>(headers);
        all.putIfAbsent("content-length", String.valueOf(body == null ? 0 : body.length));
        return S3Testing.raw(endpoint, S3Testing.signedHead(endpoint, key, method, pathAndQuery, all, SigV4.UNSIGNED_PAYLOAD), body);
    }

    private static void assertError(S3Testing.Response response, int status, String code) {
        assertThat(response.status()).as("status; body %s", response.text()).isEqualTo(status);
        assertThat(response.errorCode()).as("error code; body %s", response.text()).isEqualTo(code);
        assertThat(response.headers().get("content-type")).isEqualTo("application/xml");
        assertThat(response.text()).startsWith("<?xml").contains("<RequestId>");
    }

    @Test
    void malformedXmlBodies() throws IOException {
        assertError(signed("POST", "/bad?delete", Map.of(), "<Delete><Object><Key>x".getBytes(StandardCharsets.UTF_8)), 400, "MalformedXML");
        assertError(signed("POST", "/bad?delete", Map.of(), "not xml at all".getBytes(StandardCharsets.UTF_8)), 400, "MalformedXML");
        assertError(signed("POST", "/bad?delete", Map.of(), "<Other/>".getBytes(StandardCharsets.UTF_8)), 400, "MalformedXML");
        // an external entity is refused, never read
        String entity = "<?xml version=\"1.0\"?><!DOCTYPE d [<!ENTITY x SYSTEM \"file:///etc/passwd\">]><Delete><Object><Key>&x;</Key></Object></Delete>";
        assertError(signed("POST", "/bad?delete", Map.of(), entity.getBytes(StandardCharsets.UTF_8)), 400, "MalformedXML");
        byte[] huge = new byte[3 << 20];
        java.util.Arrays.fill(huge, (byte) ' ');
        assertError(signed("POST", "/bad?delete", Map.of(), huge), 400, "MalformedXML");
        String uploadId = s3.createMultipartUpload(b -> b.bucket("bad").key("mp")).uploadId();
        assertError(signed("POST", "/bad/mp?uploadId=" + uploadId, Map.of(), "<CompleteMultipartUpload><Part>".getBytes(StandardCharsets.UTF_8)),
                400, "MalformedXML");
        assertError(signed("POST", "/bad/mp?uploadId=" + uploadId, Map.of(),
                "<CompleteMultipartUpload><Part><PartNumber>x</PartNumber></Part></CompleteMultipartUpload>".getBytes(StandardCharsets.UTF_8)),
                400, "MalformedXML");
        assertError(signed("POST", "/bad/mp?uploadId=not-an-upload", Map.of(), "<CompleteMultipartUpload/>".getBytes(StandardCharsets.UTF_8)),
                404, "NoSuchUpload");
        s3.abortMultipartUpload(b -> b.bucket("bad").key("mp").uploadId(uploadId));
    }

    @Test
    void missingAndWrongAuthenticationHeaders() throws IOException {
        String host = "Host: " + URI.create(endpoint).getAuthority();
        assertError(S3Testing.raw(endpoint, "GET /bad/object HTTP/1.1\r\n" + host, null), 403, "AccessDenied");
        assertError(S3Testing.raw(endpoint, "GET /bad/object HTTP/1.1\r\n" + host + "\r\nAuthorization: AWS4-HMAC-SHA256 garbage", null),
                400, "AuthorizationHeaderMalformed");
        assertError(S3Testing.raw(endpoint, "GET /bad/object HTTP/1.1\r\n" + host + "\r\nAuthorization: AWS AKID:c2lnbmF0dXJl", null),
                400, "InvalidRequest");
        String good = S3Testing.signedHead(endpoint, key, "GET", "/bad/object", Map.of(), SigV4.UNSIGNED_PAYLOAD);
        assertThat(S3Testing.raw(endpoint, good, null).status()).isEqualTo(200);
        assertError(S3Testing.raw(endpoint, withoutHeader(good, "x-amz-date"), null), 400, "MissingSecurityHeader");
        assertError(S3Testing.raw(endpoint, withoutHeader(good, "x-amz-content-sha256"), null), 400, "MissingSecurityHeader");
        assertError(S3Testing.raw(endpoint, good.replace("GET /bad/object", "GET /bad/other"), null), 403, "SignatureDoesNotMatch");
        String stale = S3Testing.signedHead(endpoint, key, "GET", "/bad/object", Map.of(), SigV4.UNSIGNED_PAYLOAD,
                Instant.now().minus(Duration.ofMinutes(20)));
        assertError(S3Testing.raw(endpoint, stale, null), 403, "RequestTimeTooSkewed");
        assertError(S3Testing.raw(endpoint, "GET /bad/object?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=x HTTP/1.1\r\n" + host, null),
                400, "AuthorizationQueryParametersError");
        assertError(S3Testing.raw(endpoint, "GET /bad/object?AWSAccessKeyId=x&Signature=y&Expires=1 HTTP/1.1\r\n" + host, null),
                400, "InvalidRequest");
        assertError(S3Testing.raw(endpoint, S3Testing.signedHead(endpoint, key, "GET", "/bad/object", Map.of(), "not-a-hash"), null),
                400, "InvalidArgument");
    }

    private static String withoutHeader(String head, String name) {
        return String.join("\r\n", head.lines().filter(line -> !line.toLowerCase(java.util.Locale.ROOT).startsWith(name + ":")).toList());
    }

    @Test
    void oversizeHeadersAndNonHttp() throws IOException {
        String host = "Host: " + URI.create(endpoint).getAuthority();
        assertError(S3Testing.raw(endpoint, "GET /bad/object HTTP/1.1\r\n" + host + "\r\nx-filler: " + "f".repeat(40_000), null),
                400, "RequestHeaderSectionTooLarge");
        assertError(S3Testing.raw(endpoint, "GET /" + "p".repeat(20_000) + " HTTP/1.1\r\n" + host, null), 400, "RequestHeaderSectionTooLarge");
        S3Testing.Response garbage = S3Testing.raw(endpoint, "\u0001\u0002 this is not HTTP", null);
        assertThat(garbage.status()).isIn(-1, 400);
        assertError(signed("PATCH", "/bad/object", Map.of(), null), 405, "MethodNotAllowed");
        assertError(signed("PUT", "/Bad_Name", Map.of(), null), 400, "InvalidBucketName");
        assertError(signed("GET", "/no-such-bucket/key", Map.of(), null), 404, "NoSuchBucket");
    }

    @Test
    void rangesAndParameters() throws IOException {
        assertError(signed("GET", "/bad/object", Map.of("range", "bytes=1000-"), null), 416, "InvalidRange");
        S3Testing.Response ignored = signed("GET", "/bad/object", Map.of("range", "bytes=oops"), null);
        assertThat(ignored.status()).isEqualTo(200);
        assertThat(ignored.body()).hasSize(1000);
        S3Testing.Response partial = signed("GET", "/bad/object", Map.of("range", "bytes=-10"), null);
        assertThat(partial.status()).isEqualTo(206);
        assertThat(partial.headers().get("content-range")).isEqualTo("bytes 990-999/1000");
        assertError(signed("GET", "/bad/object?retention", Map.of(), null), 501, "NotImplemented");
        assertError(signed("PUT", "/bad?policy", Map.of(), "{}".getBytes(StandardCharsets.UTF_8)), 501, "NotImplemented");
        assertThat(signed("GET", "/bad/object?unknown-parameter=1", Map.of(), null).status()).isEqualTo(200);
        assertError(signed("GET", "/bad?list-type=2&max-keys=lots", Map.of(), null), 400, "InvalidArgument");
        assertError(signed("GET", "/bad?list-type=2&continuation-token=%25%25%25", Map.of(), null), 400, "InvalidArgument");
        assertError(signed("PUT", "/bad/mp?partNumber=0&uploadId=x", Map.of(), new byte[1]), 404, "NoSuchUpload");
        String uploadId = s3.createMultipartUpload(b -> b.bucket("bad").key("mp")).uploadId();
        assertError(signed("GET", "/bad/mp?uploadId=" + uploadId + "&max-parts=lots", Map.of(), null), 400, "InvalidArgument");
        assertError(signed("GET", "/bad/mp?uploadId=" + uploadId + "&part-number-marker=-4", Map.of(), null), 400, "InvalidArgument");
        assertError(signed("GET", "/bad?uploads&max-uploads=x", Map.of(), null), 400, "InvalidArgument");
        s3.abortMultipartUpload(b -> b.bucket("bad").key("mp").uploadId(uploadId));
    }

    @Test
    void keysAndParametersThatAreNotUtf8AreRefused() throws IOException {
        // replaced with U+FFFD, %FF and %FE named one object
        assertError(signed("PUT", "/bad/%FF", Map.of(), "x".getBytes(StandardCharsets.UTF_8)), 400, "InvalidArgument");
        assertError(signed("GET", "/bad/%FE", Map.of(), null), 400, "InvalidArgument");
        assertError(signed("GET", "/bad/a%C3", Map.of(), null), 400, "InvalidArgument"); // a sequence cut short
        assertError(signed("GET", "/bad?list-type=2&prefix=%FF", Map.of(), null), 400, "InvalidArgument");
        assertError(signed("GET", "/bad/x%4", Map.of(), null), 400, "InvalidArgument");
        assertThat(plinth.list("/bad")).extracting(e -> e.name()).doesNotContain("\uFFFD");
        // valid multi-byte keys still work, percent-encoded or not
        assertThat(signed("PUT", "/bad/%C3%A9t%C3%A9", Map.of(), "e".getBytes(StandardCharsets.UTF_8)).status()).isEqualTo(200);
        assertThat(plinth.exists("/bad/\u00e9t\u00e9")).isTrue();
        plinth.delete("/bad/\u00e9t\u00e9");
    }

    @Test
    void subResourcesThatAreNotImplementedNeverRunAnotherOperation() throws IOException {
        // PUT ?versioning was a CreateBucket: it made missing buckets and answered 409 on existing ones
        assertError(signed("PUT", "/bad?versioning", Map.of(), "<VersioningConfiguration/>".getBytes(StandardCharsets.UTF_8)), 501,
                "NotImplemented");
        assertError(signed("PUT", "/not-made?versioning", Map.of(), "<VersioningConfiguration/>".getBytes(StandardCharsets.UTF_8)), 501,
                "NotImplemented");
        assertThat(plinth.exists("/not-made")).isFalse();
        for (String request : new String[] {"PUT /bad?lifecycle", "DELETE /bad?cors", "PUT /bad/object?retention", "DELETE /bad?website",
                "GET /bad/object?legal-hold", "POST /bad/object?restore", "POST /bad/object?select&select-type=2", "PUT /bad?encryption",
                "GET /?session"}) {
            String[] parts = request.split(" ");
            assertError(signed(parts[0], parts[1], Map.of(), parts[0].equals("GET") ? null : new byte[0]), 501, "NotImplemented");
        }
        assertThat(signed("GET", "/bad/object", Map.of(), null).body()).hasSize(1000); // the object is untouched
        assertThat(signed("GET", "/bad/object?versionId=null", Map.of(), null).status()).isEqualTo(200);
        assertError(signed("GET", "/bad/object?versionId=3HL4kqtJlcpXroDTDmJ", Map.of(), null), 400, "InvalidArgument");
        assertError(signed("DELETE", "/bad/object?versionId=3HL4kqtJlcpXroDTDmJ", Map.of(), null), 400, "InvalidArgument");
        assertThat(signed("GET", "/bad/object", Map.of(), null).status()).isEqualTo(200);
        assertError(signed("PATCH", "/bad/object", Map.of(), null), 405, "MethodNotAllowed");
    }

    @Test
    void encryptionThatCannotBeHonouredIsRefusedNotIgnored() throws IOException {
        String key = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=";
        record Case(Map<String, String> headers, int status, String code) {}
        for (Case refused : List.of(
                new Case(Map.of("x-amz-server-side-encryption", "aws:kms"), 501, "NotImplemented"),
                new Case(Map.of("x-amz-server-side-encryption", "AES256", "x-amz-server-side-encryption-aws-kms-key-id", "k"), 501,
                        "NotImplemented"),
                new Case(Map.of("x-amz-server-side-encryption", "AES128"), 400, "InvalidArgument"),
                // SSE-C keys travel with the request: not over plain HTTP (this gateway has no TLS and is not told otherwise)
                new Case(Map.of("x-amz-server-side-encryption-customer-algorithm", "AES256", "x-amz-server-side-encryption-customer-key", key,
                        "x-amz-server-side-encryption-customer-key-md5", "anything"), 400, "InvalidRequest"))) {
            assertError(signed("PUT", "/bad/encrypted", refused.headers(), "secret".getBytes(StandardCharsets.UTF_8)), refused.status(),
                    refused.code());
        }
        assertThat(plinth.exists("/bad/encrypted")).as("nothing stored in plaintext").isFalse();
    }

    @Test
    void presignedExpiryAndOtherSigningForms() throws IOException {
        String now = Http.AMZ_DATE.format(java.time.Instant.now());
        String presigned = "/bad/object?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=" + key.accessKeyId() + "%2F" + now.substring(0, 8)
                + "%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=" + now + "&X-Amz-SignedHeaders=host&X-Amz-Signature=00&X-Amz-Expires=";
        String host = "HTTP/1.1\r\nHost: " + java.net.URI.create(endpoint).getAuthority();
        S3Testing.Response expired = S3Testing.raw(endpoint, "GET " + presigned + "0 " + host, null);
        assertError(expired, 403, "AccessDenied");
        assertThat(expired.text()).contains("Request has expired");
        assertError(S3Testing.raw(endpoint, "GET " + presigned + "-1 " + host, null), 400, "AuthorizationQueryParametersError");
        assertError(S3Testing.raw(endpoint, "GET " + presigned + "604801 " + host, null), 400, "AuthorizationQueryParametersError");
        // the request time in Date instead of x-amz-date, as SigV4 allows
        S3Testing.Response dated = signed("GET", "/bad/object", Map.of("date", Http.date(System.currentTimeMillis())), null);
        assertThat(dated.status()).as(dated.text()).isEqualTo(200);
        // a user-metadata value in Latin-1 is signed as the bytes sent, and kept as them
        S3Testing.Response latin1 = signed("PUT", "/bad/latin1", Map.of("x-amz-meta-name", "caf\u00e9"), "x".getBytes(StandardCharsets.UTF_8));
        assertThat(latin1.status()).as(latin1.text()).isEqualTo(200);
        assertThat(signed("HEAD", "/bad/latin1", Map.of(), null).headers().get("x-amz-meta-name")).isEqualTo("caf\u00e9");
        plinth.delete("/bad/latin1");
    }

    @Test
    void keysThatWouldLeaveTheirBucket() throws IOException {
        for (String path : new String[] {"/bad/../escape", "/bad/a/../../escape", "/bad/%2e%2e/escape", "/bad//absolute", "/bad/a//b",
                "/bad/nul%00byte", "/bad/./dot", "/bad/.plinth-s3-uploads/x"}) {
            assertError(signed("PUT", path, Map.of(), "x".getBytes(StandardCharsets.UTF_8)), 400, "InvalidArgument");
        }
        assertError(signed("PUT", "/bad/" + "k".repeat(1100), Map.of(), new byte[1]), 400, "KeyTooLongError");
        assertError(signed("PUT", "/bad/" + "k".repeat(300), Map.of(), new byte[1]), 400, "KeyTooLongError");
        assertThat(plinth.exists("/escape")).isFalse();
        assertThat(plinth.list("/")).extracting(e -> e.name()).filteredOn(name -> !name.startsWith(".plinth-s3-")).containsExactly("bad");
    }

    @Test
    void bodiesThatDoNotMatchTheirDigestsOrLengths() throws IOException {
        byte[] body = "the body".getBytes(StandardCharsets.UTF_8);
        assertError(signed("PUT", "/bad/digest", Map.of("content-md5", "1B2M2Y8AsgTpgAmY7PhCfg=="), body), 400, "BadDigest");
        assertError(signed("PUT", "/bad/digest", Map.of("content-md5", "not base64!"), body), 400, "InvalidDigest");
        assertError(S3Testing.raw(endpoint, S3Testing.signedHead(endpoint, key, "PUT", "/bad/digest", Map.of("content-length", "8"),
                SigV4.EMPTY_SHA256), body), 400, "XAmzContentSHA256Mismatch");
        assertError(signed("PUT", "/bad/digest", Map.of("x-amz-checksum-crc32", "AAAAAA=="), body), 400, "BadDigest");
        // aws-chunked with a broken chunk signature
        String chunked = "8;chunk-signature=" + "0".repeat(64) + "\r\nthe body\r\n0;chunk-signature=" + "0".repeat(64) + "\r\n\r\n";
        assertError(S3Testing.raw(endpoint, S3Testing.signedHead(endpoint, key, "PUT", "/bad/digest", Map.of("content-length",
                String.valueOf(chunked.length()), "x-amz-decoded-content-length", "8", "content-encoding", "aws-chunked"),
                SigV4.STREAMING_SIGNED), chunked.getBytes(StandardCharsets.UTF_8)), 403, "SignatureDoesNotMatch");
        assertError(signed("PUT", "/bad/digest", Map.of("transfer-encoding", "identity", "content-length", "-1"), null), 400, "InvalidRequest");
        assertThat(plinth.exists("/bad/digest")).isFalse();
    }

    /** A client that promises 100,000 bytes and hangs up after 5,000: no object, no leftovers, and the next request is served. */
    @Test
    void truncatedUploadLeavesNothing() throws Exception {
        long inodes = plinth.statFs().inodes();
        URI uri = URI.create(endpoint);
        String head = S3Testing.signedHead(endpoint, key, "PUT", "/bad/truncated", Map.of("content-length", "100000"), SigV4.UNSIGNED_PAYLOAD);
        try (Socket socket = new Socket(uri.getHost(), uri.getPort())) {
            OutputStream out = socket.getOutputStream();
            out.write((head + "\r\n\r\n").getBytes(StandardCharsets.UTF_8));
            out.write(new byte[5000]);
            out.flush();
        }
        // the unnamed file the upload went into goes away when the gateway gives up on the body
        awaitInodes(inodes);
        assertThat(plinth.exists("/bad/truncated")).isFalse();
        // the same with a chunked body that stops
        String chunkedHead = S3Testing.signedHead(endpoint, key, "PUT", "/bad/truncated", Map.of("content-length", "100000",
                "x-amz-decoded-content-length", "99000", "content-encoding", "aws-chunked"), SigV4.STREAMING_UNSIGNED_TRAILER);
        S3Testing.Response response;
        try (Socket socket = new Socket(uri.getHost(), uri.getPort())) {
            socket.setSoTimeout(30_000);
            OutputStream out = socket.getOutputStream();
            out.write((chunkedHead + "\r\nConnection: close\r\n\r\n10000\r\n").getBytes(StandardCharsets.UTF_8));
            out.write(new byte[3000]);
            out.flush();
            socket.shutdownOutput();
            response = new S3Testing.Response(readStatus(socket), Map.of(), new byte[0]);
        }
        assertThat(response.status()).isIn(-1, 400);
        assertThat(plinth.exists("/bad/truncated")).isFalse();
        awaitInodes(inodes);
    }

    /**
     * A client that expects 100-continue sends its body only after the gateway's 100, which comes
     * when the request's handler reads: an upload refused first (a signature that does not match) is
     * answered without a 100 and with Connection: close, so its body is never sent; an accepted one
     * gets its 100, then its 200.
     */
    @Test
    void expectContinueHasTheBodySentOnlyWhenItIsWanted() throws IOException {
        URI uri = URI.create(endpoint);
        byte[] content = new byte[50_000];
        new java.util.Random(7).nextBytes(content);
        Map<String, String> headers = Map.of("content-length", String.valueOf(content.length), "expect", "100-continue");
        String refusedHead = S3Testing.signedHead(endpoint, new S3Credentials.KeyPair(key.accessKeyId(), "not-the-secret"), "PUT",
                "/bad/refused", headers, SigV4.UNSIGNED_PAYLOAD);
        try (Socket socket = new Socket(uri.getHost(), uri.getPort())) {
            socket.setSoTimeout(30_000);
            socket.getOutputStream().write((refusedHead + "\r\n\r\n").getBytes(StandardCharsets.UTF_8));
            S3Testing.Response refused = S3Testing.readOne(new java.io.BufferedInputStream(socket.getInputStream()));
            assertThat(refused.status()).isEqualTo(403);
            assertThat(refused.errorCode()).isEqualTo("SignatureDoesNotMatch");
            // the body never came, so the connection cannot carry another request: the answer says so, or
            // the client's next request on it would be read as this one's body
            assertThat(refused.headers()).containsEntry("connection", "close");
        }
        String acceptedHead = S3Testing.signedHead(endpoint, key, "PUT", "/bad/continued", headers, SigV4.UNSIGNED_PAYLOAD);
        try (Socket socket = new Socket(uri.getHost(), uri.getPort())) {
            socket.setSoTimeout(30_000);
            java.io.InputStream in = new java.io.BufferedInputStream(socket.getInputStream());
            OutputStream out = socket.getOutputStream();
            out.write((acceptedHead + "\r\n\r\n").getBytes(StandardCharsets.UTF_8));
            assertThat(S3Testing.readOne(in).status()).isEqualTo(100);
            out.write(content);
            assertThat(S3Testing.readOne(in).status()).isEqualTo(200);
        }
        assertThat(s3.getObjectAsBytes(b -> b.bucket("bad").key("continued")).asByteArray()).isEqualTo(content);
        s3.deleteObject(b -> b.bucket("bad").key("continued"));
        assertThat(plinth.exists("/bad/refused")).isFalse();
    }

    /** Beyond s3.requests-inflight-max requests at once the answer is SlowDown, and the gateway serves again once they end. */
    @Test
    void requestsBeyondTheInflightLimitAreToldToSlowDown() throws Exception {
        dev.plinth.common.Config config = MiniCluster.testConfig().with("s3.requests-inflight-max", "1");
        try (S3Gateway gateway = S3Gateway.start(plinth, config, new dev.plinth.wire.HostPort("127.0.0.1", 0))) {
            String url = "http://" + gateway.address();
            String head = S3Testing.signedHead(url, key, "PUT", "/bad/slow", Map.of("content-length", "100000"), SigV4.UNSIGNED_PAYLOAD);
            try (Socket slow = new Socket("127.0.0.1", gateway.address().port())) {
                slow.getOutputStream().write((head + "\r\n\r\n").getBytes(StandardCharsets.UTF_8));
                slow.getOutputStream().write(new byte[10]);
                slow.getOutputStream().flush();
                Thread.sleep(300); // the slow upload holds the one slot
                S3Testing.Response refused = S3Testing.raw(url, S3Testing.signedHead(url, key, "GET", "/bad/object", Map.of(),
                        SigV4.UNSIGNED_PAYLOAD), null);
                assertThat(refused.status()).isEqualTo(503);
                assertThat(refused.errorCode()).isEqualTo("SlowDown");
            }
            long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
            int status = 0;
            while (System.nanoTime() < deadline && status != 200) {
                status = S3Testing.raw(url, S3Testing.signedHead(url, key, "GET", "/bad/object", Map.of(), SigV4.UNSIGNED_PAYLOAD), null).status();
                Thread.sleep(50);
            }
            assertThat(status).as("served again once the slow upload ended").isEqualTo(200);
        }
        assertThat(plinth.exists("/bad/slow")).isFalse();
    }

    /** Waits until the file system holds {@code expected} inodes and keeps holding them for a second. */
    private void awaitInodes(long expected) throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
        long stableSince = System.nanoTime();
        while (System.nanoTime() < deadline) {
            if (plinth.statFs().inodes() != expected) {
                stableSince = System.nanoTime();
            } else if (System.nanoTime() - stableSince > Duration.ofSeconds(1).toNanos()) {
                return;
            }
            Thread.sleep(50);
        }
        assertThat(plinth.statFs().inodes()).as("inodes after the truncated upload").isEqualTo(expected);
    }

    private static int readStatus(Socket socket) throws IOException {
        byte[] all = socket.getInputStream().readAllBytes();
        String text = new String(all, StandardCharsets.ISO_8859_1);
        return text.startsWith("HTTP/1.1 ") ? Integer.parseInt(text.substring(9, 12)) : -1;
    }
}
