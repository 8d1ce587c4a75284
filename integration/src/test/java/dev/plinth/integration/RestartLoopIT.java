package dev.plinth.integration;

import static org.assertj.core.api.Assertions.assertThat;

import dev.plinth.client.PlinthClient;
import dev.plinth.common.Config;
import dev.plinth.common.FaultPoints;
import dev.plinth.fuse.FuseMount;
import dev.plinth.fuse.MountOptions;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The server killed with SIGKILL and started again, round after round, under an application
 * that appends and fsyncs through a hard mount: the application sees no error at all (a
 * restarted server answers NOT_READY, which the mount retries, until it knows the cluster), and
 * every line it fsynced is there afterwards, in order.
 */
class RestartLoopIT {
    private static final int ROUNDS = 20;
    private static final int RECORD_BYTES = 64 * 1024;

    @TempDir
    Path directory;

    @Test
    void aHardMountSeesNoErrorAcrossKillsAndRestarts() throws Exception {
        FuseMountIT.FuseTesting.requireFuse();
        int port;
        try (ServerSocket probe = new ServerSocket(0)) {
            port = probe.getLocalPort();
        }
        String listen = "127.0.0.1:" + port;
        Path data = directory.resolve("data");
        Path log = directory.resolve("server.log");
        Path mountPoint = Files.createDirectories(directory.resolve("mnt"));
        Path stop = directory.resolve("stop");
        Config config = MiniCluster.testConfig().with("rpc.timeout-millis", "2000");
        MountOptions options = MountOptions.parse("", config, true);
        Random random = new Random(ROUNDS);
        // each restart listens for a second before its storage role knows the cluster: requests arrive in that window
        List<String> jvm = List.of("-Xmx512m", "-Dplinth.faults=" + FaultPoints.STORAGE_REGISTER_DELAY_MILLIS + "=1000");
        ServerProcess server = ServerProcess.start(data, log, listen, jvm);
        try (PlinthClient client = server.client(options.config()); FuseMount mount = FuseMount.mount(client, mountPoint, options)) {
            // each line is appended, fsynced, and only then counted as acknowledged
            // records of 64 KiB: most of the time goes to the targets
            Process writer = RoleRestartLoopIT.startAppender(mountPoint.resolve("journal"), stop, RECORD_BYTES);
            try {
                for (int round = 0; round < ROUNDS; round++) {
                    Thread.sleep(200 + random.nextInt(1000));
                    assertThat(writer.isAlive()).as("the writer is still going in round %d", round).isTrue();
                    server.kill();
                    server = ServerProcess.start(data, log, listen, jvm);
                }
                Thread.sleep(500);
                Files.writeString(stop, "");
                assertThat(writer.waitFor(120, TimeUnit.SECONDS)).as("the writer stops").isTrue();
                String output = new String(writer.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
                assertThat(writer.exitValue()).as(output).isZero();
                int acknowledged = Integer.parseInt(output.substring(output.lastIndexOf(' ') + 1));
                List<String> lines = Files.readAllLines(mountPoint.resolve("journal"));
                assertThat(lines.size()).as("every fsynced line is there").isGreaterThanOrEqualTo(acknowledged);
                for (int i = 0; i < lines.size(); i++) {
                    assertThat(lines.get(i)).hasSize(RECORD_BYTES - 1).startsWith(String.format("line %08d x", i));
                }
                System.out.println(ROUNDS + " kills and restarts: " + acknowledged + " lines fsynced, none lost, no error seen");
            } finally {
                writer.destroyForcibly(); // left running after the mount is gone, it would fill the local disk under the mount point
            }
        } finally {
            server.close();
        }
    }
}
