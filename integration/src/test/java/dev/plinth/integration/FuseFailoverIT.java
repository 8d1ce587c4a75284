package dev.plinth.integration;

import static org.assertj.core.api.Assertions.assertThat;

import dev.plinth.client.PlinthClient;
import dev.plinth.common.Config;
import dev.plinth.fuse.FuseMount;
import dev.plinth.fuse.MountOptions;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A mount outlives its cluster going away: the server is a separate JVM, killed with SIGKILL
 * and started again on the same directory and port. Under a hard mount (the default) a job's
 * file operations wait and then complete; under a soft mount they fail with EIO after timeo.
 */
class FuseFailoverIT {
    @TempDir
    Path directory;

    @Test
    void hardMountWaitsForTheClusterAndSoftMountFailsWithEio() throws Exception {
        FuseMountIT.FuseTesting.requireFuse();
        int port;
        try (ServerSocket probe = new ServerSocket(0)) {
            port = probe.getLocalPort();
        }
        String listen = "127.0.0.1:" + port;
        Path data = directory.resolve("data");
        Path log = directory.resolve("server.log");
        Path hard = Files.createDirectories(directory.resolve("hard"));
        Path soft = Files.createDirectories(directory.resolve("soft"));
        Config config = MiniCluster.testConfig().with("rpc.timeout-millis", "2000");
        MountOptions hardOptions = MountOptions.parse("", config, true);
        MountOptions softOptions = MountOptions.parse("soft,timeo=2", config, true);
        ServerProcess server = ServerProcess.start(data, log, listen);
        try (PlinthClient hardClient = server.client(hardOptions.config());
             PlinthClient softClient = server.client(softOptions.config());
             FuseMount hardMount = FuseMount.mount(hardClient, hard, hardOptions);
             FuseMount softMount = FuseMount.mount(softClient, soft, softOptions)) {
            Files.writeString(hard.resolve("before"), "written before the crash");
            server.kill();

            long softStart = System.nanoTime();
            String softResult = FuseMountIT.FuseTesting.run(List.of("/usr/bin/python3", "-c", """
                    import errno, os, sys
                    try:
                        os.stat(os.path.join(sys.argv[1], "never-seen"))
                        print("unexpected success")
                    except OSError as e:
                        print("soft:", errno.errorcode[e.errno])
                    """, soft.toString()), java.time.Duration.ofSeconds(60));
            long softMillis = (System.nanoTime() - softStart) / 1_000_000;
            assertThat(softResult).contains("soft: EIO");
            System.out.println("soft mount failed with EIO after " + softMillis + " ms (timeo=2)");

            // Ctrl-C reaches a process blocked on the hard mount: the kernel interrupts the request, it ends with EINTR
            Process blocked = new ProcessBuilder("/usr/bin/python3", "-c", """
                    import os, signal, sys
                    # a shell that started the build in the background left SIGINT ignored, and exec keeps that
                    signal.signal(signal.SIGINT, signal.default_int_handler)
                    print("waiting", flush=True)
                    try:
                        os.stat(os.path.join(sys.argv[1], "asked-during-the-outage"))
                    except KeyboardInterrupt:
                        print("interrupted")
                        sys.exit(3)
                    """, hard.toString()).redirectErrorStream(true).start();
            Thread.sleep(1500);
            assertThat(blocked.isAlive()).as("a hard mount waits for the cluster").isTrue();
            new ProcessBuilder("kill", "-INT", Long.toString(blocked.pid())).start().waitFor();
            boolean ended = blocked.waitFor(15, TimeUnit.SECONDS);
            if (!ended) {
                // where the process waits (a FUSE request, or an inode lock) and what the FUSE workers are doing
                System.out.println(whereItWaits(blocked.pid()));
            }
            assertThat(ended).as("SIGINT ends the wait").isTrue();
            String blockedOutput = new String(blocked.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertThat(blockedOutput).contains("interrupted");
            assertThat(blocked.exitValue()).isEqualTo(3);

            // a job on the hard mount keeps going across the outage
            Process job = new ProcessBuilder("/usr/bin/python3", "-c", """
                    import os, sys, time
                    start = time.time()
                    with open(os.path.join(sys.argv[1], "before")) as f:
                        assert f.read() == "written before the crash"
                    with open(os.path.join(sys.argv[1], "during"), "w") as f:
                        f.write("written during the outage")
                    print("hard mount job done after %.1f s" % (time.time() - start))
                    """, hard.toString()).redirectErrorStream(true).start();
            Thread.sleep(3000);
            assertThat(job.isAlive()).as("the job waits while the cluster is down").isTrue();
            long restart = System.nanoTime();
            server = ServerProcess.start(data, log, listen);
            assertThat(job.waitFor(90, TimeUnit.SECONDS)).as("the job finishes once the cluster is back").isTrue();
            String output = new String(job.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            System.out.println(output.strip() + "; " + (System.nanoTime() - restart) / 1_000_000 + " ms after the restart began");
            assertThat(job.exitValue()).as(output).isZero();
            assertThat(Files.readString(hard.resolve("during"))).isEqualTo("written during the outage");
            assertThat(Files.readString(soft.resolve("during"))).as("the soft mount recovers too").isEqualTo("written during the outage");
        } finally {
            server.close();
        }
    }

    /** The blocked process's kernel stack (FUSE request wait, or an inode lock?) and what every FUSE worker is doing. */
    private static String whereItWaits(long pid) {
        StringBuilder out = new StringBuilder("the process did not end after SIGINT; its kernel stack:\n");
        try {
            out.append(Files.readString(Path.of("/proc", Long.toString(pid), "stack")));
        } catch (IOException | RuntimeException e) {
            out.append("(unreadable: ").append(e).append(")\n");
        }
        Thread.getAllStackTraces().forEach((thread, stack) -> {
            if (thread.getName().startsWith("plinth-fuse")) {
                out.append(thread.getName()).append(' ').append(thread.getState()).append('\n');
                for (StackTraceElement frame : stack) {
                    out.append("    at ").append(frame).append('\n');
                }
            }
        });
        return out.toString();
    }
}
