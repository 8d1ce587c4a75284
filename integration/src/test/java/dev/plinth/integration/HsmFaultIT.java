package dev.plinth.integration;

import static dev.plinth.wire.messages.HsmMessages.*;
import static org.assertj.core.api.Assertions.assertThat;

import dev.plinth.client.PlinthClient;
import dev.plinth.client.PlinthFile;
import dev.plinth.common.Config;
import dev.plinth.common.Layout;
import dev.plinth.wire.messages.HsmMessages.HsmState;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * HSM actions through real crashes: the server (with its mover and MDT) killed mid-archive and
 * mid-restore, and a separate mover killed mid-copy and replaced. Parts are slowed by a fault
 * point so that the kill lands inside the copy; leases are short so the takeover is quick.
 */
class HsmFaultIT {
    private static final Layout STRIPED = new Layout(2, 1 << 20, 1 << 20, "default", 1, List.of());
    private static final List<String> JVM = List.of("-Xmx512m", "-Dplinth.faults=hsm.part-delay-millis=150");
    private static final List<String> SETTINGS = List.of("--set", "hsm.action-lease-millis=2000", "--set", "hsm.part-bytes=1048576",
            "--set", "hsm.part-parallelism=1");

    @TempDir
    Path directory;

    private static String freeAddress() throws IOException {
        try (ServerSocket socket = new ServerSocket(0)) {
            return "127.0.0.1:" + socket.getLocalPort();
        }
    }

    private static byte[] write(PlinthClient plinth, String path, int length) {
        byte[] bytes = new byte[length];
        new Random(length).nextBytes(bytes);
        try (PlinthFile file = plinth.create(path, 0644, true, STRIPED)) {
            file.write(0, ByteBuffer.wrap(bytes));
        }
        return bytes;
    }

    /** Waits until the file's action runs and has copied something: the moment to kill. */
    private static void awaitCopying(PlinthClient plinth, long inode) throws InterruptedException {
        for (int i = 0; i < 1000; i++) {
            HsmState state = plinth.hsm().state(inode);
            if (state.action() != null && state.action().status() == RUNNING && state.action().doneBytes() > 0) {
                return;
            }
            Thread.sleep(10);
        }
        throw new AssertionError("the action never ran: " + plinth.hsm().state(inode));
    }

    private static HsmState settle(PlinthClient plinth, long inode) throws InterruptedException {
        for (int i = 0; i < 1500; i++) {
            HsmState state = plinth.hsm().state(inode);
            if (state.action() == null) {
                return state;
            }
            Thread.sleep(40);
        }
        throw new AssertionError("the action did not end: " + plinth.hsm().state(inode));
    }

    @Test
    void theServerKilledMidArchiveAndMidRestoreFinishesBothAfterItsRestart() throws Exception {
        Path data = directory.resolve("data");
        String listen = freeAddress();
        byte[] bytes;
        long inode;
        try (ServerProcess server = ServerProcess.start(data, directory.resolve("server.log"), listen, JVM, SETTINGS);
             PlinthClient plinth = server.client(Config.defaults())) {
            bytes = write(plinth, "/big", 12 << 20);
            inode = plinth.stat("/big").inodeId();
            plinth.hsm().request(inode, ARCHIVE, 1);
            awaitCopying(plinth, inode);
            server.kill();
        }
        try (ServerProcess server = ServerProcess.start(data, directory.resolve("server.log"), listen, JVM, SETTINGS);
             PlinthClient plinth = server.client(Config.defaults())) {
            HsmState archived = settle(plinth, inode); // the action survived the crash in the MDT and was taken again
            assertThat(archived.states()).as(archived.toString()).isEqualTo(EXISTS | ARCHIVED);
            assertThat(Files.size(data.resolve("archive").resolve(archived.copy().objectKey()))).isEqualTo(bytes.length);
            plinth.hsm().request(inode, RELEASE, 0);
            Thread.sleep(6000); // the chunks' freeing, so the restore starts at once
            plinth.hsm().request(inode, RESTORE, 0);
            awaitCopying(plinth, inode);
            server.kill();
        }
        try (ServerProcess server = ServerProcess.start(data, directory.resolve("server.log"), listen, JVM, SETTINGS);
             PlinthClient plinth = server.client(Config.defaults())) {
            assertThat(ClusterSmokeTest.readAll(plinth, "/big")).isEqualTo(bytes); // waits for the restore, taken again after the crash
            assertThat(plinth.hsm().state(inode).states()).isEqualTo(EXISTS | ARCHIVED);
        }
    }

    @Test
    void aMoverKilledMidCopyIsTakenOverByAnother() throws Exception {
        Path data = directory.resolve("data");
        List<String> noMover = new java.util.ArrayList<>(SETTINGS);
        noMover.addAll(List.of("--set", "server.mover=false"));
        try (ServerProcess server = ServerProcess.start(data, directory.resolve("server.log"), freeAddress(), List.of("-Xmx512m"), noMover);
             PlinthClient plinth = server.client(Config.defaults())) {
            plinth.addArchive(new dev.plinth.wire.messages.MgmtMessages.ArchiveInfo(1, "default", directory.resolve("archive").toUri().toString()));
            byte[] bytes = write(plinth, "/big", 12 << 20);
            long inode = plinth.stat("/big").inodeId();
            plinth.hsm().request(inode, ARCHIVE, 1);
            Process first = agent(server, "agent-1.log");
            try {
                awaitCopying(plinth, inode);
            } finally {
                first.destroyForcibly();
                first.waitFor(30, TimeUnit.SECONDS);
            }
            Process second = agent(server, "agent-2.log");
            try {
                HsmState archived = settle(plinth, inode);
                assertThat(archived.states()).as(archived.toString()).isEqualTo(EXISTS | ARCHIVED);
                plinth.hsm().request(inode, RELEASE, 0);
                assertThat(ClusterSmokeTest.readAll(plinth, "/big")).isEqualTo(bytes);
            } finally {
                second.destroy();
                second.waitFor(30, TimeUnit.SECONDS);
            }
        }
    }

    private Process agent(ServerProcess server, String log) throws IOException {
        List<String> arguments = new java.util.ArrayList<>(List.of("hsm", "agent", "--server", server.rpcAddress().toString(),
                "--secret-file", server.dataDirectory().resolve("cluster.secret").toString()));
        arguments.addAll(SETTINGS);
        List<String> command = TestProcesses.plinth(JVM, arguments);
        return new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.appendTo(directory.resolve(log).toFile()))
                .start();
    }
}
