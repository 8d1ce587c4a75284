package dev.plinth.gateway;

import static java.util.Objects.requireNonNull;

import io.netty.handler.codec.http.QueryStringDecoder;
import java.net.URI;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

/**
 * Signs an S3 request with Signature V4 in its headers, for Plinth's own S3 clients (the
 * {@code s3 bench} load generator). The payload is signed as given: a SHA-256 in hex, or
 * {@code UNSIGNED-PAYLOAD}. Thread-safe (stateless).
 */
public final class S3RequestSigner {
    public static final String UNSIGNED_PAYLOAD = SigV4.UNSIGNED_PAYLOAD;

    private final String accessKeyId;
    private final String secretKey;
    private final String region;

    public S3RequestSigner(String accessKeyId, String secretKey, String region) {
        this.accessKeyId = requireNonNull(accessKeyId, "accessKeyId is null");
        this.secretKey = requireNonNull(secretKey, "secretKey is null");
        this.region = requireNonNull(region, "region is null");
    }

    /**
     * The headers to add to a request to {@code uri} (host, x-amz-date, x-amz-content-sha256,
     * Authorization); {@code headers} are signed too and must be sent as given.
     */
    public Map<String, String> sign(String method, URI uri, Map<String, String> headers, String payloadHash, Instant time) {
        String amzDate = Http.AMZ_DATE.format(time);
        String day = amzDate.substring(0, 8);
        Map<String, String> signed = new TreeMap<>();
        for (Map.Entry<String, String> header : headers.entrySet()) {
            signed.put(header.getKey().toLowerCase(Locale.ROOT), header.getValue());
        }
        signed.put("host", uri.getPort() < 0 ? uri.getHost() : uri.getHost() + ":" + uri.getPort());
        signed.put("x-amz-date", amzDate);
        signed.put("x-amz-content-sha256", payloadHash);
        List<Map.Entry<String, String>> query = new ArrayList<>();
        if (uri.getRawQuery() != null) {
            new QueryStringDecoder(uri.getRawQuery(), false).parameters().forEach((name, values) -> values.forEach(value -> query.add(Map.entry(name, value))));
        }
        String path = uri.getRawPath() == null || uri.getRawPath().isEmpty() ? "/" : QueryStringDecoder.decodeComponent(uri.getRawPath().replace("+", "%2B"));
        List<String> names = new ArrayList<>(signed.keySet());
        String canonical = SigV4.canonicalRequest(method, SigV4.uriEncode(path, true), SigV4.canonicalQuery(query, null), names, signed::get, payloadHash);
        String scope = day + "/" + region + "/s3/aws4_request";
        String signature = SigV4.signature(SigV4.signingKey(secretKey, day, region, "s3"), SigV4.stringToSign(amzDate, scope, canonical));
        Map<String, String> added = new LinkedHashMap<>();
        added.put("x-amz-date", amzDate);
        added.put("x-amz-content-sha256", payloadHash);
        added.put("Authorization", SigV4.ALGORITHM + " Credential=" + accessKeyId + "/" + scope + ", SignedHeaders=" + String.join(";", names)
                + ", Signature=" + signature);
        return added;
    }
}
