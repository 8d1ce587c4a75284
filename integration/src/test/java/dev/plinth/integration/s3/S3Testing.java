package dev.plinth.integration.s3;

import dev.plinth.gateway.S3Credentials;
import dev.plinth.gateway.SigV4;
import dev.plinth.gateway.Http;
import dev.plinth.integration.MiniCluster;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.S3Configuration;

/** What the gateway tests share: the gateway's key of a mini cluster, an SDK client, and raw HTTP requests for bad input. */
public final class S3Testing {
    private S3Testing() {}

    public static S3Credentials.KeyPair ownerKey(MiniCluster cluster) {
        return S3Credentials.read(cluster.server().s3CredentialsFile());
    }

    /** Closes, in this order, what a test class opened; nulls (a setup that failed early) are skipped. */
    static void closeAll(AutoCloseable... resources) throws Exception {
        for (AutoCloseable resource : resources) {
            if (resource != null) {
                resource.close();
            }
        }
    }

    /** S3's key order, as AWS documents it: the keys' UTF-8 bytes, unsigned (written here apart from the gateway's own). */
    static int keyOrder(String a, String b) {
        return java.util.Arrays.compareUnsigned(a.getBytes(StandardCharsets.UTF_8), b.getBytes(StandardCharsets.UTF_8));
    }

    public static String endpoint(MiniCluster cluster) {
        return cluster.server().s3Url();
    }

    public static S3Client sdk(String endpoint, S3Credentials.KeyPair key) {
        return S3Client.builder().endpointOverride(URI.create(endpoint)).region(Region.US_EAST_1)
                .credentialsProvider(StaticCredentialsProvider.create(AwsBasicCredentials.create(key.accessKeyId(), key.secretKey())))
                .serviceConfiguration(S3Configuration.builder().pathStyleAccessEnabled(true).build())
                .build();
    }

    /** An HTTP response as it came off the wire. */
    record Response(int status, Map<String, String> headers, byte[] body) {
        String text() {
            return new String(body, StandardCharsets.UTF_8);
        }

        /** The S3 error code in an XML error body, or null. */
        String errorCode() {
            String text = text();
            int start = text.indexOf("<Code>");
            return start < 0 ? null : text.substring(start + 6, text.indexOf("</Code>", start));
        }
    }

    /**
     * Sends {@code head} (request line and headers, CRLF-separated, without the blank line) and
     * {@code body} over a fresh connection, and reads one response (or what came before the
     * connection closed: status -1 if nothing did).
     */
    static Response raw(String endpoint, String head, byte[] body) throws IOException {
        URI uri = URI.create(endpoint);
        try (Socket socket = new Socket(uri.getHost(), uri.getPort())) {
            socket.setSoTimeout(30_000);
            OutputStream out = socket.getOutputStream();
            // the server closes after its answer, so the response is read to the end of the stream
            String withClose = head.toLowerCase(Locale.ROOT).contains("\r\nconnection:") ? head : head + "\r\nConnection: close";
            out.write((withClose + "\r\n\r\n").getBytes(StandardCharsets.ISO_8859_1)); // header bytes as HTTP carries them
            if (body != null) {
                out.write(body);
            }
            out.flush();
            return readResponse(socket.getInputStream());
        }
    }

    private static Response readResponse(InputStream in) throws IOException {
        ByteArrayOutputStream all = new ByteArrayOutputStream();
        in.transferTo(all);
        byte[] bytes = all.toByteArray();
        String text = new String(bytes, StandardCharsets.ISO_8859_1);
        int end = text.indexOf("\r\n\r\n");
        if (end < 0) {
            return new Response(-1, Map.of(), bytes);
        }
        Response head = parseHead(text.substring(0, end));
        byte[] body = java.util.Arrays.copyOfRange(bytes, end + 4, bytes.length);
        if ("chunked".equalsIgnoreCase(head.headers().get("transfer-encoding"))) {
            body = dechunk(body);
        }
        return new Response(head.status(), head.headers(), body);
    }

    /**
     * Reads one response from a connection that stays open: its head, then as many bytes of body as
     * its Content-Length says (so not the answer to a HEAD, nor a chunked one).
     */
    static Response readOne(InputStream in) throws IOException {
        ByteArrayOutputStream head = new ByteArrayOutputStream();
        String end = "\r\n\r\n";
        for (int matched = 0; matched < end.length(); ) {
            int next = in.read();
            if (next < 0) {
                throw new java.io.EOFException("the connection closed within a response's head: " + head);
            }
            head.write(next);
            matched = next == end.charAt(matched) ? matched + 1 : next == '\r' ? 1 : 0;
        }
        Response parsed = parseHead(head.toString(StandardCharsets.ISO_8859_1).strip());
        int length = Integer.parseInt(parsed.headers().getOrDefault("content-length", "0"));
        byte[] body = in.readNBytes(length);
        if (body.length < length) {
            throw new java.io.EOFException("the connection closed after " + body.length + " of " + length + " body bytes");
        }
        return new Response(parsed.status(), parsed.headers(), body);
    }

    /** The status and headers of a response head (without its blank line); no body. */
    private static Response parseHead(String head) {
        String[] lines = head.split("\r\n");
        Map<String, String> headers = new LinkedHashMap<>();
        for (int i = 1; i < lines.length; i++) {
            int colon = lines[i].indexOf(':');
            headers.put(lines[i].substring(0, colon).strip().toLowerCase(Locale.ROOT), lines[i].substring(colon + 1).strip());
        }
        return new Response(Integer.parseInt(lines[0].split(" ")[1]), headers, new byte[0]);
    }

    private static byte[] dechunk(byte[] body) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        int at = 0;
        while (at < body.length) {
            int lineEnd = indexOf(body, at);
            int size = Integer.parseInt(new String(body, at, lineEnd - at, StandardCharsets.US_ASCII).split(";")[0].strip(), 16);
            if (size == 0) {
                break;
            }
            out.write(body, lineEnd + 2, size);
            at = lineEnd + 2 + size + 2;
        }
        return out.toByteArray();
    }

    private static int indexOf(byte[] bytes, int from) {
        for (int i = from; i + 1 < bytes.length; i++) {
            if (bytes[i] == '\r' && bytes[i + 1] == '\n') {
                return i;
            }
        }
        return bytes.length;
    }

    /**
     * A request head signed with SigV4 in the Authorization header, with an UNSIGNED-PAYLOAD body
     * (or {@code payloadHash} as given), so a bad-input test gets past authentication to the part
     * it means to test. {@code pathAndQuery} is sent as given (already encoded).
     */
    static String signedHead(String endpoint, S3Credentials.KeyPair key, String method, String pathAndQuery, Map<String, String> extraHeaders,
                             String payloadHash) {
        return signedHead(endpoint, key, method, pathAndQuery, extraHeaders, payloadHash, Instant.now());
    }

    static String signedHead(String endpoint, S3Credentials.KeyPair key, String method, String pathAndQuery, Map<String, String> extraHeaders,
                             String payloadHash, Instant time) {
        URI uri = URI.create(endpoint);
        String host = uri.getHost() + ":" + uri.getPort();
        String amzDate = Http.AMZ_DATE.format(time);
        String day = amzDate.substring(0, 8);
        Map<String, String> headers = new java.util.TreeMap<>();
        headers.put("host", host);
        boolean dateHeader = extraHeaders.keySet().stream().anyMatch(name -> name.equalsIgnoreCase("date"));
        if (dateHeader) {
            // SigV4 without x-amz-date: the time comes from Date, signed in the ISO 8601 basic form
            amzDate = Http.AMZ_DATE.format(Instant.ofEpochMilli(Http.parseDate(extraHeaders.entrySet().stream()
                    .filter(e -> e.getKey().equalsIgnoreCase("date")).findFirst().orElseThrow().getValue())));
            day = amzDate.substring(0, 8);
        } else {
            headers.put("x-amz-date", amzDate);
        }
        headers.put("x-amz-content-sha256", payloadHash);
        for (Map.Entry<String, String> extra : extraHeaders.entrySet()) {
            headers.put(extra.getKey().toLowerCase(Locale.ROOT), extra.getValue());
        }
        int question = pathAndQuery.indexOf('?');
        String rawPath = question < 0 ? pathAndQuery : pathAndQuery.substring(0, question);
        List<Map.Entry<String, String>> query = new ArrayList<>();
        if (question >= 0) {
            for (String pair : pathAndQuery.substring(question + 1).split("&")) {
                if (!pair.isEmpty()) {
                    int equals = pair.indexOf('=');
                    query.add(Map.entry(decode(equals < 0 ? pair : pair.substring(0, equals)), equals < 0 ? "" : decode(pair.substring(equals + 1))));
                }
            }
        }
        List<String> names = new ArrayList<>(headers.keySet());
        String canonical = SigV4.canonicalRequest(method, SigV4.uriEncode(decode(rawPath), true), SigV4.canonicalQuery(query, null), names,
                headers::get, payloadHash);
        String scope = day + "/us-east-1/s3/aws4_request";
        String signature = SigV4.signature(SigV4.signingKey(key.secretKey(), day, "us-east-1", "s3"), SigV4.stringToSign(amzDate, scope, canonical));
        StringBuilder head = new StringBuilder(method + " " + pathAndQuery + " HTTP/1.1");
        for (Map.Entry<String, String> header : headers.entrySet()) {
            head.append("\r\n").append(header.getKey()).append(": ").append(header.getValue());
        }
        head.append("\r\nAuthorization: AWS4-HMAC-SHA256 Credential=").append(key.accessKeyId()).append('/').append(scope)
                .append(", SignedHeaders=").append(String.join(";", names)).append(", Signature=").append(signature);
        return head.toString();
    }

    /** Decoded for the signature; a value that does not decode (a bad-input test's) is signed as sent, since the gateway refuses it first. */
    private static String decode(String value) {
        try {
            return io.netty.handler.codec.http.QueryStringDecoder.decodeComponent(value.replace("+", "%2B"));
        } catch (IllegalArgumentException e) {
            return value;
        }
    }
}
