package dev.plinth.cli;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.FileStore;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * Checks the host settings that Lustre deployment guides tune, and what Plinth needs, and says
 * for each what to run to fix it. Reads /proc and /sys under {@code --root} (a test points it at
 * a fake tree); {@code --fix} writes the safe sysctls there when run as root.
 */
@Command(name = "doctor", mixinStandardHelpOptions = true,
        description = {"Check this host for running Plinth: socket buffers, swappiness, NUMA balancing, open-file and memlock",
                "limits, FUSE, the disk scheduler and free space under the data directories, and clock skew against the cluster.",
                "Prints each check as ok, warn or fail with the command that fixes it. Exit code: 0 all ok, 1 a warning, 2 a failure."})
final class DoctorCommand implements Callable<Integer> {
    static final long SOCKET_BUFFER_BYTES = 16L << 20;

    @Option(names = "--data", paramLabel = "DIR", description = "Data directories to check (disk scheduler, free space); repeatable.")
    List<Path> dataDirectories = new ArrayList<>();

    @Option(names = "--http", paramLabel = "HOST:PORT", defaultValue = "127.0.0.1:7180",
            description = "A Plinth HTTP listener to compare clocks with (default ${DEFAULT-VALUE}); unreachable: the check is skipped.")
    String http;

    @Option(names = "--fix", description = "Apply the safe fixes (sysctls) as root; limits, scheduler and space are for you to change.")
    boolean fix;

    @Option(names = "--root", hidden = true, defaultValue = "/", description = "Where /proc, /sys and /dev are (tests use a fake tree).")
    Path root;

    enum Level { OK, WARN, FAIL }

    /** One check's outcome; {@code sysctl} names a setting --fix may write to {@code fixValue}. */
    record Result(Level level, String name, String observed, String advice, String fixCommand, String sysctl, String fixValue) {}

    private final List<Result> results = new ArrayList<>();

    @Override
    public Integer call() {
        checkSysctlAtLeast("net.core.rmem_max", SOCKET_BUFFER_BYTES, "largest socket receive buffer");
        checkSysctlAtLeast("net.core.wmem_max", SOCKET_BUFFER_BYTES, "largest socket send buffer");
        checkTcpBuffers("net.ipv4.tcp_rmem");
        checkTcpBuffers("net.ipv4.tcp_wmem");
        checkSysctlAtMost("vm.swappiness", 10, "swapping out a storage server's memory stalls it");
        checkSysctlAtMost("kernel.numa_balancing", 0, "page migration between NUMA nodes stalls I/O threads");
        checkLimit("Max open files", 65_536, "ulimit -n 1048576 (systemd: LimitNOFILE=1048576)");
        checkLimit("Max locked memory", 64L << 20, "ulimit -l unlimited (systemd: LimitMEMLOCK=infinity)");
        checkFuse();
        for (Path data : dataDirectories) {
            checkDisk(data);
        }
        checkClock();
        Level worst = Level.OK;
        for (Result result : results) {
            if (fix && result.sysctl() != null && result.level() != Level.OK) {
                result = applyFix(result);
            }
            System.out.println(format(result));
            if (result.level().compareTo(worst) > 0) {
                worst = result.level();
            }
        }
        return worst.ordinal();
    }

    private static String format(Result result) {
        String line = String.format(Locale.ROOT, "%-5s %-26s %s", result.level().name().toLowerCase(Locale.ROOT), result.name(), result.observed());
        if (result.level() != Level.OK && result.advice() != null) {
            line += " (" + result.advice() + ")";
        }
        if (result.level() != Level.OK && result.fixCommand() != null) {
            line += "\n      fix: " + result.fixCommand();
        }
        return line;
    }

    private void add(Level level, String name, String observed, String advice, String fixCommand) {
        results.add(new Result(level, name, observed, advice, fixCommand, null, null));
    }

    private Path sysctlPath(String name) {
        return root.resolve("proc/sys").resolve(name.replace('.', '/'));
    }

    private String sysctl(String name) {
        try {
            return readKernelFile(sysctlPath(name)).strip();
        } catch (IOException e) {
            return null;
        }
    }

    /**
     * The whole of a /proc or /sys file, read in one call from its start. The JDK's readers ask
     * such a file (which reports size 0) for one byte first, and a sysctl answers only a read at
     * offset 0: the next read then gets nothing, so 60 read as "6".
     */
    static String readKernelFile(Path file) throws IOException {
        try (java.io.InputStream in = Files.newInputStream(file)) {
            byte[] buffer = new byte[KERNEL_FILE_BYTES_MAX];
            int length = Math.max(0, in.read(buffer, 0, buffer.length));
            return new String(buffer, 0, length, java.nio.charset.StandardCharsets.UTF_8);
        }
    }

    /** More than any sysctl, limits or scheduler file holds (a page). */
    private static final int KERNEL_FILE_BYTES_MAX = 64 * 1024;

    private void checkSysctlAtLeast(String name, long minimum, String what) {
        String value = sysctl(name);
        if (value == null) {
            add(Level.WARN, name, "cannot read " + sysctlPath(name), what, null);
            return;
        }
        boolean ok = Long.parseLong(value.split("\\s+")[0]) >= minimum;
        results.add(new Result(ok ? Level.OK : Level.WARN, name, value, what + ": at least " + minimum + " for fast streams",
                sysctlFix(name, Long.toString(minimum)), name, Long.toString(minimum)));
    }

    private void checkSysctlAtMost(String name, long maximum, String why) {
        String value = sysctl(name);
        if (value == null) {
            add(Level.OK, name, "not present on this kernel", null, null);
            return;
        }
        boolean ok = Long.parseLong(value) <= maximum;
        results.add(new Result(ok ? Level.OK : Level.WARN, name, value, why + ": at most " + maximum, sysctlFix(name, Long.toString(maximum)),
                name, Long.toString(maximum)));
    }

    /** The command that sets a sysctl now, and the line that keeps it after a reboot. */
    private static String sysctlFix(String name, String value) {
        return "sysctl -w " + name + "=" + value + "  (and keep it: echo '" + name + " = " + value.replace("\"", "")
                + "' >> /etc/sysctl.d/90-plinth.conf)";
    }

    /** tcp_rmem/tcp_wmem: "min default max"; the max is what autotuning may grow a socket to. */
    private void checkTcpBuffers(String name) {
        String value = sysctl(name);
        if (value == null) {
            add(Level.WARN, name, "cannot read " + sysctlPath(name), null, null);
            return;
        }
        String[] fields = value.split("\\s+");
        boolean ok = fields.length == 3 && Long.parseLong(fields[2]) >= SOCKET_BUFFER_BYTES;
        String wanted = (fields.length == 3 ? fields[0] + " " + fields[1] : "4096 131072") + " " + SOCKET_BUFFER_BYTES;
        results.add(new Result(ok ? Level.OK : Level.WARN, name, value.replaceAll("\\s+", " "), "autotuning maximum at least "
                + SOCKET_BUFFER_BYTES, sysctlFix(name, "\"" + wanted + "\""), name, wanted));
    }

    /** A soft limit of this process from proc/self/limits ("Max open files  1024  4096  files"). */
    private void checkLimit(String limit, long minimum, String fixCommand) {
        Path limits = root.resolve("proc/self/limits");
        try {
            for (String line : readKernelFile(limits).split("\n")) {
                if (line.startsWith(limit)) {
                    String soft = line.substring(limit.length()).strip().split("\\s+")[0];
                    boolean ok = soft.equals("unlimited") || Long.parseLong(soft) >= minimum;
                    add(ok ? Level.OK : Level.WARN, limit.replace("Max ", "limit: "), soft, "at least " + minimum, fixCommand);
                    return;
                }
            }
            add(Level.WARN, limit.replace("Max ", "limit: "), "not in " + limits, null, null);
        } catch (IOException | NumberFormatException e) {
            add(Level.WARN, limit.replace("Max ", "limit: "), "cannot read " + limits + ": " + e.getMessage(), null, null);
        }
    }

    private void checkFuse() {
        boolean device = Files.exists(root.resolve("dev/fuse"));
        boolean helper = Files.isExecutable(root.resolve("usr/bin/fusermount3")) || Files.isExecutable(root.resolve("bin/fusermount3"));
        if (device && helper) {
            add(Level.OK, "fuse", "/dev/fuse and fusermount3 present", null, null);
        } else {
            add(Level.WARN, "fuse", (device ? "" : "no /dev/fuse ") + (helper ? "" : "no fusermount3"),
                    "needed on nodes that mount", (helper ? "" : "apt-get install fuse3; ") + (device ? "" : "modprobe fuse"));
        }
    }

    private void checkDisk(Path data) {
        Path directory = data.toAbsolutePath();
        while (directory != null && !Files.exists(directory)) {
            directory = directory.getParent(); // a data directory made on first start: check where it will be
        }
        if (directory == null) {
            add(Level.FAIL, "space " + data, "no such directory", null, "mkdir -p " + data);
            return;
        }
        try {
            FileStore store = Files.getFileStore(directory);
            double free = store.getTotalSpace() == 0 ? 1 : (double) store.getUsableSpace() / store.getTotalSpace();
            Level level = free < 0.05 ? Level.FAIL : free < 0.15 ? Level.WARN : Level.OK;
            add(level, "space " + data, String.format(Locale.ROOT, "%.0f%% free of %d GiB", free * 100, store.getTotalSpace() >> 30),
                    "targets refuse writes when full", "free space on " + store.name() + " or add targets on another disk");
        } catch (IOException e) {
            add(Level.WARN, "space " + data, e.getMessage(), null, null);
        }
        checkScheduler(directory, data);
    }

    /** The block device under a directory, found by its device number in /sys/dev/block; a partition's queue is its disk's. */
    private void checkScheduler(Path directory, Path data) {
        try {
            Object device = Files.getAttribute(directory, "unix:dev");
            long dev = ((Number) device).longValue();
            long major = (dev >>> 8) & 0xfff | ((dev >>> 32) & ~0xfffL);
            long minor = (dev & 0xff) | ((dev >>> 12) & ~0xffL);
            Path block = root.resolve("sys/dev/block/" + major + ":" + minor);
            if (!Files.exists(block)) {
                add(Level.OK, "scheduler " + data, "not a block device (" + major + ":" + minor + ")", null, null);
                return;
            }
            Path real = block.toRealPath();
            Path queue = Files.exists(real.resolve("queue/scheduler")) ? real.resolve("queue/scheduler") : real.getParent().resolve("queue/scheduler");
            String schedulers = readKernelFile(queue).strip();
            String active = schedulers.contains("[") ? schedulers.substring(schedulers.indexOf('[') + 1, schedulers.indexOf(']')) : schedulers;
            boolean ok = active.equals("none") || active.equals("mq-deadline") || active.equals("noop") || active.equals("deadline");
            add(ok ? Level.OK : Level.WARN, "scheduler " + data, active, "none or mq-deadline suit NVMe and SSD targets",
                    "echo mq-deadline > " + queue);
        } catch (IOException | UnsupportedOperationException | IllegalArgumentException e) {
            add(Level.OK, "scheduler " + data, "cannot tell (" + e.getMessage() + ")", null, null);
        }
    }

    /** Compares this host's clock with the Date header of a Plinth HTTP listener (1 s resolution). */
    private void checkClock() {
        try {
            HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
            long before = System.currentTimeMillis();
            HttpResponse<Void> response = client.send(HttpRequest.newBuilder(URI.create("http://" + http + "/healthz"))
                    .timeout(Duration.ofSeconds(3)).build(), HttpResponse.BodyHandlers.discarding());
            long after = System.currentTimeMillis();
            String date = response.headers().firstValue("Date").orElse(null);
            if (date == null) {
                add(Level.WARN, "clock", http + " sent no Date header", null, null);
                return;
            }
            long remote = ZonedDateTime.parse(date, DateTimeFormatter.RFC_1123_DATE_TIME).toInstant().toEpochMilli();
            long skewMillis = remote - (before + after) / 2;
            long skewSeconds = Math.abs(skewMillis) / 1000;
            Level level = skewSeconds > 30 ? Level.FAIL : skewSeconds > 2 ? Level.WARN : Level.OK;
            add(level, "clock", "within " + (skewSeconds + 1) + " s of " + http, "leases, S3 signatures and logs need synchronized clocks",
                    "timedatectl set-ntp true (or run chrony)");
        } catch (IOException | InterruptedException | java.time.format.DateTimeParseException e) {
            add(Level.OK, "clock", "not checked: no Plinth HTTP listener at " + http + " (--http)", null, null);
        }
    }

    /** Writes a sysctl (as root) and reads it back. */
    private Result applyFix(Result result) {
        try {
            Files.writeString(sysctlPath(result.sysctl()), result.fixValue() + "\n");
            String now = sysctl(result.sysctl());
            boolean applied = now != null && now.replaceAll("\\s+", " ").equals(result.fixValue());
            return new Result(applied ? Level.OK : result.level(), result.name(), applied ? now.replaceAll("\\s+", " ") + " (fixed)"
                    : result.observed() + " (fix did not take)", result.advice(), result.fixCommand(), result.sysctl(), result.fixValue());
        } catch (IOException e) {
            return new Result(result.level(), result.name(), result.observed() + " (cannot fix: " + e.getMessage() + ")", result.advice(),
                    result.fixCommand(), result.sysctl(), result.fixValue());
        }
    }
}
