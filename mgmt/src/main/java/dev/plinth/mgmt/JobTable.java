package dev.plinth.mgmt;

import dev.plinth.wire.messages.MgmtMessages.JobCounters;
import dev.plinth.wire.messages.MgmtMessages.JobStat;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

/**
 * Per-job I/O across the cluster, from the counters clients report every few seconds: totals,
 * and rates from each client's last two reports. Clients silent for a minute drop out, so a
 * finished job's rate falls to nothing and its entry goes. Bounded: at most
 * {@link #ENTRIES_MAX} (client, job) entries, the oldest reports dropped first. Thread-safe.
 */
final class JobTable {
    static final int ENTRIES_MAX = 20_000;
    private static final long EXPIRY_NANOS = TimeUnit.MINUTES.toNanos(1);

    private record Key(long clientId, String jobId) {}

    private record Entry(JobCounters now, JobCounters before, long nowNanos, long beforeNanos) {}

    private final Map<Key, Entry> entries = new HashMap<>();

    synchronized void report(long clientId, List<JobCounters> jobs, long nowNanos) {
        for (JobCounters job : jobs) {
            Key key = new Key(clientId, job.jobId());
            Entry last = entries.get(key);
            entries.put(key, last == null ? new Entry(job, null, nowNanos, 0) : new Entry(job, last.now(), nowNanos, last.nowNanos()));
        }
        expire(nowNanos);
    }

    private void expire(long nowNanos) {
        entries.values().removeIf(entry -> nowNanos - entry.nowNanos() > EXPIRY_NANOS);
        if (entries.size() > ENTRIES_MAX) {
            List<Map.Entry<Key, Entry>> oldest = new ArrayList<>(entries.entrySet());
            oldest.sort(Comparator.comparingLong(e -> e.getValue().nowNanos()));
            Iterator<Map.Entry<Key, Entry>> drop = oldest.iterator();
            while (entries.size() > ENTRIES_MAX && drop.hasNext()) {
                entries.remove(drop.next().getKey());
            }
        }
    }

    /** Every job, busiest (bytes per second) first. */
    synchronized List<JobStat> jobs(long nowNanos) {
        expire(nowNanos);
        Map<String, long[]> sums = new TreeMap<>(); // clients, readBytes, writeBytes, operations, read/s, write/s, operations/s
        for (Map.Entry<Key, Entry> item : entries.entrySet()) {
            Entry entry = item.getValue();
            JobCounters now = entry.now();
            long[] sum = sums.computeIfAbsent(item.getKey().jobId(), ignored -> new long[7]);
            sum[0]++;
            sum[1] += now.readBytes();
            sum[2] += now.writeBytes();
            sum[3] += operations(now);
            // a rate only from fresh reports: a client that stopped reporting is not moving data now
            if (entry.before() != null && nowNanos - entry.nowNanos() < 3 * (entry.nowNanos() - entry.beforeNanos())) {
                double seconds = Math.max(1e-3, (entry.nowNanos() - entry.beforeNanos()) / 1e9);
                sum[4] += Math.round(Math.max(0, now.readBytes() - entry.before().readBytes()) / seconds);
                sum[5] += Math.round(Math.max(0, now.writeBytes() - entry.before().writeBytes()) / seconds);
                sum[6] += Math.round(Math.max(0, operations(now) - operations(entry.before())) / seconds);
            }
        }
        List<JobStat> result = new ArrayList<>();
        sums.forEach((job, s) -> result.add(new JobStat(job, (int) s[0], s[1], s[2], s[3], s[4], s[5], s[6])));
        result.sort(Comparator.comparingLong((JobStat j) -> j.readBytesPerSecond() + j.writeBytesPerSecond()).reversed()
                .thenComparing(Comparator.comparingLong(JobStat::operationsPerSecond).reversed()).thenComparing(JobStat::jobId));
        return result;
    }

    private static long operations(JobCounters counters) {
        return counters.reads() + counters.writes() + counters.metadataOperations();
    }
}
