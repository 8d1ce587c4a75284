package dev.plinth.cli;

import dev.plinth.client.PlinthClient;
import dev.plinth.common.ErrorCode;
import dev.plinth.common.PlinthException;
import dev.plinth.fuse.FuseMount;
import dev.plinth.fuse.MountOptions;
import dev.plinth.common.Settings;
import dev.plinth.server.HttpEndpoint;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

@Command(name = "mount", mixinStandardHelpOptions = true,
        description = {"Mount the cluster's file system on MOUNTPOINT with FUSE.",
                "Runs in the foreground until unmounted (`plinth umount`, `fusermount3 -u`, Ctrl-C or SIGTERM),",
                "or with --daemon in the background once the mount is up.",
                "Mount options (-o, comma separated, fstab style): hard (default: wait for an unavailable cluster),",
                "soft,timeo=SECONDS (fail with EIO after that long), ro, allow_other (default as root),",
                "attr_timeout=SECONDS, entry_timeout=SECONDS, threads=N, debug, and any setting as key=value.",
                "The mount is nosuid,nodev, as libfuse's are, unless suid or dev is given (as root; such a mount",
                "is not unmounted automatically if its process is killed).",
                "_netdev, user_xattr, flock, defaults, rw, auto, noauto and nofail are accepted for fstab."})
final class MountCommand implements Callable<Integer> {
    @Parameters(index = "0", paramLabel = "MOUNTPOINT", description = "An existing directory.")
    Path mountpoint;

    @Option(names = "-o", paramLabel = "OPTIONS", description = "Mount options, comma separated; repeatable.")
    List<String> options = new ArrayList<>();

    @Option(names = "--daemon", description = "Run in the background; return once the file system is mounted.")
    boolean daemon;

    @Option(names = "--log", paramLabel = "FILE", description = "With --daemon: where the mount process logs (default: /tmp/plinth-mount-UID.log).")
    Path logFile;

    @Mixin
    ClientMixin client;

    @picocli.CommandLine.Spec
    picocli.CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() throws Exception {
        dev.plinth.common.log.LogContext.node("mount");
        MountOptions mountOptions = MountOptions.parse(String.join(",", options), client.config(), isRoot());
        if (daemon) {
            return startDaemon();
        }
        PrometheusRegistry metrics = new PrometheusRegistry();
        try (PlinthClient plinth = client.connect(mountOptions.config());
             FuseMount mount = mountWithUnmountHook(plinth, mountOptions, metrics);
             HttpEndpoint endpoint = HttpEndpoint.startOrWarn(mountOptions.config().get(Settings.MOUNT_HTTP_LISTEN), metrics, () -> true)) {
            System.out.println("plinth mounted " + client.serverAddress() + " on " + mount.mountpoint()
                    + (endpoint == null ? "" : " (metrics: http://" + endpoint.address() + "/metrics)"));
            System.out.flush();
            mount.awaitUnmounted();
            System.out.println("plinth unmounted " + mount.mountpoint());
        }
        return 0;
    }

    /** Mounts, and at once makes SIGTERM unmount: a signal that came before the hook would leave a stale mount behind. */
    private FuseMount mountWithUnmountHook(PlinthClient plinth, MountOptions mountOptions, PrometheusRegistry metrics) {
        FuseMount mount = FuseMount.mount(plinth, mountpoint, mountOptions, metrics);
        Runtime.getRuntime().addShutdownHook(new Thread(mount::close, "plinth-unmount"));
        return mount;
    }

    static boolean isRoot() {
        return "root".equals(System.getProperty("user.name"));
    }

    /** Starts this same command without --daemon in a new session, and waits for the mount to appear. */
    private int startDaemon() throws IOException, InterruptedException {
        // The same JVM, options, class path and command line, rebuilt from what the JVM reports (the process's own
        // /proc cmdline is not always readable through ProcessHandle, e.g. with a very long class path).
        List<String> command = new ArrayList<>();
        command.add("setsid");
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.addAll(java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments());
        command.add("-cp");
        command.add(System.getProperty("java.class.path"));
        command.add(Main.class.getName());
        for (String argument : spec.root().commandLine().getParseResult().originalArgs()) {
            if (!argument.equals("--daemon")) {
                command.add(argument);
            }
        }
        Path log = logFile != null ? logFile : Path.of(System.getProperty("java.io.tmpdir"), "plinth-mount-" + System.getProperty("user.name") + ".log");
        Process process = new ProcessBuilder(command).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()))
                .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null"))).start();
        long deadline = System.nanoTime() + 60_000_000_000L;
        while (System.nanoTime() < deadline) {
            if (FuseMount.isMounted(mountpoint)) {
                System.out.println("plinth mounted on " + mountpoint.toAbsolutePath().normalize() + " (pid " + process.pid() + ", log " + log + ")");
                return 0;
            }
            if (!process.isAlive()) {
                throw new PlinthException(ErrorCode.IO_ERROR, "the mount process exited with " + process.exitValue() + "; see " + log);
            }
            Thread.sleep(100);
        }
        process.destroy();
        throw new PlinthException(ErrorCode.TIMED_OUT, "the file system did not appear on " + mountpoint + " within 60 s; see " + log);
    }
}
