package dev.plinth.integration;

import static org.assertj.core.api.Assertions.assertThat;

import dev.plinth.fuse.FuseMount;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * `plinth mount` and `plinth umount` as a user runs them: separate processes, a daemon that
 * returns once the mount is up, an fstab-style option string, and mount processes that end
 * cleanly when unmounted from outside or sent SIGTERM.
 */
class MountCommandIT {
    private static final Pattern PID = Pattern.compile("\\(pid (\\d+),");

    @TempDir
    Path directory;

    @Test
    void daemonMountWithFstabOptionsAndUmount() throws Exception {
        FuseMountIT.FuseTesting.requireFuse();
        try (MiniCluster cluster = MiniCluster.start(directory.resolve("data"))) {
            Path mountpoint = Files.createDirectories(directory.resolve("mnt"));
            Result mounted = plinth(cluster, List.of("mount", mountpoint.toString(), "--daemon", "--log", directory.resolve("mount.log").toString(),
                    "-o", "rw,_netdev,user_xattr,flock,attr_timeout=2,entry_timeout=2,soft,timeo=30,threads=8"));
            assertThat(mounted.exitCode()).as(mounted.output()).isZero();
            Matcher pid = PID.matcher(mounted.output());
            assertThat(pid.find()).as(mounted.output()).isTrue();
            ProcessHandle daemon = ProcessHandle.of(Long.parseLong(pid.group(1))).orElseThrow();
            try {
                assertThat(FuseMount.isMounted(mountpoint)).isTrue();
                Files.writeString(mountpoint.resolve("through-the-daemon"), "hello");
                try (var client = cluster.client()) {
                    assertThat(client.stat("/through-the-daemon").sizeBytes()).isEqualTo(5);
                }

                Result unmounted = plinth(cluster, List.of("umount", mountpoint.toString()));
                assertThat(unmounted.exitCode()).as(unmounted.output()).isZero();
                assertThat(daemon.onExit().get(20, TimeUnit.SECONDS).isAlive()).isFalse();
                assertThat(FuseMount.isMounted(mountpoint)).isFalse();
            } finally {
                daemon.destroyForcibly();
            }
            Result notMounted = plinth(cluster, List.of("umount", mountpoint.toString()));
            assertThat(notMounted.exitCode()).isNotZero();
            assertThat(notMounted.output()).contains("is not a Plinth mount");
        }
    }

    @Test
    void foregroundMountEndsOnFusermountAndOnSigterm() throws Exception {
        FuseMountIT.FuseTesting.requireFuse();
        try (MiniCluster cluster = MiniCluster.start(directory.resolve("data"))) {
            Path mountpoint = Files.createDirectories(directory.resolve("mnt"));
            for (String stop : List.of("fusermount3", "SIGTERM")) {
                Process mount = start(cluster, List.of("mount", mountpoint.toString()));
                try {
                    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
                    while (!FuseMount.isMounted(mountpoint) && mount.isAlive() && System.nanoTime() < deadline) {
                        Thread.sleep(100);
                    }
                    assertThat(FuseMount.isMounted(mountpoint)).as("mounted by the foreground process").isTrue();
                    Files.writeString(mountpoint.resolve("f-" + stop), stop);
                    if (stop.equals("SIGTERM")) {
                        mount.toHandle().destroy(); // SIGTERM (Process.destroy would also close our end of its output)
                    } else {
                        FuseMountIT.FuseTesting.run(List.of("fusermount3", "-u", mountpoint.toString()), java.time.Duration.ofSeconds(30));
                    }
                    assertThat(mount.waitFor(30, TimeUnit.SECONDS)).as("the mount process ends after %s", stop).isTrue();
                    String output = new String(mount.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
                    System.out.println(output);
                    if (stop.equals("fusermount3")) {
                        assertThat(mount.exitValue()).as(output).isZero();
                        assertThat(output).contains("plinth unmounted");
                    }
                    assertThat(FuseMount.isMounted(mountpoint)).as("no stale mount after %s", stop).isFalse();
                } finally {
                    mount.destroyForcibly();
                }
            }
            try (var client = cluster.client()) {
                assertThat(client.stat("/f-SIGTERM").sizeBytes()).isEqualTo("SIGTERM".length());
            }
        }
    }

    @Test
    void fstabHelperMountsFromAnOptionsString() throws Exception {
        try (MiniCluster cluster = MiniCluster.start(directory.resolve("data"))) {
            Path mountpoint = Files.createDirectories(directory.resolve("mnt"));
            // what mount(8) runs for an fstab line "HOST:PORT MOUNTPOINT plinth OPTIONS 0 0"; PLINTH points the helper at
            // this build's classes instead of an installed launcher
            Path launcher = directory.resolve("plinth");
            Files.writeString(launcher, "#!/bin/sh\nexec " + String.join(" ", command(cluster, List.of("\"$@\""))) + "\n");
            Files.setPosixFilePermissions(launcher, java.nio.file.attribute.PosixFilePermissions.fromString("rwx------"));
            String options = "_netdev,secret_file=" + cluster.server().secretFile() + ",soft,timeo=5,attr_timeout=2,user_xattr,flock,"
                    + "x-systemd.automount,log=" + directory.resolve("mount.log");
            String output = TestProcesses.run(List.of("/bin/sh", Path.of("..", "deploy", "mount.plinth").toString(),
                    cluster.server().rpcAddress().toString(), mountpoint.toString(), "-o", options), java.util.Map.of("PLINTH", launcher.toString()),
                    java.time.Duration.ofSeconds(90));
            assertThat(output).contains("plinth mounted on");
            try {
                assertThat(FuseMount.isMounted(mountpoint)).isTrue();
                Files.writeString(mountpoint.resolve("from-fstab"), "hello");
                try (var client = cluster.client()) {
                    assertThat(client.stat("/from-fstab").sizeBytes()).isEqualTo(5);
                }
            } finally {
                Result unmounted = plinth(cluster, List.of("umount", mountpoint.toString()));
                assertThat(unmounted.exitCode()).as(unmounted.output()).isZero();
            }
        }
    }

    private record Result(int exitCode, String output) {}

    private static List<String> command(MiniCluster cluster, List<String> arguments) {
        List<String> command = new ArrayList<>(TestProcesses.plinth(List.of("-Xmx256m"), arguments));
        if (arguments.getFirst().equals("mount") && arguments.size() > 1) {
            command.addAll(List.of("--server", cluster.server().rpcAddress().toString(), "--secret-file", cluster.server().secretFile().toString()));
        }
        return command;
    }

    private static Process start(MiniCluster cluster, List<String> arguments) throws IOException {
        return new ProcessBuilder(command(cluster, arguments)).redirectErrorStream(true).start();
    }

    private static Result plinth(MiniCluster cluster, List<String> arguments) throws IOException, InterruptedException {
        Process process = start(cluster, arguments);
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(process.waitFor(90, TimeUnit.SECONDS)).isTrue();
        return new Result(process.exitValue(), output);
    }
}
