package dev.plinth.client;

import dev.plinth.common.NonBlocking;
import dev.plinth.wire.messages.MgmtMessages.JobCounters;
import io.prometheus.metrics.core.metrics.CounterWithCallback;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;

/**
 * I/O of this client per job (Lustre's jobstats): bytes and operations, counted where the job
 * is known (the caller of a FUSE request, or this process). Bounded: past {@code maxJobs} jobs,
 * new ones are counted as {@link #OTHER}. Reported to mgmt, which shows them cluster-wide
 * ({@code plinth top --by job}), and exposed on the process's /metrics. Thread-safe.
 */
public final class JobStats {
    public static final String OTHER = "other";

    private static final class Counters {
        final LongAdder readBytes = new LongAdder();
        final LongAdder writeBytes = new LongAdder();
        final LongAdder reads = new LongAdder();
        final LongAdder writes = new LongAdder();
        final LongAdder metadata = new LongAdder();
    }

    private final int maxJobs;
    private final Map<String, Counters> jobs = new ConcurrentHashMap<>();

    JobStats(int maxJobs) {
        this.maxJobs = Math.max(1, maxJobs);
    }

    private Counters of(String jobId) {
        Counters counters = jobs.get(jobId);
        if (counters != null) {
            return counters;
        }
        if (jobs.size() >= maxJobs) {
            return jobs.computeIfAbsent(OTHER, ignored -> new Counters());
        }
        return jobs.computeIfAbsent(jobId, ignored -> new Counters());
    }

    // Each count waits for the end of work that must not wait (NonBlocking.ifKept): a refused attempt
    // runs again on a thread of its own, which counts it.

    void read(String jobId, long bytes) {
        NonBlocking.ifKept(() -> {
            Counters counters = of(jobId);
            counters.reads.increment();
            counters.readBytes.add(bytes);
        });
    }

    void write(String jobId, long bytes) {
        NonBlocking.ifKept(() -> {
            Counters counters = of(jobId);
            counters.writes.increment();
            counters.writeBytes.add(bytes);
        });
    }

    void metadata(String jobId) {
        NonBlocking.ifKept(() -> of(jobId).metadata.increment());
    }

    /** Every job's counters since this client started. */
    public List<JobCounters> snapshot() {
        List<JobCounters> result = new ArrayList<>();
        jobs.forEach((job, c) -> result.add(new JobCounters(job, c.readBytes.sum(), c.writeBytes.sum(), c.reads.sum(), c.writes.sum(),
                c.metadata.sum())));
        return result;
    }

    /** Exposes the counters on a /metrics registry (labels bounded by {@code client.job-stats-max}). */
    public void register(PrometheusRegistry registry) {
        CounterWithCallback.builder().name("plinth_job_io_bytes").help("Bytes read and written by this client, per job (client.job-id-variables).")
                .labelNames("job", "direction").callback(callback -> snapshot().forEach(job -> {
                    callback.call(job.readBytes(), job.jobId(), "read");
                    callback.call(job.writeBytes(), job.jobId(), "write");
                })).register(registry);
        CounterWithCallback.builder().name("plinth_job_operations").help("Reads, writes and metadata operations of this client, per job.")
                .labelNames("job", "kind").callback(callback -> snapshot().forEach(job -> {
                    callback.call(job.reads(), job.jobId(), "read");
                    callback.call(job.writes(), job.jobId(), "write");
                    callback.call(job.metadataOperations(), job.jobId(), "metadata");
                })).register(registry);
    }

    /**
     * The job of a process, from its environment: the first of {@code variables} that is set,
     * else {@code command.uid}. Job ids are cut to 64 characters of [A-Za-z0-9._:-].
     */
    public static String jobOf(Map<String, String> environment, List<String> variables, String command, int uid) {
        for (String variable : variables) {
            String value = environment.get(variable);
            if (value != null && !value.isBlank()) {
                return clean(value);
            }
        }
        return clean(command + "." + uid);
    }

    private static String clean(String jobId) {
        StringBuilder out = new StringBuilder();
        for (int i = 0; i < jobId.length() && out.length() < 64; i++) {
            char c = jobId.charAt(i);
            out.append(Character.isLetterOrDigit(c) && c < 128 || c == '.' || c == '_' || c == ':' || c == '-' ? c : '_');
        }
        return out.isEmpty() ? "unknown" : out.toString();
    }
}
