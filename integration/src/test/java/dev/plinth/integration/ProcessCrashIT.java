package dev.plinth.integration;

import static org.assertj.core.api.Assertions.assertThat;

import dev.plinth.client.PlinthClient;
import dev.plinth.client.PlinthFile;
import dev.plinth.common.Config;
import dev.plinth.common.Layout;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The durability contract for a process crash: every change the server acknowledged (metadata
 * in the Raft log, data written to the targets) survives kill -9, while other writes are in
 * flight. The server is a separate JVM killed with SIGKILL, then restarted on the same directory.
 */
class ProcessCrashIT {
    @TempDir
    Path directory;

    @Test
    void acknowledgedChangesSurviveKill9() throws Exception {
        long seed = Long.getLong("plinth.seed", System.nanoTime());
        Random random = new Random(seed);
        Path data = directory.resolve("data");
        Path log = directory.resolve("server.log");
        Config config = MiniCluster.testConfig().with("rpc.timeout-millis", "3000");
        Map<String, byte[]> files = new LinkedHashMap<>();
        Set<String> directories = new TreeSet<>();
        Set<String> removed = new TreeSet<>();
        AtomicLong acknowledgedOperations = new AtomicLong();
        long startedKill;
        try (ServerProcess server = ServerProcess.start(data, log)) {
            try (PlinthClient client = server.client(config)) {
                for (int i = 0; i < 60; i++) {
                    String dir = "/d" + (i % 7);
                    if (directories.add(dir)) {
                        client.mkdir(dir, 0755);
                        acknowledgedOperations.incrementAndGet();
                    }
                    String path = dir + "/f" + i;
                    byte[] bytes = new byte[random.nextInt(3 << 20)];
                    random.nextBytes(bytes);
                    Layout layout = new Layout(1 + random.nextInt(4), 64 << 10, 1 << 20, "default", 1, List.of());
                    try (PlinthFile file = client.create(path, 0644, true, layout)) {
                        file.write(0, ByteBuffer.wrap(bytes));
                        if (random.nextBoolean()) {
                            file.fsync();
                        }
                    }
                    files.put(path, bytes);
                    acknowledgedOperations.incrementAndGet();
                    if (i % 5 == 4) {
                        String renamed = path + ".renamed";
                        client.rename(path, renamed);
                        files.put(renamed, files.remove(path));
                        acknowledgedOperations.incrementAndGet();
                    }
                    if (i % 9 == 8) {
                        String victim = files.keySet().iterator().next();
                        client.delete(victim);
                        files.remove(victim);
                        removed.add(victim);
                        acknowledgedOperations.incrementAndGet();
                    }
                }
            }
            // a writer that is mid-stream when the server dies: its unacknowledged bytes may go
            AtomicBoolean stop = new AtomicBoolean();
            Thread background = Thread.ofPlatform().start(() -> {
                try (PlinthClient client = server.client(config); PlinthFile file = client.create("/inflight", 0644, true, null)) {
                    byte[] block = new byte[1 << 20];
                    for (long offset = 0; !stop.get() && offset < (2L << 30); offset += block.length) {
                        file.write(offset, ByteBuffer.wrap(block));
                    }
                } catch (RuntimeException expected) {
                    // the server died under it
                }
            });
            Thread.sleep(500);
            startedKill = System.nanoTime();
            server.kill();
            stop.set(true);
            background.join(60_000);
        }
        long bytesLost = 0;
        try (ServerProcess server = ServerProcess.start(data, log); PlinthClient client = server.client(config)) {
            long recoveredMillis = (System.nanoTime() - startedKill) / 1_000_000;
            for (String dir : directories) {
                assertThat(client.stat(dir).isDirectory()).as("seed %d: directory %s", seed, dir).isTrue();
            }
            for (Map.Entry<String, byte[]> file : files.entrySet()) {
                byte[] read = ClusterSmokeTest.readAll(client, file.getKey());
                if (!java.util.Arrays.equals(read, file.getValue())) {
                    bytesLost += file.getValue().length;
                }
            }
            for (String gone : removed) {
                assertThat(client.exists(gone)).as("seed %d: removed %s came back", seed, gone).isFalse();
            }
            System.out.printf("crash test (seed %d): %d operations acknowledged, 1 fault injected (SIGKILL), %d files checked, "
                    + "bytes lost: %d, serving again %d ms after the kill%n", seed, acknowledgedOperations.get(), files.size(), bytesLost,
                    recoveredMillis);
        }
        assertThat(bytesLost).as("seed %d: acknowledged bytes lost", seed).isZero();
    }
}
