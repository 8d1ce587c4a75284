package dev.plinth.gateway;

import dev.plinth.client.ObjectCipher;
import dev.plinth.client.ObjectEncryption;
import dev.plinth.client.PlinthClient;
import dev.plinth.common.PlinthException;
import io.netty.handler.codec.http.DefaultHttpHeaders;
import java.security.MessageDigest;
import java.util.Base64;
import java.util.Locale;

/**
 * What a request says about server-side encryption, as S3 defines it: SSE-S3
 * ({@code x-amz-server-side-encryption: AES256}), SSE-C (the three
 * {@code x-amz-server-side-encryption-customer-*} headers, or the
 * {@code x-amz-copy-source-server-side-encryption-customer-*} ones for a copy's source), or
 * nothing. SSE-KMS is refused (NotImplemented): there is no key service to ask. SSE-C keys travel
 * in the request, so they are refused over plain HTTP unless the gateway is told to allow it
 * ({@code s3.sse-c-over-http}), as S3 refuses them outside TLS. How the bytes are encrypted is
 * {@link ObjectEncryption}.
 */
record ServerSideEncryption(String mode, byte[] customerKey, String customerKeyMd5) {
    private static final String CUSTOMER = "x-amz-server-side-encryption-customer-";
    private static final String COPY_SOURCE_CUSTOMER = "x-amz-copy-source-server-side-encryption-customer-";

    /** Where a request may come from: whether it came over TLS, and whether SSE-C is allowed without it. */
    record Channel(boolean secure, boolean customerKeysOverHttp) {}

    /** What a write (PUT, CreateMultipartUpload, a copy's target) asks for; null for no encryption. */
    static ServerSideEncryption forWrite(S3Exchange exchange, Channel channel) {
        String asked = exchange.header("x-amz-server-side-encryption");
        ServerSideEncryption customer = customerKey(exchange, CUSTOMER, channel);
        if (exchange.header("x-amz-server-side-encryption-aws-kms-key-id") != null
                || exchange.header("x-amz-server-side-encryption-context") != null
                || (asked != null && asked.strip().toLowerCase(Locale.ROOT).startsWith("aws:kms"))) {
            throw new S3Exception(S3Error.NOT_IMPLEMENTED, "SSE-KMS is not supported (there is no key management service): "
                    + "use x-amz-server-side-encryption: AES256 (SSE-S3) or a key of your own (SSE-C)");
        }
        if (asked == null) {
            return customer;
        }
        if (!asked.strip().equals(ObjectEncryption.SSE_S3)) {
            throw new S3Exception(S3Error.INVALID_ARGUMENT, "The encryption method specified is not supported");
        }
        if (customer != null) {
            throw new S3Exception(S3Error.INVALID_ARGUMENT, "Server Side Encryption with Customer provided key is incompatible with the encryption method specified");
        }
        return new ServerSideEncryption(ObjectEncryption.SSE_S3, null, null);
    }

    /** The SSE-C key a read (GET, HEAD, UploadPart) brings; null for none. */
    static ServerSideEncryption forRead(S3Exchange exchange, Channel channel) {
        if (exchange.header("x-amz-server-side-encryption") != null) {
            throw new S3Exception(S3Error.INVALID_ARGUMENT, "x-amz-server-side-encryption is not accepted on reads: an SSE-S3 object is decrypted without it");
        }
        return customerKey(exchange, CUSTOMER, channel);
    }

    /** The SSE-C key a copy brings for its source; null for none. */
    static ServerSideEncryption forCopySource(S3Exchange exchange, Channel channel) {
        return customerKey(exchange, COPY_SOURCE_CUSTOMER, channel);
    }

    private static ServerSideEncryption customerKey(S3Exchange exchange, String prefix, Channel channel) {
        String algorithm = exchange.header(prefix + "algorithm");
        String key = exchange.header(prefix + "key");
        String keyMd5 = exchange.header(prefix + "key-MD5");
        if (algorithm == null && key == null && keyMd5 == null) {
            return null;
        }
        if (!channel.secure() && !channel.customerKeysOverHttp()) {
            throw new S3Exception(S3Error.INVALID_REQUEST, "Requests specifying Server Side Encryption with Customer provided keys must be made over a secure connection.");
        }
        if (algorithm == null || key == null || keyMd5 == null) {
            throw new S3Exception(S3Error.INVALID_ARGUMENT, "Requests specifying Server Side Encryption with Customer provided keys must provide "
                    + "the algorithm, the key and the key's MD5 (" + prefix + "algorithm, -key, -key-MD5)");
        }
        if (!algorithm.strip().equals(ObjectEncryption.SSE_S3)) {
            throw new S3Exception(S3Error.INVALID_ARGUMENT, "The encryption algorithm specified is not valid: only AES256");
        }
        byte[] keyBytes;
        try {
            keyBytes = Base64.getDecoder().decode(key.strip());
        } catch (IllegalArgumentException e) {
            keyBytes = new byte[0];
        }
        if (keyBytes.length != ObjectEncryption.KEY_BYTES) {
            throw new S3Exception(S3Error.INVALID_ARGUMENT, "The secret key was invalid for the specified algorithm.");
        }
        String md5 = Base64.getEncoder().encodeToString(S3Namespace.md5().digest(keyBytes));
        if (!MessageDigest.isEqual(md5.getBytes(java.nio.charset.StandardCharsets.US_ASCII),
                keyMd5.strip().getBytes(java.nio.charset.StandardCharsets.US_ASCII))) {
            throw new S3Exception(S3Error.INVALID_ARGUMENT, "The calculated MD5 hash of the key did not match the hash that was provided.");
        }
        return new ServerSideEncryption(ObjectEncryption.SSE_C, keyBytes, md5);
    }

    boolean customerKeyed() {
        return ObjectEncryption.SSE_C.equals(mode);
    }

    /** A fresh encryption for a new object or upload: SSE-S3 wraps a new data key with the cluster's current master key. */
    ObjectEncryption.Keyed newKeyed(PlinthClient client) {
        if (customerKeyed()) {
            return ObjectEncryption.sseC(customerKey);
        }
        try {
            var master = client.masterKey(0);
            return ObjectEncryption.sseS3(master.keyId(), master.key());
        } catch (PlinthException e) {
            throw S3Namespace.translate(e);
        }
    }

    /**
     * The data key of a stored encryption for a request that brought {@code brought} (null:
     * nothing): an SSE-S3 object's opens with the master key; an SSE-C object's is the key the
     * request brings, which must be its own.
     */
    static byte[] dataKey(PlinthClient client, ObjectEncryption stored, ServerSideEncryption brought) {
        if (stored.customerKeyed()) {
            if (brought == null) {
                throw new S3Exception(S3Error.INVALID_REQUEST, "The object was stored using a form of Server Side Encryption. "
                        + "The correct parameters must be provided to retrieve the object.");
            }
            if (!stored.matches(brought.customerKey())) {
                throw new S3Exception(S3Error.ACCESS_DENIED, "The provided encryption key does not match the object's");
            }
            return brought.customerKey();
        }
        if (brought != null) {
            throw new S3Exception(S3Error.INVALID_REQUEST, "The encryption parameters are not applicable to this object.");
        }
        try {
            return stored.unwrap(client.masterKey(stored.masterKeyId()).key());
        } catch (PlinthException e) {
            throw S3Namespace.translate(e);
        }
    }

    /** The keystream that reads a stored encrypted object for a request that brought {@code brought}. */
    static ObjectCipher readCipher(PlinthClient client, ObjectEncryption stored, ServerSideEncryption brought) {
        return new ObjectCipher(dataKey(client, stored, brought), stored.segments());
    }

    /** An unencrypted object read with SSE-C parameters is refused, as S3 refuses it. */
    static void requireNoneFor(ServerSideEncryption brought) {
        if (brought != null) {
            throw new S3Exception(S3Error.INVALID_REQUEST, "The encryption parameters are not applicable to this object.");
        }
    }

    /** The answer's headers for an object (or part) encrypted as {@code stored}; {@code brought}: the request's SSE-C key. */
    static void setResponseHeaders(DefaultHttpHeaders headers, ObjectEncryption stored) {
        if (stored == null) {
            return;
        }
        if (stored.customerKeyed()) {
            headers.set(CUSTOMER + "algorithm", ObjectEncryption.SSE_S3);
        } else {
            headers.set("x-amz-server-side-encryption", ObjectEncryption.SSE_S3);
        }
    }

    /** As above, with the SSE-C key's MD5, which S3 echoes. */
    static void setResponseHeaders(DefaultHttpHeaders headers, ObjectEncryption stored, ServerSideEncryption brought) {
        setResponseHeaders(headers, stored);
        if (stored != null && stored.customerKeyed() && brought != null) {
            headers.set(CUSTOMER + "key-MD5", brought.customerKeyMd5());
        }
    }
}
