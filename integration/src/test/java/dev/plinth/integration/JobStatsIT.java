package dev.plinth.integration;

import static org.assertj.core.api.Assertions.assertThat;

import dev.plinth.client.PlinthClient;
import dev.plinth.common.Config;
import dev.plinth.common.Credentials;
import dev.plinth.common.ErrorCode;
import dev.plinth.common.NonBlocking;
import dev.plinth.common.PlinthException;
import dev.plinth.fuse.FuseMount;
import dev.plinth.fuse.MountOptions;
import dev.plinth.wire.messages.MgmtMessages.JobStat;
import io.prometheus.metrics.expositionformats.PrometheusTextFormatWriter;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Per-job I/O statistics: programs with different PLINTH_JOB_ID (or SLURM_JOB_ID) write and
 * read through a real mount; the mount's /metrics and the cluster-wide view (`plinth top --by
 * job`, from mgmt) show each job's bytes.
 */
class JobStatsIT {
    @TempDir
    Path directory;

    @Test
    void eachJobsBytesAreCountedFromItsEnvironment() throws Exception {
        FuseMountIT.FuseTesting.requireFuse();
        try (MiniCluster cluster = MiniCluster.start(directory.resolve("data"))) {
            Config config = MiniCluster.testConfig();
            PrometheusRegistry registry = new PrometheusRegistry();
            Path mountpoint = Files.createDirectories(directory.resolve("mnt"));
            try (PlinthClient mountClient = cluster.client(Credentials.ROOT, config);
                 FuseMount mount = FuseMount.mount(mountClient, mountpoint, MountOptions.parse("", config, true), registry)) {
                TestProcesses.run(List.of("/bin/sh", "-c", "dd if=/dev/urandom of=" + mountpoint.resolve("a.bin") + " bs=1M count=3 && cat "
                        + mountpoint.resolve("a.bin") + " > /dev/null"), Map.of("PLINTH_JOB_ID", "train-a"), Duration.ofSeconds(60));
                TestProcesses.run(List.of("/bin/sh", "-c", "dd if=/dev/zero of=" + mountpoint.resolve("b.bin") + " bs=1M count=1"),
                        Map.of("PLINTH_JOB_ID", "", "SLURM_JOB_ID", "4242"), Duration.ofSeconds(60));

                ByteArrayOutputStream text = new ByteArrayOutputStream();
                PrometheusTextFormatWriter.create().write(text, registry.scrape());
                assertThat(text.toString(StandardCharsets.UTF_8))
                        .contains("plinth_job_io_bytes_total{direction=\"write\",job=\"train-a\"} 3145728")
                        .contains("plinth_job_io_bytes_total{direction=\"write\",job=\"4242\"} 1048576")
                        .containsPattern("plinth_job_operations_total\\{job=\"train-a\",kind=\"metadata\"} [1-9]");

                // cluster-wide, as mgmt has it from the mount's reports (every 2 s)
                try (PlinthClient viewer = cluster.client(Credentials.ROOT, config)) {
                    long deadline = System.currentTimeMillis() + 15_000;
                    Optional<JobStat> trainA;
                    Optional<JobStat> slurm;
                    do {
                        Thread.sleep(200);
                        List<JobStat> jobs = viewer.clusterJobStats();
                        trainA = jobs.stream().filter(j -> j.jobId().equals("train-a")).findFirst();
                        slurm = jobs.stream().filter(j -> j.jobId().equals("4242")).findFirst();
                    } while ((trainA.isEmpty() || slurm.isEmpty() || trainA.get().readBytes() < (3 << 20)) && System.currentTimeMillis() < deadline);
                    assertThat(trainA).hasValueSatisfying(job -> {
                        assertThat(job.writeBytes()).isEqualTo(3L << 20);
                        assertThat(job.readBytes()).isGreaterThanOrEqualTo(3L << 20);
                    });
                    assertThat(slurm).hasValueSatisfying(job -> assertThat(job.writeBytes()).isEqualTo(1L << 20));

                    ByteArrayOutputStream shown = new ByteArrayOutputStream();
                    PrintStream out = System.out;
                    try {
                        System.setOut(new PrintStream(shown, true, StandardCharsets.UTF_8));
                        dev.plinth.cli.Main.commandLine().execute("top", "--by", "job", "-n", "1", "--server=" + cluster.server().rpcAddress(),
                                "--secret-file=" + cluster.server().secretFile());
                    } finally {
                        System.setOut(out);
                    }
                    assertThat(shown.toString(StandardCharsets.UTF_8)).contains("JOB").contains("train-a").contains("4242").contains("3.0 MiB");
                }
            }
        }
    }

    /**
     * A request that work which must not wait (the S3 event loop, design note 71) tries and then
     * hands to a thread of its own is counted once, when that thread makes it; one answered
     * without waiting is counted there.
     */
    @Test
    void aRequestTriedWithoutWaitingIsCountedOnce() {
        try (MiniCluster cluster = MiniCluster.start(directory.resolve("data"));
             PlinthClient client = cluster.client(Credentials.ROOT, MiniCluster.testConfig())) {
            client.mkdir("/d", 0755); // the entry is read from the store by its first query, not from the record cache
            long before = metadataOperations(client);

            assertThat(NonBlocking.call(() -> statRefused(client, "/d"))).as("the first stat needs the store").isTrue();
            assertThat(metadataOperations(client)).isEqualTo(before);

            client.stat("/d"); // the attempt's thread
            assertThat(metadataOperations(client)).isEqualTo(before + 1);

            assertThat(NonBlocking.call(() -> statRefused(client, "/d"))).as("the entry is cached now").isFalse();
            assertThat(metadataOperations(client)).isEqualTo(before + 2);
        }
    }

    private static boolean statRefused(PlinthClient client, String path) {
        try {
            client.stat(path);
        } catch (PlinthException e) {
            assertThat(e.code()).isEqualTo(ErrorCode.WOULD_BLOCK);
        }
        return NonBlocking.refused();
    }

    private static long metadataOperations(PlinthClient client) {
        return client.jobStats().snapshot().stream().mapToLong(job -> job.metadataOperations()).sum();
    }
}
