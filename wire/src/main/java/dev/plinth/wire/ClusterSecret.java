package dev.plinth.wire;

import dev.plinth.common.ErrorCode;
import dev.plinth.common.PlinthException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.HexFormat;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/** The shared secret that every connection between Plinth processes proves knowledge of. */
public final class ClusterSecret {
    private static final SecureRandom RANDOM = new SecureRandom();
    private final byte[] key;

    private ClusterSecret(byte[] key) {
        this.key = key.clone();
    }

    public static ClusterSecret generate() {
        byte[] key = new byte[32];
        RANDOM.nextBytes(key);
        return new ClusterSecret(key);
    }

    /** Reads a secret file (hex), rejecting files that others can read. */
    public static ClusterSecret read(Path file) {
        try {
            String text = Files.readString(file, StandardCharsets.US_ASCII).trim();
            return new ClusterSecret(HexFormat.of().parseHex(text));
        } catch (IOException e) {
            throw new PlinthException(ErrorCode.AUTHENTICATION_FAILED, "cannot read cluster secret " + file + ": " + e.getMessage(), e);
        } catch (IllegalArgumentException e) {
            throw new PlinthException(ErrorCode.AUTHENTICATION_FAILED, "cluster secret " + file + " is not hex");
        }
    }

    /** Reads the file if it exists, else creates it with a new secret, readable by its owner only. */
    public static ClusterSecret readOrCreate(Path file) {
        if (Files.exists(file)) {
            return read(file);
        }
        ClusterSecret secret = generate();
        secret.write(file);
        return secret;
    }

    public void write(Path file) {
        try {
            Files.createDirectories(file.toAbsolutePath().getParent());
            Path temporary = file.resolveSibling(file.getFileName() + ".tmp");
            Files.deleteIfExists(temporary);
            Files.createFile(temporary, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
            Files.writeString(temporary, HexFormat.of().formatHex(key) + "\n", StandardCharsets.US_ASCII);
            Files.move(temporary, file, java.nio.file.StandardCopyOption.ATOMIC_MOVE, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        } catch (IOException e) {
            throw new PlinthException(ErrorCode.IO_ERROR, "cannot write cluster secret " + file + ": " + e.getMessage(), e);
        }
    }

    static byte[] nonce() {
        byte[] nonce = new byte[16];
        RANDOM.nextBytes(nonce);
        return nonce;
    }

    byte[] proof(String role, byte[] nonce) {
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(key, "HmacSHA256"));
            mac.update(role.getBytes(StandardCharsets.US_ASCII));
            return mac.doFinal(nonce);
        } catch (GeneralSecurityException e) {
            throw new AssertionError(e);
        }
    }

    boolean verify(String role, byte[] nonce, byte[] proof) {
        return proof != null && MessageDigest.isEqual(proof(role, nonce), proof);
    }
}
