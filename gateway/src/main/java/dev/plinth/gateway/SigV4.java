package dev.plinth.gateway;

import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * The arithmetic of AWS Signature Version 4: canonical requests, strings to sign, signing keys,
 * and the chained signatures of streaming (aws-chunked) payloads. Pure functions, checked
 * against the examples in AWS's documentation ({@code SigV4Test}); public for clients that sign
 * requests by hand (tests of bad input, load generators).
 */
public final class SigV4 {
    public static final String ALGORITHM = "AWS4-HMAC-SHA256";
    public static final String UNSIGNED_PAYLOAD = "UNSIGNED-PAYLOAD";
    public static final String STREAMING_SIGNED = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD";
    public static final String STREAMING_SIGNED_TRAILER = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER";
    public static final String STREAMING_UNSIGNED_TRAILER = "STREAMING-UNSIGNED-PAYLOAD-TRAILER";
    public static final String EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
    private static final HexFormat HEX = HexFormat.of();

    private SigV4() {}

    /** AWS's UriEncode: every byte but A-Z a-z 0-9 - . _ ~ as %XY (and '/' too unless it is a path). */
    public static String uriEncode(String value, boolean keepSlash) {
        byte[] bytes = value.getBytes(StandardCharsets.UTF_8);
        StringBuilder out = new StringBuilder(bytes.length + 16);
        for (byte b : bytes) {
            char c = (char) (b & 0xff);
            if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' || c == '~'
                    || (c == '/' && keepSlash)) {
                out.append(c);
            } else {
                out.append('%').append(Character.toUpperCase(Character.forDigit((c >> 4) & 0xf, 16)))
                        .append(Character.toUpperCase(Character.forDigit(c & 0xf, 16)));
            }
        }
        return out.toString();
    }

    /** The canonical query string of decoded parameters, sorted by encoded name then value, without {@code excluded}. */
    public static String canonicalQuery(List<Map.Entry<String, String>> parameters, String excluded) {
        List<String[]> encoded = new ArrayList<>();
        for (Map.Entry<String, String> parameter : parameters) {
            if (!parameter.getKey().equals(excluded)) {
                encoded.add(new String[] {uriEncode(parameter.getKey(), false), uriEncode(parameter.getValue(), false)});
            }
        }
        encoded.sort((a, b) -> a[0].equals(b[0]) ? a[1].compareTo(b[1]) : a[0].compareTo(b[0]));
        StringBuilder out = new StringBuilder();
        for (String[] pair : encoded) {
            if (!out.isEmpty()) {
                out.append('&');
            }
            out.append(pair[0]).append('=').append(pair[1]);
        }
        return out.toString();
    }

    private static final java.util.regex.Pattern SPACES = java.util.regex.Pattern.compile(" {2,}");

    /**
     * A header value as it is signed: trimmed, inner runs of spaces collapsed to one. Every signed
     * header of every request passes here, and few values hold two spaces in a row, so those skip the
     * regular expression (String.replaceAll compiled one per call).
     */
    public static String canonicalHeaderValue(String value) {
        String stripped = value.strip();
        return stripped.contains("  ") ? SPACES.matcher(stripped).replaceAll(" ") : stripped;
    }

    /**
     * The canonical request. {@code headerValue} gives the (already joined, for repeated headers)
     * value of each lower-case signed header name.
     */
    public static String canonicalRequest(String method, String canonicalUri, String canonicalQuery, List<String> signedHeaders,
                                   java.util.function.Function<String, String> headerValue, String payloadHash) {
        StringBuilder out = new StringBuilder(256);
        out.append(method).append('\n').append(canonicalUri).append('\n').append(canonicalQuery).append('\n');
        for (String name : signedHeaders) {
            String value = headerValue.apply(name);
            out.append(name).append(':').append(value == null ? "" : canonicalHeaderValue(value)).append('\n');
        }
        out.append('\n').append(String.join(";", signedHeaders)).append('\n').append(payloadHash);
        return out.toString();
    }

    /**
     * The string to sign. The canonical request is hashed as ISO-8859-1: all of it is ASCII (the
     * URI and query are percent-encoded) but header values, which HTTP carries as bytes and Netty
     * gives as one char per byte; so a user-metadata value in Latin-1 is hashed as the bytes the
     * client signed, not as their UTF-8 re-encoding.
     */
    public static String stringToSign(String amzDate, String scope, String canonicalRequest) {
        return ALGORITHM + "\n" + amzDate + "\n" + scope + "\n" + sha256Hex(canonicalRequest.getBytes(StandardCharsets.ISO_8859_1));
    }

    /** The string a chunk of a STREAMING-AWS4-HMAC-SHA256-PAYLOAD body signs. */
    public static String chunkStringToSign(String amzDate, String scope, String previousSignature, String chunkSha256Hex) {
        return ALGORITHM + "-PAYLOAD\n" + amzDate + "\n" + scope + "\n" + previousSignature + "\n" + EMPTY_SHA256 + "\n" + chunkSha256Hex;
    }

    /** The string the trailer of a STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER body signs. */
    public static String trailerStringToSign(String amzDate, String scope, String previousSignature, String trailerSha256Hex) {
        return ALGORITHM + "-TRAILER\n" + amzDate + "\n" + scope + "\n" + previousSignature + "\n" + trailerSha256Hex;
    }

    public static byte[] signingKey(String secretKey, String date, String region, String service) {
        byte[] key = hmac(("AWS4" + secretKey).getBytes(StandardCharsets.UTF_8), date);
        key = hmac(key, region);
        key = hmac(key, service);
        return hmac(key, "aws4_request");
    }

    public static String signature(byte[] signingKey, String stringToSign) {
        return HEX.formatHex(hmac(signingKey, stringToSign));
    }

    public static byte[] hmac(byte[] key, String data) {
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(key, "HmacSHA256"));
            return mac.doFinal(data.getBytes(StandardCharsets.UTF_8));
        } catch (GeneralSecurityException e) {
            throw new AssertionError("HmacSHA256 is part of every JDK", e);
        }
    }

    public static MessageDigest sha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (GeneralSecurityException e) {
            throw new AssertionError("SHA-256 is part of every JDK", e);
        }
    }

    public static String sha256Hex(byte[] data) {
        return HEX.formatHex(sha256().digest(data));
    }

    public static String hex(byte[] bytes) {
        return HEX.formatHex(bytes);
    }

    /** Compares two signatures in time that does not depend on where they differ. */
    public static boolean same(String expected, String given) {
        return given != null && MessageDigest.isEqual(expected.getBytes(StandardCharsets.US_ASCII), given.getBytes(StandardCharsets.US_ASCII));
    }
}
