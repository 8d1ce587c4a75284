package dev.plinth.gateway;

import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Base64;
import java.util.zip.CRC32;
import java.util.zip.CRC32C;
import java.util.zip.Checksum;

/** The checksums S3's flexible-checksum headers name (x-amz-checksum-crc32 and friends), computed as a body streams by. */
final class Checksums {
    private Checksums() {}

    /** A checksum being computed; {@link #base64()} is its value as the header carries it. */
    interface Running {
        void update(byte[] buffer, int offset, int length);

        /** The checksum of what was passed so far, big-endian (call once: digests reset). */
        byte[] value();

        default String base64() {
            return Base64.getEncoder().encodeToString(value());
        }

        default String hex() {
            return java.util.HexFormat.of().formatHex(value());
        }
    }

    /** The running checksum for a header name such as {@code x-amz-checksum-crc32c}, or null for a name we do not know. */
    static Running forHeader(String headerName) {
        String algorithm = headerName.toLowerCase(java.util.Locale.ROOT).replace("x-amz-checksum-", "");
        return switch (algorithm) {
            case "crc32" -> ofChecksum(new CRC32());
            case "crc32c" -> ofChecksum(new CRC32C());
            case "crc64nvme" -> new Crc64Nvme();
            case "sha1" -> ofDigest("SHA-1");
            case "sha256" -> ofDigest("SHA-256");
            case "md5" -> ofDigest("MD5");
            default -> null;
        };
    }

    private static Running ofChecksum(Checksum checksum) {
        return new Running() {
            @Override
            public void update(byte[] buffer, int offset, int length) {
                checksum.update(buffer, offset, length);
            }

            @Override
            public byte[] value() {
                long value = checksum.getValue();
                return new byte[] {(byte) (value >>> 24), (byte) (value >>> 16), (byte) (value >>> 8), (byte) value};
            }
        };
    }

    private static Running ofDigest(String name) {
        MessageDigest digest;
        try {
            digest = MessageDigest.getInstance(name);
        } catch (NoSuchAlgorithmException e) {
            throw new AssertionError(name + " is part of every JDK", e);
        }
        return new Running() {
            @Override
            public void update(byte[] buffer, int offset, int length) {
                digest.update(buffer, offset, length);
            }

            @Override
            public byte[] value() {
                return digest.digest();
            }
        };
    }

    /** CRC-64/NVME (reflected polynomial 0x9a6c9329ac4bc9b5), the AWS SDKs' newer default. */
    static final class Crc64Nvme implements Running {
        private static final long[] TABLE = new long[256];

        static {
            for (int i = 0; i < 256; i++) {
                long crc = i;
                for (int bit = 0; bit < 8; bit++) {
                    crc = (crc & 1) != 0 ? (crc >>> 1) ^ 0x9a6c9329ac4bc9b5L : crc >>> 1;
                }
                TABLE[i] = crc;
            }
        }

        private long crc = -1L;

        @Override
        public void update(byte[] buffer, int offset, int length) {
            long value = crc;
            for (int i = offset; i < offset + length; i++) {
                value = TABLE[(int) ((value ^ buffer[i]) & 0xff)] ^ (value >>> 8);
            }
            crc = value;
        }

        @Override
        public byte[] value() {
            long value = ~crc;
            byte[] bytes = new byte[8];
            for (int i = 0; i < 8; i++) {
                bytes[i] = (byte) (value >>> (56 - 8 * i));
            }
            return bytes;
        }
    }
}
