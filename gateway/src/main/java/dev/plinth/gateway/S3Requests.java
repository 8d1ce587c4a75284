package dev.plinth.gateway;

import dev.plinth.client.PlinthClient;
import dev.plinth.common.Permissions;
import dev.plinth.wire.messages.MetaMessages.Attributes;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Locale;

/** What the operations read off requests alike: an object's record from headers, lengths, checked bodies, counts. */
final class S3Requests {
    private static final List<String> STORED_HEADERS = List.of("content-encoding", "content-disposition", "content-language",
            "cache-control", "expires");

    private S3Requests() {}

    /** The storage classes S3 knows (x-amz-storage-class); Plinth stores every one alike. */
    private static final java.util.Set<String> STORAGE_CLASSES = java.util.Set.of("STANDARD", "REDUCED_REDUNDANCY", "STANDARD_IA",
            "ONEZONE_IA", "INTELLIGENT_TIERING", "GLACIER", "DEEP_ARCHIVE", "OUTPOSTS", "GLACIER_IR", "SNOW", "EXPRESS_ONEZONE");

    /** The stored record for a new object from the request's headers. */
    static ObjectRecord recordFrom(S3Exchange exchange) {
        List<ObjectRecord.Header> headers = new ArrayList<>();
        List<ObjectRecord.Header> user = new ArrayList<>();
        int userBytes = 0;
        for (var header : exchange.headers()) {
            String name = header.getKey().toLowerCase(Locale.ROOT);
            if (name.startsWith("x-amz-meta-")) {
                user.add(new ObjectRecord.Header(name.substring("x-amz-meta-".length()), header.getValue()));
                userBytes += name.length() + header.getValue().length();
            } else if (name.equals("content-encoding")) {
                // aws-chunked says how this request's body was framed, not what the object is: it is not kept
                String encoding = java.util.Arrays.stream(header.getValue().split(",")).map(String::strip)
                        .filter(token -> !token.isEmpty() && !token.equalsIgnoreCase("aws-chunked"))
                        .collect(java.util.stream.Collectors.joining(","));
                if (!encoding.isEmpty()) {
                    headers.add(new ObjectRecord.Header(name, encoding));
                }
            } else if (STORED_HEADERS.contains(name)) {
                headers.add(new ObjectRecord.Header(name, header.getValue()));
            }
        }
        if (userBytes > 2048) {
            throw new S3Exception(S3Error.METADATA_TOO_LARGE, "user metadata is limited to 2 KB (S3's limit)");
        }
        String storageClass = exchange.header("x-amz-storage-class");
        if (storageClass != null && !STORAGE_CLASSES.contains(storageClass)) {
            // every class S3 names is one tier here (HSM moves files between tiers); a name S3 does not know is an error there too
            throw new S3Exception(S3Error.INVALID_STORAGE_CLASS, "the storage class '" + storageClass + "' is not valid");
        }
        String contentType = exchange.header("Content-Type");
        return new ObjectRecord(ObjectRecord.FORMAT_VERSION, null, 0, 0, contentType == null ? "binary/octet-stream" : contentType, headers, user);
    }

    static long contentLength(S3Exchange exchange) {
        String decoded = exchange.header("x-amz-decoded-content-length");
        String length = decoded != null ? decoded : exchange.header("Content-Length");
        if (length == null) {
            return -1;
        }
        try {
            return Long.parseLong(length.strip());
        } catch (NumberFormatException e) {
            throw new S3Exception(S3Error.INVALID_ARGUMENT, "bad content length '" + length + "'");
        }
    }

    /** The body as the handler should read it: with Content-MD5 and a flexible checksum checked at its end. */
    static CheckedBody checkedBody(S3Exchange exchange, InputStream body) {
        return CheckedBody.of(exchange, body, null);
    }

    static String encode(String value, boolean urlEncode) {
        return urlEncode ? SigV4.uriEncode(value, true) : value;
    }

    /** What a continuation token carries before the name it resumes after, so that a token we never gave is refused. */
    private static final String TOKEN_TAG = "plinth-after:";

    /** A continuation token that resumes a listing after {@code name}. */
    static String continuationToken(String name) {
        return Base64.getUrlEncoder().withoutPadding().encodeToString((TOKEN_TAG + name).getBytes(StandardCharsets.UTF_8));
    }

    /** The name a continuation token resumes after; InvalidArgument for anything this gateway did not hand out. */
    static String resumeAfter(String token) {
        try {
            String decoded = StandardCharsets.UTF_8.newDecoder().decode(ByteBuffer.wrap(Base64.getUrlDecoder().decode(token))).toString();
            if (decoded.startsWith(TOKEN_TAG)) {
                return decoded.substring(TOKEN_TAG.length());
            }
        } catch (IllegalArgumentException | CharacterCodingException e) {
            // refused below
        }
        throw new S3Exception(S3Error.INVALID_ARGUMENT, "the continuation token provided is incorrect");
    }

    static String orEmpty(String value) {
        return value == null ? "" : value;
    }

    /** A max-keys style parameter: absent means 1000, larger values mean 1000, negatives and non-numbers are refused. */
    static int boundedCount(String value, String name) {
        if (value == null) {
            return 1000;
        }
        try {
            int count = Integer.parseInt(value.strip());
            if (count < 0) {
                throw new NumberFormatException();
            }
            return Math.min(1000, count);
        } catch (NumberFormatException e) {
            throw new S3Exception(S3Error.INVALID_ARGUMENT, name + " must be a number from 0 to 1000");
        }
    }

    /** An object's headers go only to callers who may read it, as its bytes do; a directory key is a prefix anyone who reached it may see. */
    static void requireReadable(PlinthClient client, Attributes attributes) {
        if (!attributes.isDirectory() && !Permissions.allowed(client.caller(), attributes.mode(), attributes.uid(), attributes.gid(), false,
                Permissions.READ)) {
            throw new S3Exception(S3Error.ACCESS_DENIED, "permission denied");
        }
    }
}
