package dev.plinth.client;

import dev.plinth.common.ErrorCode;
import dev.plinth.common.PlinthException;
import dev.plinth.common.codec.RecordCodec;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.List;
import javax.crypto.Cipher;
import javax.crypto.Mac;
import javax.crypto.spec.GCMParameterSpec;
import javax.crypto.spec.SecretKeySpec;

/**
 * How a file's bytes are encrypted (S3 server-side encryption), kept in its
 * {@code MetaMessages.SSE_XATTR} attribute. The bytes are AES-256 in counter mode: byte {@code i}
 * of a segment is XORed with the keystream of the segment's IV at block {@code (i - start) / 16},
 * so any range decrypts on its own (ranged GETs, the mount's reads), and an object made of parts is
 * their ciphertexts side by side, one segment per part, each with its own IV. A file is never
 * written twice at the same place under one key and IV: encrypted files are not written in place
 * (the metadata service refuses opens for writing), and every object and part gets a fresh IV.
 *
 * <ul>
 *   <li>SSE-S3 ({@link #SSE_S3}): a data key of the object's own, wrapped with the cluster's master
 *       key {@code masterKeyId} (kept by mgmt) by AES-GCM, so any reader the file's permissions let
 *       in reads the plaintext, through S3 or the mount.
 *   <li>SSE-C ({@link #SSE_C}): the client's key, never stored; {@code keySalt} and
 *       {@code keyHmac} (HMAC-SHA256 of the key under the salt) tell whether a request brought the
 *       right one. Without it the bytes cannot be read at all.
 * </ul>
 * Components are only added at the end (RecordCodec).
 */
public record ObjectEncryption(int formatVersion, String mode, int masterKeyId, byte[] wrappedKey, byte[] keySalt, byte[] keyHmac,
                               List<Segment> segments) {
    public static final String SSE_S3 = "AES256";
    public static final String SSE_C = "SSE-C";
    public static final int KEY_BYTES = 32;
    public static final int IV_BYTES = 16;
    private static final int FORMAT_VERSION = 1;
    private static final int GCM_NONCE_BYTES = 12;
    private static final byte[] WRAP_CONTEXT = "plinth object data key".getBytes(StandardCharsets.US_ASCII);
    private static final SecureRandom RANDOM = new SecureRandom();

    /** Bytes from {@code startOffset} on (to the next segment's start) are encrypted with {@code iv}. */
    public record Segment(long startOffset, byte[] iv) {}

    /** An encryption and the data key that goes with it (never stored as it is). */
    public record Keyed(ObjectEncryption encryption, byte[] dataKey) {
        public ObjectCipher cipher() {
            return new ObjectCipher(dataKey, encryption.segments());
        }

        /** The same key for bytes that start anew with a fresh IV: a part of a multipart upload. */
        public Keyed withFreshIv() {
            return new Keyed(encryption.withSegments(List.of(new Segment(0, newIv()))), dataKey);
        }
    }

    public ObjectEncryption {
        segments = segments == null ? List.of() : List.copyOf(segments);
    }

    /** A new SSE-S3 encryption: a fresh data key wrapped with {@code masterKey} (id {@code masterKeyId}), one segment. */
    public static Keyed sseS3(int masterKeyId, byte[] masterKey) {
        byte[] dataKey = new byte[KEY_BYTES];
        RANDOM.nextBytes(dataKey);
        byte[] nonce = new byte[GCM_NONCE_BYTES];
        RANDOM.nextBytes(nonce);
        byte[] wrapped;
        try {
            Cipher gcm = Cipher.getInstance("AES/GCM/NoPadding");
            gcm.init(Cipher.ENCRYPT_MODE, new SecretKeySpec(masterKey, "AES"), new GCMParameterSpec(128, nonce));
            gcm.updateAAD(WRAP_CONTEXT);
            byte[] sealed = gcm.doFinal(dataKey);
            wrapped = new byte[nonce.length + sealed.length];
            System.arraycopy(nonce, 0, wrapped, 0, nonce.length);
            System.arraycopy(sealed, 0, wrapped, nonce.length, sealed.length);
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("AES-GCM is part of every JDK", e);
        }
        return new Keyed(new ObjectEncryption(FORMAT_VERSION, SSE_S3, masterKeyId, wrapped, null, null, List.of(new Segment(0, newIv()))),
                dataKey);
    }

    /** A new SSE-C encryption under the client's {@code customerKey}: only a salted HMAC of it is kept. */
    public static Keyed sseC(byte[] customerKey) {
        requireKeyLength(customerKey);
        byte[] salt = new byte[16];
        RANDOM.nextBytes(salt);
        return new Keyed(new ObjectEncryption(FORMAT_VERSION, SSE_C, 0, null, salt, hmac(salt, customerKey), List.of(new Segment(0, newIv()))),
                customerKey.clone());
    }

    public static byte[] newIv() {
        byte[] iv = new byte[IV_BYTES];
        RANDOM.nextBytes(iv);
        return iv;
    }

    public boolean customerKeyed() {
        return SSE_C.equals(mode);
    }

    public ObjectEncryption withSegments(List<Segment> newSegments) {
        return new ObjectEncryption(formatVersion, mode, masterKeyId, wrappedKey, keySalt, keyHmac, newSegments);
    }

    /** The data key of an SSE-S3 encryption, unwrapped with the master key it names; a record that does not open fails as a bad request. */
    public byte[] unwrap(byte[] masterKey) {
        if (!SSE_S3.equals(mode) || wrappedKey == null || wrappedKey.length <= GCM_NONCE_BYTES) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "not an SSE-S3 encryption record");
        }
        try {
            Cipher gcm = Cipher.getInstance("AES/GCM/NoPadding");
            gcm.init(Cipher.DECRYPT_MODE, new SecretKeySpec(masterKey, "AES"), new GCMParameterSpec(128, wrappedKey, 0, GCM_NONCE_BYTES));
            gcm.updateAAD(WRAP_CONTEXT);
            return gcm.doFinal(wrappedKey, GCM_NONCE_BYTES, wrappedKey.length - GCM_NONCE_BYTES);
        } catch (GeneralSecurityException e) {
            throw new PlinthException(ErrorCode.IO_ERROR, "the file's data key does not open with master key " + masterKeyId);
        }
    }

    /** Whether {@code customerKey} is the key an SSE-C encryption was made with. */
    public boolean matches(byte[] customerKey) {
        return customerKeyed() && customerKey != null && customerKey.length == KEY_BYTES && keySalt != null
                && MessageDigest.isEqual(hmac(keySalt, customerKey), keyHmac);
    }

    private static void requireKeyLength(byte[] key) {
        if (key == null || key.length != KEY_BYTES) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "an AES-256 key is " + KEY_BYTES + " bytes");
        }
    }

    private static byte[] hmac(byte[] salt, byte[] key) {
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(salt, "HmacSHA256"));
            return mac.doFinal(key);
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("HMAC-SHA256 is part of every JDK", e);
        }
    }

    public byte[] encode() {
        return RecordCodec.encode(this);
    }

    /** A stored record; one that does not decode fails as an I/O error (the file cannot be read). */
    public static ObjectEncryption decode(byte[] value) {
        try {
            ObjectEncryption encryption = RecordCodec.decode(ObjectEncryption.class, value);
            if (encryption.segments().isEmpty() || encryption.segments().getFirst().startOffset() != 0) {
                throw new PlinthException(ErrorCode.PROTOCOL_ERROR, "no segment at offset 0");
            }
            return encryption;
        } catch (PlinthException e) {
            throw new PlinthException(ErrorCode.IO_ERROR, "the file's encryption record does not decode: " + e.getMessage());
        }
    }
}
