package dev.plinth.cli;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;

/**
 * What all of this machine's CPUs have done so far, from the kernel's {@code /proc/stat}: the
 * bench prints, beside each rate, the CPU time the whole machine spent per GiB moved and how much
 * of it stood idle. On a small machine where servers, client, disk and loopback share the cores,
 * a rate alone cannot say whether a path is bound by CPU (no idle left, and then its cost per GiB
 * is what to cut) or waits on something (idle left over); CPU per GiB also moves far less from run
 * to run than the rates of a shared VM do.
 *
 * <p>Busy is user, nice, system, irq and softirq time; idle is idle and I/O wait; time the
 * hypervisor stole counts as neither but is part of the whole.
 *
 * @param busyTicks busy time of all CPUs together
 * @param idleTicks idle and I/O wait time of all CPUs together
 * @param totalTicks all time of all CPUs together
 * @param cpus CPUs online
 */
record MachineCpu(long busyTicks, long idleTicks, long totalTicks, int cpus) {
    private static final Path PROC_STAT = Path.of("/proc/stat");

    /** Now, or null where there is no {@code /proc/stat} (not Linux): the bench then prints rates alone. */
    static MachineCpu now() {
        try {
            return parse(Files.readAllLines(PROC_STAT));
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }

    /** The summary line ("cpu  user nice system idle iowait irq softirq steal ...") and the per-CPU lines. */
    static MachineCpu parse(List<String> lines) {
        String[] fields = lines.getFirst().trim().split("\\s+");
        if (!fields[0].equals("cpu") || fields.length < 9) {
            throw new IllegalArgumentException("not a /proc/stat summary line: " + lines.getFirst());
        }
        long[] ticks = new long[8];
        for (int i = 0; i < ticks.length; i++) {
            ticks[i] = Long.parseLong(fields[i + 1]);
        }
        int cpus = (int) lines.stream().filter(line -> line.matches("cpu\\d+\\s.*")).count();
        long busy = ticks[0] + ticks[1] + ticks[2] + ticks[5] + ticks[6];
        long idle = ticks[3] + ticks[4];
        return new MachineCpu(busy, idle, busy + idle + ticks[7], Math.max(1, cpus));
    }

    /**
     * "; this machine X core-s per GiB, Y% idle" for {@code bytes} moved in {@code seconds} since
     * {@code before} (this snapshot being later), or "" where either snapshot is missing or no time
     * passed. Core-seconds come from the busy share of the interval times its wall time and CPUs, so
     * the kernel's tick rate does not matter.
     */
    static String per(MachineCpu before, MachineCpu after, long bytes, double seconds) {
        if (before == null || after == null || after.totalTicks <= before.totalTicks || bytes <= 0) {
            return "";
        }
        double total = after.totalTicks - before.totalTicks;
        double busyShare = (after.busyTicks - before.busyTicks) / total;
        double idleShare = (after.idleTicks - before.idleTicks) / total;
        double coreSeconds = busyShare * seconds * after.cpus;
        return String.format(Locale.ROOT, "; this machine %.2f core-s per GiB, %.0f%% idle", coreSeconds / (bytes / (double) (1L << 30)), idleShare * 100);
    }
}
