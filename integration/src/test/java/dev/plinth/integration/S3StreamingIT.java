package dev.plinth.integration;

import static org.assertj.core.api.Assertions.assertThat;

import dev.plinth.gateway.S3Credentials;
import dev.plinth.integration.s3.S3Testing;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import software.amazon.awssdk.core.ResponseInputStream;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.GetObjectResponse;

/**
 * Large uploads and downloads stream: a server process with a 192 MiB heap and 64 MiB of direct
 * memory takes and serves an object four times its heap (one PUT with an aws-chunked body, and a
 * GET), byte for byte. If the gateway buffered bodies, it would run out of memory.
 */
class S3StreamingIT {
    private static final long OBJECT_BYTES = 768L << 20;

    @TempDir
    Path directory;

    @Test
    void objectsLargerThanTheServersMemoryStreamThrough() throws Exception {
        Path source = directory.resolve("source.bin");
        String expected = writeRandom(source, OBJECT_BYTES);
        try (ServerProcess server = ServerProcess.start(directory.resolve("data"), directory.resolve("server.log"), "127.0.0.1:0",
                List.of("-Xmx192m", "-XX:MaxDirectMemorySize=64m"));
             S3Client s3 = S3Testing.sdk(server.s3Url(), S3Credentials.read(server.dataDirectory().resolve("s3-credentials")))) {
            s3.createBucket(b -> b.bucket("large"));
            s3.putObject(b -> b.bucket("large").key("object.bin"), RequestBody.fromFile(source));
            MessageDigest digest = MessageDigest.getInstance("SHA-256");
            long total = 0;
            try (ResponseInputStream<GetObjectResponse> in = s3.getObject(b -> b.bucket("large").key("object.bin"))) {
                byte[] buffer = new byte[1 << 20];
                int n;
                while ((n = in.read(buffer)) > 0) {
                    digest.update(buffer, 0, n);
                    total += n;
                }
            }
            assertThat(total).isEqualTo(OBJECT_BYTES);
            assertThat(HexFormat.of().formatHex(digest.digest())).isEqualTo(expected);
            assertThat(Files.readString(directory.resolve("server.log"))).doesNotContain("OutOfMemoryError");
        }
    }

    /** Writes {@code bytes} of seeded random data; returns their SHA-256. */
    private static String writeRandom(Path file, long bytes) throws IOException, java.security.NoSuchAlgorithmException {
        MessageDigest digest = MessageDigest.getInstance("SHA-256");
        Random random = new Random(11);
        byte[] block = new byte[1 << 20];
        try (OutputStream out = Files.newOutputStream(file)) {
            for (long written = 0; written < bytes; written += block.length) {
                random.nextBytes(block);
                out.write(block);
                digest.update(block);
            }
        }
        return HexFormat.of().formatHex(digest.digest());
    }
}
