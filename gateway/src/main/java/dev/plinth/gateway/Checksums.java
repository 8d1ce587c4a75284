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

        default void update(java.nio.ByteBuffer buffer) {
            update(buffer.array(), buffer.arrayOffset() + buffer.position(), buffer.remaining());
        }

        default String base64() {
            return Base64.getEncoder().encodeToString(value());
        }

        default String hex() {
            return java.util.HexFormat.of().formatHex(value());
        }
    }

    /**
     * The algorithms of S3's flexible checksums, as x-amz-checksum-algorithm names them. A
     * multipart object's checksum is either of the whole object (FULL_OBJECT, CRCs only: the
     * parts' CRCs combine into the object's) or of its parts' checksums (COMPOSITE, all but
     * CRC64NVME: the checksum of the parts' checksums, with "-N" for N parts).
     */
    enum Algorithm {
        CRC32(0xEDB88320L, 32, true), CRC32C(0x82F63B78L, 32, true), CRC64NVME(0x9a6c9329ac4bc9b5L, 64, false),
        SHA1(0, 0, true), SHA256(0, 0, true);

        static final String FULL_OBJECT = "FULL_OBJECT";
        static final String COMPOSITE = "COMPOSITE";

        private final long reflectedPolynomial;
        private final int crcBits;
        private final boolean composite;
        /** x^(2^k) modulo the polynomial, for combining CRCs (zlib's crc32_combine, for any width). */
        private final long[] powersOfX;

        Algorithm(long reflectedPolynomial, int crcBits, boolean composite) {
            this.reflectedPolynomial = reflectedPolynomial;
            this.crcBits = crcBits;
            this.composite = composite;
            this.powersOfX = crcBits == 0 ? null : new long[64 + 3];
            if (powersOfX != null) {
                powersOfX[0] = 1L << (crcBits - 2); // x^1
                for (int k = 1; k < powersOfX.length; k++) {
                    powersOfX[k] = multiplyModulo(powersOfX[k - 1], powersOfX[k - 1]);
                }
            }
        }

        /** The algorithm x-amz-checksum-algorithm (or a header's suffix) names, in any case; null for one we do not know. */
        static Algorithm named(String name) {
            if (name == null) {
                return null;
            }
            String upper = name.strip().toUpperCase(java.util.Locale.ROOT).replace("X-AMZ-CHECKSUM-", "");
            for (Algorithm algorithm : values()) {
                if (algorithm.name().equals(upper)) {
                    return algorithm;
                }
            }
            return null;
        }

        /** The header that carries a value of this algorithm: x-amz-checksum-crc32 and so on. */
        String header() {
            return "x-amz-checksum-" + name().toLowerCase(java.util.Locale.ROOT);
        }

        /** The XML element that carries a value of this algorithm: ChecksumCRC32 and so on. */
        String element() {
            return "Checksum" + name();
        }

        Running running() {
            return forHeader(name());
        }

        boolean fullObject() {
            return crcBits > 0;
        }

        boolean composite() {
            return composite;
        }

        /** The type a multipart upload of this algorithm gets when it names none: S3's defaults. */
        String defaultType() {
            return composite ? COMPOSITE : FULL_OBJECT;
        }

        /** The CRC of A followed by B from the CRCs of A and of B and B's length (FULL_OBJECT checksums of multipart objects). */
        byte[] combine(byte[] first, byte[] second, long secondBytes) {
            if (!fullObject()) {
                throw new IllegalStateException(this + " is not a CRC");
            }
            return bytes(multiplyModulo(xToThe8nModulo(secondBytes), asLong(first)) ^ asLong(second));
        }

        private static long asLong(byte[] value) {
            long result = 0;
            for (byte b : value) {
                result = (result << 8) | (b & 0xff);
            }
            return result;
        }

        private byte[] bytes(long value) {
            byte[] result = new byte[crcBits / 8];
            for (int i = 0; i < result.length; i++) {
                result[i] = (byte) (value >>> (8 * (result.length - 1 - i)));
            }
            return result;
        }

        /** a * b modulo the polynomial, in the reflected bit order (x^0 in the top bit). */
        private long multiplyModulo(long a, long b) {
            long m = 1L << (crcBits - 1);
            long product = 0;
            if (a == 0) {
                return 0;
            }
            while (true) {
                if ((a & m) != 0) {
                    product ^= b;
                    if ((a & (m - 1)) == 0) {
                        return product;
                    }
                }
                m >>>= 1;
                b = (b & 1) != 0 ? (b >>> 1) ^ reflectedPolynomial : b >>> 1;
            }
        }

        /** x^(8 * bytes) modulo the polynomial. */
        private long xToThe8nModulo(long bytes) {
            long result = 1L << (crcBits - 1); // x^0
            int k = 3; // 8 = 2^3
            for (long n = bytes; n != 0; n >>>= 1, k++) {
                if ((n & 1) != 0) {
                    result = multiplyModulo(powersOfX[k], result);
                }
            }
            return result;
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
