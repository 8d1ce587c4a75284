package dev.plinth.gateway;

import dev.plinth.common.Credentials;
import dev.plinth.wire.messages.MgmtMessages.AccessKey;
import java.io.InputStream;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * Checks a request's AWS Signature V4, in the Authorization header or in the query string
 * (presigned URLs), and gives the credentials its key maps to and the body to read: the raw
 * body checked against its signed SHA-256, or the decoded aws-chunked body whose chunks are
 * checked one by one. Requests without a signature are anonymous, allowed only where configured.
 */
final class Authenticator {
    static final Duration CLOCK_SKEW_MAX = Duration.ofMinutes(15);
    static final long PRESIGN_EXPIRES_SECONDS_MAX = 7 * 24 * 3600;

    /** Who a request acts for, and its body as the handler must read it. */
    record Authenticated(Credentials credentials, InputStream body) {}

    private final AccessKeys keys;
    private final Credentials anonymousCredentials;
    private final dev.plinth.common.Clock clock;

    /** {@code anonymousCredentials} null: anonymous requests are refused; {@code clock}: what request times and expiries are read against. */
    Authenticator(AccessKeys keys, Credentials anonymousCredentials, dev.plinth.common.Clock clock) {
        this.keys = keys;
        this.anonymousCredentials = anonymousCredentials;
        this.clock = clock;
    }

    Authenticated authenticate(S3Exchange exchange) {
        String authorization = exchange.header("Authorization");
        if (authorization != null) {
            return fromHeader(exchange, authorization);
        }
        if (exchange.hasParameter("X-Amz-Algorithm") || exchange.hasParameter("X-Amz-Signature")) {
            return fromQuery(exchange);
        }
        if (exchange.hasParameter("AWSAccessKeyId") && exchange.hasParameter("Signature")) {
            // what boto3 and older tools presign with by default: say what to change instead of AccessDenied
            throw new S3Exception(S3Error.INVALID_REQUEST, "Signature Version 2 presigned URLs are not supported; presign with Signature "
                    + "Version 4 (boto3: Config(signature_version='s3v4'); AWS CLI and SDKs do by default)");
        }
        if (anonymousCredentials == null) {
            throw new S3Exception(S3Error.ACCESS_DENIED, "anonymous requests are not allowed here; sign requests with an access key");
        }
        return new Authenticated(anonymousCredentials, exchange.body());
    }

    private record Scope(String accessKeyId, String date, String region, String service) {
        String text() {
            return date + "/" + region + "/" + service + "/aws4_request";
        }
    }

    private static Scope parseScope(String credential, S3Error malformed) {
        String[] parts = credential.split("/");
        if (parts.length != 5 || !parts[4].equals("aws4_request") || !parts[3].equals("s3") || parts[1].length() != 8) {
            throw new S3Exception(malformed, "the credential must be KEY/YYYYMMDD/REGION/s3/aws4_request, not '" + credential + "'");
        }
        return new Scope(parts[0], parts[1], parts[2], parts[3]);
    }

    private Authenticated fromHeader(S3Exchange exchange, String authorization) {
        S3Error malformed = S3Error.AUTHORIZATION_HEADER_MALFORMED;
        if (!authorization.startsWith(SigV4.ALGORITHM + " ")) {
            throw new S3Exception(authorization.startsWith("AWS ") ? S3Error.INVALID_REQUEST : malformed,
                    "only AWS Signature Version 4 (" + SigV4.ALGORITHM + ") is supported, not Signature Version 2 (s3cmd: signature_v2 = False)");
        }
        String credential = null;
        String signedHeaders = null;
        String signature = null;
        for (String part : authorization.substring(SigV4.ALGORITHM.length() + 1).split(",")) {
            String item = part.strip();
            if (item.startsWith("Credential=")) {
                credential = item.substring("Credential=".length());
            } else if (item.startsWith("SignedHeaders=")) {
                signedHeaders = item.substring("SignedHeaders=".length());
            } else if (item.startsWith("Signature=")) {
                signature = item.substring("Signature=".length());
            }
        }
        if (credential == null || signedHeaders == null || signature == null) {
            throw new S3Exception(malformed, "the Authorization header needs Credential, SignedHeaders and Signature");
        }
        Scope scope = parseScope(credential, malformed);
        String amzDate = exchange.header("x-amz-date");
        if (amzDate == null && exchange.header("Date") != null) {
            // SigV4 takes the request time from Date when there is no x-amz-date; it is signed in the ISO 8601 basic form
            Long millis = Http.parseDate(exchange.header("Date"));
            if (millis == null) {
                throw new S3Exception(malformed, "the Date header '" + exchange.header("Date") + "' is not an HTTP date");
            }
            amzDate = Http.AMZ_DATE.format(Instant.ofEpochMilli(millis));
        }
        if (amzDate == null) {
            throw new S3Exception(S3Error.MISSING_SECURITY_HEADER, "x-amz-date or Date is required");
        }
        Instant time = Http.parseAmzDate(amzDate);
        if (time == null || !amzDate.startsWith(scope.date())) {
            throw new S3Exception(malformed, "x-amz-date '" + amzDate + "' is not a date of the credential's day");
        }
        if (Duration.between(time, clock.instant()).abs().compareTo(CLOCK_SKEW_MAX) > 0) {
            throw new S3Exception(S3Error.REQUEST_TIME_TOO_SKEWED, "the request time differs from the server's by more than 15 minutes");
        }
        String payloadHash = exchange.header("x-amz-content-sha256");
        if (payloadHash == null) {
            throw new S3Exception(S3Error.MISSING_SECURITY_HEADER, "x-amz-content-sha256 is required");
        }
        AccessKey key = key(scope.accessKeyId());
        List<String> headerNames = Arrays.asList(signedHeaders.toLowerCase(Locale.ROOT).split(";"));
        if (!headerNames.contains("host")) {
            throw new S3Exception(malformed, "the signed headers must include host");
        }
        byte[] signingKey = verify(exchange, key, scope, headerNames, null, payloadHash, amzDate, signature);
        InputStream body = switch (payloadHash) {
            case SigV4.UNSIGNED_PAYLOAD -> exchange.body();
            case SigV4.STREAMING_SIGNED, SigV4.STREAMING_SIGNED_TRAILER, SigV4.STREAMING_UNSIGNED_TRAILER ->
                    new AwsChunkedStream(exchange.body(), payloadHash, signingKey, amzDate, scope.text(), signature,
                            exchange.header("x-amz-trailer"));
            default -> {
                if (payloadHash.length() != 64 || !payloadHash.chars().allMatch(c -> Character.digit(c, 16) >= 0)) {
                    throw new S3Exception(S3Error.INVALID_ARGUMENT, "x-amz-content-sha256 must be a SHA-256 in hex or a known keyword");
                }
                yield new DigestCheckingStream(exchange.body(), Checksums.forHeader("sha256"), payloadHash.toLowerCase(Locale.ROOT), true,
                        S3Error.CONTENT_SHA256_MISMATCH, "the body does not match x-amz-content-sha256");
            }
        };
        return new Authenticated(credentials(key), body);
    }

    private Authenticated fromQuery(S3Exchange exchange) {
        S3Error malformed = S3Error.AUTHORIZATION_QUERY_MALFORMED;
        if (!SigV4.ALGORITHM.equals(exchange.parameter("X-Amz-Algorithm"))) {
            throw new S3Exception(malformed, "X-Amz-Algorithm must be " + SigV4.ALGORITHM);
        }
        String credential = exchange.parameter("X-Amz-Credential");
        String amzDate = exchange.parameter("X-Amz-Date");
        String expires = exchange.parameter("X-Amz-Expires");
        String signedHeaders = exchange.parameter("X-Amz-SignedHeaders");
        String signature = exchange.parameter("X-Amz-Signature");
        if (credential == null || amzDate == null || expires == null || signedHeaders == null || signature == null) {
            throw new S3Exception(malformed,
                    "a presigned URL needs X-Amz-Credential, X-Amz-Date, X-Amz-Expires, X-Amz-SignedHeaders and X-Amz-Signature");
        }
        Scope scope = parseScope(credential, malformed);
        Instant time = Http.parseAmzDate(amzDate);
        long expiresSeconds;
        try {
            expiresSeconds = Long.parseLong(expires);
        } catch (NumberFormatException e) {
            throw new S3Exception(malformed, "X-Amz-Expires must be a number of seconds");
        }
        if (time == null || !amzDate.startsWith(scope.date()) || expiresSeconds < 0 || expiresSeconds > PRESIGN_EXPIRES_SECONDS_MAX) {
            throw new S3Exception(malformed, "X-Amz-Date must be the credential's day and X-Amz-Expires 0..604800 seconds");
        }
        Instant now = clock.instant();
        if (!now.isBefore(time.plusSeconds(expiresSeconds))) {
            throw new S3Exception(S3Error.ACCESS_DENIED, "Request has expired"); // as S3 answers, X-Amz-Expires=0 included
        }
        if (time.isAfter(now.plus(CLOCK_SKEW_MAX))) {
            throw new S3Exception(S3Error.REQUEST_TIME_TOO_SKEWED, "the presigned URL's time is in the future");
        }
        AccessKey key = key(scope.accessKeyId());
        List<String> headerNames = new ArrayList<>(Arrays.asList(signedHeaders.toLowerCase(Locale.ROOT).split(";")));
        String payloadHash = exchange.header("x-amz-content-sha256");
        if (payloadHash == null || !headerNames.contains("x-amz-content-sha256")) {
            payloadHash = SigV4.UNSIGNED_PAYLOAD;
        }
        verify(exchange, key, scope, headerNames, "X-Amz-Signature", payloadHash, amzDate, signature);
        return new Authenticated(credentials(key), exchange.body());
    }

    /**
     * Checks a request's signature (header or query form: {@code excludedParameter} is the query
     * parameter that carries it) and returns the signing key, which streaming bodies chain from.
     */
    private byte[] verify(S3Exchange exchange, AccessKey key, Scope scope, List<String> headerNames, String excludedParameter,
                          String payloadHash, String amzDate, String signature) {
        String canonical = SigV4.canonicalRequest(exchange.method(), SigV4.uriEncode(exchange.path(), true),
                SigV4.canonicalQuery(exchange.query(), excludedParameter), headerNames, exchange::joinedHeader, payloadHash);
        byte[] signingKey = signingKey(key, scope);
        String expected = SigV4.signature(signingKey, SigV4.stringToSign(amzDate, scope.text(), canonical));
        if (!SigV4.same(expected, signature)) {
            throw new S3Exception(S3Error.SIGNATURE_DOES_NOT_MATCH,
                    "the request signature we calculated does not match the signature you provided; check your key and signing method");
        }
        return signingKey;
    }

    /** Signing keys by key, secret, day and region: four HMACs a request saved; a key's signing key changes once a day. */
    private final java.util.concurrent.ConcurrentHashMap<List<String>, byte[]> signingKeys = new java.util.concurrent.ConcurrentHashMap<>();
    private static final int SIGNING_KEYS_MAX = 4096;

    private byte[] signingKey(AccessKey key, Scope scope) {
        List<String> id = List.of(key.accessKeyId(), key.secretKey(), scope.date(), scope.region(), scope.service());
        byte[] cached = signingKeys.get(id);
        if (cached == null) {
            if (signingKeys.size() >= SIGNING_KEYS_MAX) {
                signingKeys.clear(); // bounded; refilled on demand
            }
            cached = SigV4.signingKey(key.secretKey(), scope.date(), scope.region(), scope.service());
            signingKeys.put(id, cached);
        }
        return cached;
    }

    private AccessKey key(String accessKeyId) {
        AccessKey key = keys.find(accessKeyId);
        if (key == null) {
            throw new S3Exception(S3Error.INVALID_ACCESS_KEY_ID, "the access key id '" + accessKeyId + "' does not exist in this cluster");
        }
        return key;
    }

    private static Credentials credentials(AccessKey key) {
        return new Credentials(key.uid(), key.gid(), key.groups() == null ? List.of() : key.groups());
    }
}
