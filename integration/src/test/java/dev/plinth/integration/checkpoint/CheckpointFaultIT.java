package dev.plinth.integration.checkpoint;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.plinth.checkpoint.CheckpointAgent;
import dev.plinth.checkpoint.CheckpointCatalog;
import dev.plinth.checkpoint.CheckpointNames;
import dev.plinth.checkpoint.CheckpointWriter;
import dev.plinth.checkpoint.LocalStaging;
import dev.plinth.checkpoint.PlinthCheckpoints;
import dev.plinth.client.PlinthClient;
import dev.plinth.common.FaultPoints;
import dev.plinth.integration.MiniCluster;
import dev.plinth.integration.TestProcesses;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * The checkpoint agent as a separate process, killed with SIGKILL in the middle of an upload and
 * while its steps are being archived, and a trainer whose staging disk fills up: in every case the
 * newest complete checkpoint restores byte for byte, and no incomplete one is ever listed complete.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class CheckpointFaultIT {
    @TempDir
    static Path directory;
    private MiniCluster cluster;
    private PlinthClient plinth;
    private final Random random = new Random(7);

    @BeforeAll
    void start() {
        cluster = MiniCluster.start(directory.resolve("data"), MiniCluster.testConfig().with("hsm.part-bytes", "1048576"));
        plinth = cluster.client();
    }

    @AfterAll
    void stop() {
        FaultPoints.clear();
        plinth.close();
        cluster.close();
    }

    private byte[] bytes(int length) {
        byte[] bytes = new byte[length];
        random.nextBytes(bytes);
        return bytes;
    }

    private static void writeStep(Path staging, long step, byte[] model) throws Exception {
        try (CheckpointWriter writer = CheckpointWriter.open(staging, 8 << 20, 2)) {
            CheckpointWriter.Checkpoint checkpoint = writer.begin(step);
            checkpoint.write("model.bin", ByteBuffer.wrap(model));
            checkpoint.commit().join();
        }
    }

    private Process agentProcess(Path staging, String dest, List<String> jvm, String... options) throws IOException {
        List<String> arguments = new ArrayList<>(List.of("checkpoint", "agent", "--staging", staging.toString(), "--dest", dest,
                "--server", cluster.server().rpcAddress().toString(), "--secret-file", cluster.server().secretFile().toString(),
                "--parallel", "1"));
        arguments.addAll(List.of(options));
        List<String> withHeap = new ArrayList<>(List.of("-Xmx256m"));
        withHeap.addAll(jvm);
        return new ProcessBuilder(TestProcesses.plinth(withHeap, arguments)).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(directory.resolve("agent.log").toFile())).start();
    }

    private static void kill(Process process) throws InterruptedException {
        process.destroyForcibly();
        assertThat(process.waitFor(30, TimeUnit.SECONDS)).isTrue();
    }

    private static void await(String what, BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("timed out waiting for " + what);
            }
            Thread.sleep(50);
        }
    }

    private CheckpointCatalog catalog(String dest) {
        return new CheckpointCatalog(new PlinthCheckpoints(plinth, dest), null);
    }

    /** What every check after a fault asserts: only steps complete on Plinth are listed complete, and the newest restores byte for byte. */
    private void assertNewestRestores(String dest, long expectedStep, byte[] expected, String label) throws Exception {
        for (CheckpointCatalog.Entry entry : catalog(dest).list()) {
            assertThat(entry.state().equals("complete")).as("%s: %s", label, entry).isEqualTo(entry.durable());
        }
        CheckpointCatalog catalog = catalog(dest);
        assertThat(catalog.latest()).as(label).isEqualTo(expectedStep);
        Path to = directory.resolve("restored-" + label);
        catalog.restore(expectedStep, null, to, 60_000, ignored -> {});
        assertThat(Files.readAllBytes(to.resolve("model.bin"))).as(label).isEqualTo(expected);
    }

    @Test
    void killedMidUploadAndMidArchiveTheAgentResumes() throws Exception {
        Path staging = directory.resolve("staging");
        byte[] first = bytes(3 << 20);
        writeStep(staging, 1, first);
        new CheckpointAgent(plinth, CheckpointAgent.Options.defaults(staging, "/faults"), System.out::println).pass(true);
        assertNewestRestores("/faults", 1, first, "before");

        // step 2: 48 MiB, uploaded slowly, and the agent killed half way
        byte[] second = bytes(48 << 20);
        writeStep(staging, 2, second);
        Process slow = agentProcess(staging, "/faults", List.of("-Dplinth.faults=" + FaultPoints.CHECKPOINT_BLOCK_DELAY_MILLIS + "=400"));
        await("the upload of step 2 to start", () -> plinth.exists("/faults/" + CheckpointNames.partial(2)));
        Thread.sleep(1200);
        kill(slow);
        assertThat(plinth.exists("/faults/step-000002")).as("step 2 completed before the kill: the test did not test").isFalse();
        assertThat(new LocalStaging(staging).durable(2)).isFalse();
        assertNewestRestores("/faults", 1, first, "killed-mid-upload");

        // restarted (archiving everything, one hot step): it finishes step 2; killed again while the archives run
        FaultPoints.set(FaultPoints.HSM_PART_DELAY_MILLIS, "50");
        Process archiving = agentProcess(staging, "/faults", List.of(), "--archive-every", "1", "--keep-hot", "1");
        await("step 2 to be durable", () -> new LocalStaging(staging).durable(2));
        kill(archiving);
        assertNewestRestores("/faults", 2, second, "killed-mid-archive");

        // restarted once more: step 2 is archived (a step completed earlier is not: its marker says so), step 1 stays
        FaultPoints.clear();
        writeStep(staging, 3, bytes(1 << 20));
        Process last = agentProcess(staging, "/faults", List.of(), "--archive-every", "1", "--keep-hot", "1");
        try {
            PlinthCheckpoints store = new PlinthCheckpoints(plinth, "/faults");
            await("step 2 to be released once archived", () -> {
                PlinthCheckpoints.StoredStep step = store.completeStep(2);
                return step != null && store.files(step).stream().allMatch(PlinthCheckpoints.StoredFile::released);
            });
            // step 1 was committed without archiving and is beyond --keep-hot: removed, never half-listed
            await("step 1 to be removed", () -> !plinth.exists("/faults/step-000001"));
        } finally {
            kill(last);
        }
        CheckpointCatalog.Entry cold = catalog("/faults").list().stream().filter(e -> e.step() == 2).findFirst().orElseThrow();
        assertThat(cold.tiers()).containsExactly("cold");
        Path to = directory.resolve("restored-cold");
        assertThat(catalog("/faults").restore(2, null, to, 60_000, ignored -> {}).tier()).isEqualTo("cold");
        assertThat(Files.readAllBytes(to.resolve("model.bin"))).isEqualTo(second);
    }

    @Test
    void aFullStagingDiskCommitsNothingAndTheLastStepStillRestores() throws Exception {
        dev.plinth.testing.Prerequisites.requireRoot(); // it mounts a tmpfs
        Path disk = Files.createDirectories(directory.resolve("small-disk"));
        TestProcesses.run(List.of("mount", "-t", "tmpfs", "-o", "size=6m", "plinth-checkpoint-full-test", disk.toString()), Duration.ofSeconds(30));
        try {
            byte[] model = bytes(2 << 20);
            writeStep(disk, 1, model);
            CheckpointAgent agent = new CheckpointAgent(plinth, CheckpointAgent.Options.defaults(disk, "/full"), System.out::println);
            agent.prepareDestination();
            agent.pass(true);
            // step 2 does not fit: its write fails, the commit fails, and no step 2 exists anywhere
            assertThatThrownBy(() -> writeStep(disk, 2, bytes(5 << 20))).isInstanceOf(CompletionException.class)
                    .hasStackTraceContaining("No space left on device");
            assertThat(new LocalStaging(disk).committedParts(new ArrayList<>())).extracting(LocalStaging.Part::step).containsExactly(1L);
            agent.pass(true);
            assertThat(plinth.exists("/full/" + CheckpointNames.partial(2))).isFalse();
            assertNewestRestores("/full", 1, model, "full-disk");
            // the failed attempt removed what it wrote, so the next step fits
            assertThat(Files.exists(new LocalStaging(disk).uncommitted(2, 0, 1))).isFalse();
            byte[] third = bytes(2 << 20);
            writeStep(disk, 3, third);
            agent.pass(true);
            assertNewestRestores("/full", 3, third, "after-full-disk");
        } finally {
            TestProcesses.run(List.of("umount", "-l", disk.toString()), Duration.ofSeconds(30));
        }
    }
}
