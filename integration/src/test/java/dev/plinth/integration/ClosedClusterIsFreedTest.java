package dev.plinth.integration;

import static org.assertj.core.api.Assertions.assertThat;

import dev.plinth.client.PlinthClient;
import dev.plinth.client.PlinthFile;
import dev.plinth.storage.StorageService;
import java.lang.ref.WeakReference;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A closed server leaves nothing of itself reachable: the test JVM starts dozens, each with its
 * read buffers in direct memory, and a process that restarts its roles must not keep the old ones.
 * (The JVM's metrics once kept every server's registry, and through it the whole server.)
 */
class ClosedClusterIsFreedTest {
    @TempDir
    Path directory;

    @Test
    void aClosedClusterIsGarbage() throws InterruptedException {
        WeakReference<StorageService> server = startUseAndClose();
        for (int round = 0; round < 50 && server.get() != null; round++) {
            System.gc();
            Thread.sleep(100);
        }
        assertThat(server.get()).as("the closed server's storage service, after garbage collection").isNull();
    }

    private WeakReference<StorageService> startUseAndClose() {
        try (MiniCluster cluster = MiniCluster.start(directory); PlinthClient client = cluster.client()) {
            byte[] bytes = new byte[8 << 20];
            try (PlinthFile file = client.create("/f", 0644, true, null)) {
                file.write(0, ByteBuffer.wrap(bytes));
            }
            try (PlinthFile file = client.open("/f", false)) {
                file.read(0, ByteBuffer.allocate(bytes.length)); // read buffers made and handed back
            }
            assertThat(cluster.metric("jvm_threads_current")).as("the JVM's metrics are still served").isPositive();
            return new WeakReference<>(cluster.server().storage());
        }
    }
}
