package dev.plinth.integration;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.plinth.client.PlinthClient;
import dev.plinth.client.PlinthFile;
import dev.plinth.common.ErrorCode;
import dev.plinth.common.PlinthException;
import dev.plinth.gateway.S3Credentials;
import dev.plinth.integration.s3.S3Testing;
import java.net.ServerSocket;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.S3Exception;

/**
 * The server on a small file system (a tmpfs the test mounts) that its own writes fill: data
 * writes fail with ENOSPC (507 through S3) at the targets' reserve, namespace growth fails at the
 * metadata reserve, nothing acknowledged is lost, SIGTERM stops it at once with a short log, it
 * starts again on the full disk, serves reads and deletes, and takes writes again once space is
 * freed.
 */
class DiskFullIT {
    private static final int FILE_BYTES = 8 << 20;
    private static final int SMALL_FILE_BYTES = 60 << 10;

    @TempDir
    Path directory;

    @Test
    void aFullDiskRefusesWritesAndKeepsEverythingElse() throws Exception {
        dev.plinth.testing.Prerequisites.requireRoot(); // it mounts a tmpfs
        Path disk = Files.createDirectories(directory.resolve("disk"));
        TestProcesses.run(List.of("mount", "-t", "tmpfs", "-o", "size=320m", "plinth-disk-full-test", disk.toString()), Duration.ofSeconds(30));
        try {
            run(disk);
        } finally {
            TestProcesses.run(List.of("umount", "-l", disk.toString()), Duration.ofSeconds(30));
        }
    }

    private void run(Path disk) throws Exception {
        int port;
        try (ServerSocket probe = new ServerSocket(0)) {
            port = probe.getLocalPort();
        }
        String listen = "127.0.0.1:" + port;
        Path data = disk.resolve("data");
        Path log = directory.resolve("server.log"); // beside the disk, not on it: it must not be what fills it
        List<String> settings = List.of("--set", "target.reserve-bytes=48m", "--set", "meta.reserve-bytes=24m");
        ServerProcess server = ServerProcess.start(data, log, listen, List.of("-Xmx384m"), settings);
        Map<String, Integer> written = new LinkedHashMap<>();
        Map<String, Integer> small = new LinkedHashMap<>();
        try (PlinthClient client = server.client(MiniCluster.testConfig())) {
            client.mkdir("/big", 0755);
            // data until the targets' reserve: ENOSPC, and the file that failed is not half there
            PlinthException full = null;
            for (int i = 0; i < 64 && full == null; i++) {
                String path = "/big/f" + i;
                try {
                    write(client, path, FILE_BYTES, i);
                    written.put(path, i);
                } catch (PlinthException e) {
                    full = e;
                }
            }
            assertThat(full).as("320 MiB filled by 8 MiB files").isNotNull();
            assertThat(full.code()).as(full.getMessage()).isEqualTo(ErrorCode.NO_SPACE);
            assertThat(full.getMessage()).contains("target.reserve-bytes");
            assertThat(written).hasSizeGreaterThan(20);
            awaitFree(client, free -> free < FILE_BYTES, "df shows the full disk (usage comes with heartbeats)");

            S3Credentials.KeyPair key = S3Credentials.read(data.resolve("s3-credentials"));
            try (S3Client s3 = S3Testing.sdk(server.s3Url(), key)) {
                s3.createBucket(b -> b.bucket("full"));
                assertThatThrownBy(() -> s3.putObject(b -> b.bucket("full").key("large"), RequestBody.fromBytes(new byte[FILE_BYTES])))
                        .satisfies(e -> assertThat(((S3Exception) e).statusCode()).isEqualTo(507));
            }

            // Data-on-MDT files grow the metadata store and log until its reserve: then ENOSPC, and reads go on
            PlinthException metaFull = null;
            for (int i = 0; i < 4000 && metaFull == null; i++) {
                String path = "/big/s" + i;
                try {
                    write(client, path, SMALL_FILE_BYTES, i);
                    small.put(path, i);
                } catch (PlinthException e) {
                    metaFull = e;
                }
            }
            assertThat(metaFull).as("small files fill the metadata disk's share").isNotNull();
            assertThat(metaFull.code()).as(metaFull.getMessage()).isEqualTo(ErrorCode.NO_SPACE);
            verify(client, written, FILE_BYTES);
        }

        // Something else takes the last bytes (a reserve cannot stop that): SIGTERM still stops it at once, with a short log
        // (its final snapshot fails: RocksDB cannot flush), and once that space is given back it starts again on the full disk
        Path filler = disk.resolve("filler");
        fill(filler);
        long logBefore = Files.size(log);
        assertThat(server.stop(60)).as("the server stops on SIGTERM").isNotEqualTo(-1);
        assertThat(Files.size(log) - logBefore).as("what stopping logged").isLessThan(64 << 10);
        Files.delete(filler);
        server = ServerProcess.start(data, log, listen, List.of("-Xmx384m"), settings);
        try (PlinthClient client = server.client(MiniCluster.testConfig())) {
            verify(client, written, FILE_BYTES);
            verify(client, small, SMALL_FILE_BYTES);
            assertThatThrownBy(() -> client.mkdir("/more", 0755)).satisfies(e -> assertThat(((PlinthException) e).code()).isEqualTo(ErrorCode.NO_SPACE));
            // deletes work on the full disk, and what they free takes writes again
            for (String path : new ArrayList<>(written.keySet()).subList(0, 10)) {
                client.delete(path);
                written.remove(path);
            }
            for (String path : small.keySet()) {
                client.delete(path);
            }
            awaitFree(client, free -> free >= 2L * FILE_BYTES, "what the deletes freed (chunks are freed in the background)");
            write(client, "/big/after", FILE_BYTES, 999);
            verify(client, Map.of("/big/after", 999), FILE_BYTES);
            verify(client, written, FILE_BYTES);
            client.mkdir("/more", 0755);
        } finally {
            server.close();
        }
    }

    /** Writes {@code file} until its file system is full. */
    private static void fill(Path file) throws java.io.IOException {
        byte[] block = new byte[1 << 20];
        try (var out = Files.newOutputStream(file)) {
            for (int i = 0; i < 1024; i++) {
                out.write(block);
            }
        } catch (java.io.IOException e) {
            if (!String.valueOf(e.getMessage()).contains("No space left")) {
                throw e;
            }
        }
    }

    /** Waits (30 s at most) until the free space statfs reports passes {@code test}: targets report it with heartbeats. */
    private static void awaitFree(PlinthClient client, java.util.function.LongPredicate test, String what) throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (!test.test(client.statFs().freeBytes()) && System.nanoTime() < deadline) {
            Thread.sleep(200);
        }
        assertThat(test.test(client.statFs().freeBytes())).as(what + ": " + client.statFs().freeBytes()).isTrue();
    }

    private static byte[] content(int size, int seed) {
        byte[] bytes = new byte[size];
        Arrays.fill(bytes, (byte) seed);
        bytes[0] = (byte) (seed >> 8);
        return bytes;
    }

    private static void write(PlinthClient client, String path, int size, int seed) {
        try (PlinthFile file = client.create(path, 0644, true, null)) {
            file.write(0, ByteBuffer.wrap(content(size, seed)));
            file.fsync();
        } catch (PlinthException e) {
            try {
                client.delete(path); // what the failed write left: an acknowledged file is only one whose fsync and close returned
            } catch (PlinthException ignored) {
                // never made
            }
            throw e;
        }
    }

    /** Each file reads back whole, as it was written with its seed. */
    private static void verify(PlinthClient client, Map<String, Integer> files, int size) {
        for (Map.Entry<String, Integer> entry : files.entrySet()) {
            String path = entry.getKey();
            int seed = entry.getValue();
            try (PlinthFile file = client.open(path, false)) {
                ByteBuffer read = ByteBuffer.allocate(size);
                while (read.hasRemaining() && file.read(read.position(), read) > 0) {
                    // until full
                }
                assertThat(read.array()).as(path).isEqualTo(content(size, seed));
            }
        }
    }
}
