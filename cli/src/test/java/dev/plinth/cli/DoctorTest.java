package dev.plinth.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** `plinth doctor` against a fake /proc, /sys and /dev tree whose settings the test controls. */
class DoctorTest {
    @TempDir
    Path root;

    record Run(int exitCode, String out) {}

    private Run doctor(String... arguments) {
        PrintStream out = System.out;
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        try {
            System.setOut(new PrintStream(captured, true, StandardCharsets.UTF_8));
            String[] all = new String[arguments.length + 2];
            all[0] = "doctor";
            all[1] = "--root=" + root;
            System.arraycopy(arguments, 0, all, 2, arguments.length);
            int code = Main.commandLine().execute(all);
            return new Run(code, captured.toString(StandardCharsets.UTF_8));
        } finally {
            System.setOut(out);
        }
    }

    private void write(String path, String content) throws IOException {
        Path file = root.resolve(path);
        Files.createDirectories(file.getParent());
        Files.writeString(file, content);
    }

    private void host(String rmemMax, String tcpRmem, String swappiness, String openFiles, String lockedMemory) throws IOException {
        write("proc/sys/net/core/rmem_max", rmemMax + "\n");
        write("proc/sys/net/core/wmem_max", "16777216\n");
        write("proc/sys/net/ipv4/tcp_rmem", tcpRmem + "\n");
        write("proc/sys/net/ipv4/tcp_wmem", "4096\t16384\t16777216\n");
        write("proc/sys/vm/swappiness", swappiness + "\n");
        write("proc/sys/kernel/numa_balancing", "0\n");
        write("proc/self/limits", "Limit                     Soft Limit           Hard Limit           Units\n"
                + "Max open files            " + openFiles + "                 524288               files\n"
                + "Max locked memory         " + lockedMemory + "              8388608              bytes\n");
        write("dev/fuse", "");
        write("usr/bin/fusermount3", "#!/bin/sh\n");
        Files.setPosixFilePermissions(root.resolve("usr/bin/fusermount3"), PosixFilePermissions.fromString("rwxr-xr-x"));
    }

    /**
     * A sysctl answers only a read from offset 0; reading it a byte first (as the JDK's whole-file
     * readers do with files of size 0) got "6" of 60. Checked against this machine's own /proc,
     * which a fake tree of plain files cannot imitate.
     */
    @Test
    void readsWholeValuesOfTheRealProcTree() throws Exception {
        for (String name : new String[] {"vm/swappiness", "net/ipv4/tcp_rmem", "net/core/rmem_max", "kernel/pid_max"}) {
            Path file = Path.of("/proc/sys", name);
            if (!Files.isReadable(file)) {
                continue;
            }
            Process cat = new ProcessBuilder("cat", file.toString()).start();
            String expected = new String(cat.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertThat(cat.waitFor()).isZero();
            assertThat(DoctorCommand.readKernelFile(file)).as(name).isEqualTo(expected);
        }
    }

    @Test
    void warnsWithTheFixAndFixesSysctls() throws IOException {
        host("212992", "4096 131072 6291456", "60", "1024", "8388608");
        Run run = doctor("--http=127.0.0.1:1");
        assertThat(run.exitCode()).isEqualTo(1);
        assertThat(run.out()).contains("warn  net.core.rmem_max          212992")
                .contains("fix: sysctl -w net.core.rmem_max=16777216")
                .contains("ok    net.core.wmem_max")
                .contains("warn  net.ipv4.tcp_rmem          4096 131072 6291456")
                .contains("sysctl -w net.ipv4.tcp_rmem=\"4096 131072 16777216\"")
                .contains("ok    net.ipv4.tcp_wmem")
                .contains("warn  vm.swappiness              60")
                .contains("ok    kernel.numa_balancing")
                .contains("warn  limit: open files          1024").contains("LimitNOFILE")
                .contains("warn  limit: locked memory       8388608")
                .contains("ok    fuse")
                .contains("ok    clock                      not checked");

        Run fixed = doctor("--http=127.0.0.1:1", "--fix");
        assertThat(fixed.out()).contains("ok    net.core.rmem_max          16777216 (fixed)")
                .contains("ok    net.ipv4.tcp_rmem          4096 131072 16777216 (fixed)")
                .contains("ok    vm.swappiness              10 (fixed)");
        assertThat(Files.readString(root.resolve("proc/sys/vm/swappiness")).strip()).isEqualTo("10");
        assertThat(fixed.exitCode()).as("limits are for the operator to raise").isEqualTo(1);
    }

    @Test
    void allGoodIsExitZeroAndMissingFuseIsAWarning() throws IOException {
        host("16777216", "4096 131072 16777216", "1", "1048576", "unlimited");
        Run run = doctor("--http=127.0.0.1:1");
        assertThat(run.out()).doesNotContain("warn").doesNotContain("fail");
        assertThat(run.exitCode()).isZero();
        Files.delete(root.resolve("dev/fuse"));
        Run noFuse = doctor("--http=127.0.0.1:1");
        assertThat(noFuse.out()).contains("warn  fuse                       no /dev/fuse").contains("modprobe fuse");
        assertThat(noFuse.exitCode()).isEqualTo(1);
    }

    /** A Plinth HTTP listener whose clock is an hour off: a failure, exit code 2. */
    @Test
    void aSkewedClusterClockFails() throws Exception {
        host("16777216", "4096 131072 16777216", "1", "1048576", "unlimited");
        try (ServerSocket listener = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            Thread server = Thread.ofPlatform().start(() -> {
                try (Socket socket = listener.accept()) {
                    socket.getInputStream().read(new byte[4096]);
                    String date = DateTimeFormatter.RFC_1123_DATE_TIME.format(ZonedDateTime.now(ZoneOffset.UTC).plusHours(1));
                    OutputStream out = socket.getOutputStream();
                    out.write(("HTTP/1.1 200 OK\r\nDate: " + date + "\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n")
                            .getBytes(StandardCharsets.US_ASCII));
                    out.flush();
                } catch (IOException e) {
                    // the test fails on its assertions
                }
            });
            Run run = doctor("--http=127.0.0.1:" + listener.getLocalPort(), "--data=" + root);
            server.join(10_000);
            assertThat(run.out()).contains("fail  clock").contains("timedatectl set-ntp true").contains("space " + root);
            assertThat(run.exitCode()).isEqualTo(2);
        }
    }
}
