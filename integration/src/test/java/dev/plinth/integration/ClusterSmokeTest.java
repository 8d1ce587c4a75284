package dev.plinth.integration;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.plinth.client.PlinthClient;
import dev.plinth.client.PlinthFile;
import dev.plinth.common.ErrorCode;
import dev.plinth.common.Layout;
import dev.plinth.common.PlinthException;
import dev.plinth.wire.messages.MetaMessages;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

public class ClusterSmokeTest {
    @TempDir
    Path directory;

    @Test
    void writeReadRenameDeleteAndRestart() throws InterruptedException {
        byte[] payload = new byte[9 * 1024 * 1024 + 12345];
        new Random(1).nextBytes(payload);
        try (MiniCluster cluster = MiniCluster.start(directory); PlinthClient client = cluster.client()) {
            client.mkdirs("/a/b", 0755);
            Layout striped = new Layout(3, 1 << 20, 1 << 20, "default", 1, List.of());
            try (PlinthFile file = client.create("/a/b/data", 0644, true, striped)) {
                file.write(0, ByteBuffer.wrap(payload));
            }
            assertThat(client.stat("/a/b/data").sizeBytes()).isEqualTo(payload.length);
            assertThat(client.stat("/a/b/data").layout().chainIds()).hasSize(3);
            assertThat(readAll(client, "/a/b/data")).isEqualTo(payload);
            client.rename("/a/b/data", "/a/data2");
            assertThat(client.exists("/a/b/data")).isFalse();
            assertThat(readAll(client, "/a/data2")).isEqualTo(payload);
            assertThatThrownBy(() -> client.delete("/a")).isInstanceOfSatisfying(PlinthException.class,
                    e -> assertThat(e.code()).isEqualTo(ErrorCode.DIRECTORY_NOT_EMPTY));
        }
        try (MiniCluster cluster = MiniCluster.start(directory); PlinthClient client = cluster.client()) {
            assertThat(readAll(client, "/a/data2")).isEqualTo(payload);
            long used = cluster.server().storage().targets().stream().mapToLong(t -> t.usedBytes()).sum();
            assertThat(used).isEqualTo(payload.length);
            client.delete("/a/data2");
            // the chunks outlive the file a while (for readers that read without an open), then go
            long deadline = System.currentTimeMillis() + MetaMessages.REMOVED_FILE_KEPT_MILLIS + 10_000;
            while (cluster.server().storage().targets().stream().mapToLong(t -> t.usedBytes()).sum() > 0
                    && System.currentTimeMillis() < deadline) {
                Thread.sleep(50);
            }
            assertThat(cluster.server().storage().targets().stream().mapToLong(t -> t.usedBytes()).sum()).isZero();
        }
    }

    /** A whole file, read through the native client in 256 KiB requests (the integration tests' one reader). */
    public static byte[] readAll(PlinthClient client, String path) {
        try (PlinthFile file = client.open(path, false)) {
            ByteBuffer buffer = ByteBuffer.allocate((int) file.size());
            long offset = 0;
            while (buffer.hasRemaining()) {
                ByteBuffer window = buffer.slice().limit(Math.min(buffer.remaining(), 256 * 1024));
                int read = file.read(offset, window);
                if (read < 0) {
                    break;
                }
                offset += read;
                buffer.position(buffer.position() + read);
            }
            return buffer.array();
        }
    }
}
