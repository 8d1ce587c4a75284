package dev.plinth.gateway;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.Random;
import org.junit.jupiter.api.Test;

class ChecksumsTest {
    private static byte[] checksum(Checksums.Algorithm algorithm, byte[] bytes, int offset, int length) {
        Checksums.Running running = algorithm.running();
        running.update(bytes, offset, length);
        return running.value();
    }

    /** Published check values ("123456789") of the CRCs S3 names, so the combining below starts from the right functions. */
    @Test
    void crcsMatchTheirCheckValues() {
        byte[] check = "123456789".getBytes(StandardCharsets.US_ASCII);
        assertEquals("cbf43926", java.util.HexFormat.of().formatHex(checksum(Checksums.Algorithm.CRC32, check, 0, 9)));
        assertEquals("e3069283", java.util.HexFormat.of().formatHex(checksum(Checksums.Algorithm.CRC32C, check, 0, 9)));
        assertEquals("ae8b14860a799888", java.util.HexFormat.of().formatHex(checksum(Checksums.Algorithm.CRC64NVME, check, 0, 9)));
    }

    @Test
    void combinedCrcsAreTheCrcOfTheWhole() {
        Random random = new Random(42);
        for (Checksums.Algorithm algorithm : new Checksums.Algorithm[] {Checksums.Algorithm.CRC32, Checksums.Algorithm.CRC32C,
                Checksums.Algorithm.CRC64NVME}) {
            for (int[] split : new int[][] {{0, 10}, {10, 0}, {1, 1}, {1000, 3}, {5 << 10, 70_001}, {123_457, 1 << 20}}) {
                byte[] bytes = new byte[split[0] + split[1]];
                random.nextBytes(bytes);
                byte[] combined = algorithm.combine(checksum(algorithm, bytes, 0, split[0]), checksum(algorithm, bytes, split[0], split[1]), split[1]);
                assertArrayEquals(checksum(algorithm, bytes, 0, bytes.length), combined, algorithm + " " + split[0] + "+" + split[1]);
            }
        }
    }

    @Test
    void algorithmsAreNamedInAnyCaseAndByHeader() {
        assertEquals(Checksums.Algorithm.CRC32C, Checksums.Algorithm.named("crc32c"));
        assertEquals(Checksums.Algorithm.SHA256, Checksums.Algorithm.named("x-amz-checksum-sha256"));
        assertNull(Checksums.Algorithm.named("md5"));
        assertEquals("x-amz-checksum-crc64nvme", Checksums.Algorithm.CRC64NVME.header());
        assertEquals("ChecksumSHA1", Checksums.Algorithm.SHA1.element());
        assertEquals(Checksums.Algorithm.FULL_OBJECT, Checksums.Algorithm.CRC64NVME.defaultType());
        assertEquals(Checksums.Algorithm.COMPOSITE, Checksums.Algorithm.CRC32.defaultType());
        assertEquals(Base64.getEncoder().encodeToString(new byte[] {(byte) 0xcb, (byte) 0xf4, 0x39, 0x26}),
                Checksums.Algorithm.CRC32.running() instanceof Checksums.Running r ? base64Of(r) : null);
    }

    private static String base64Of(Checksums.Running running) {
        running.update("123456789".getBytes(StandardCharsets.US_ASCII), 0, 9);
        return running.base64();
    }
}
