package dev.plinth.integration.checkpoint;

import static org.assertj.core.api.Assertions.assertThat;

import dev.plinth.checkpoint.CheckpointAgent;
import dev.plinth.client.PlinthClient;
import dev.plinth.common.FileTrees;
import dev.plinth.integration.MiniCluster;
import dev.plinth.integration.TestProcesses;
import dev.plinth.testing.Prerequisites;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * Python trainers: the standard-library helper (python/plinth_checkpoint.py) commits ranks, waits
 * for durability and restores through the CLI; the PyTorch example is stopped abruptly, resumed
 * from the newest checkpoint on Plinth, and ends with the same model as an uninterrupted run.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class CheckpointPythonIT {
    private static final Path REPOSITORY = Path.of(System.getProperty("user.dir")).getParent();

    @TempDir
    static Path directory;
    private MiniCluster cluster;
    private PlinthClient plinth;
    private final List<Thread> agents = new ArrayList<>();
    private final AtomicBoolean stopping = new AtomicBoolean();

    @BeforeAll
    void start() {
        cluster = MiniCluster.start(directory.resolve("data"));
        plinth = cluster.client();
    }

    @AfterAll
    void stop() throws InterruptedException {
        stopping.set(true);
        for (Thread agent : agents) {
            agent.join(10_000);
        }
        plinth.close();
        cluster.close();
    }

    private void startAgent(Path staging, String dest) {
        CheckpointAgent agent = new CheckpointAgent(plinth, new CheckpointAgent.Options(staging, dest, 2, 3, 0, 0, 1, 2, 100, true),
                System.out::println);
        agents.add(Thread.ofPlatform().name("agent " + dest).start(() -> {
            try {
                agent.run(stopping::get);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }));
    }

    /** The helper's plinth command runs the CLI from this JVM's class path. */
    private Map<String, String> environment() {
        return Map.of("PLINTH_BIN", String.join(" ", TestProcesses.plinth(List.of("-Xmx256m"), List.of())),
                "PYTHONPATH", REPOSITORY.resolve("python").toString());
    }

    private List<String> plinthArguments() {
        return List.of("--server=" + cluster.server().rpcAddress(), "--secret-file=" + cluster.server().secretFile());
    }

    @Test
    void theHelperCommitsRanksWaitsForDurabilityAndRestores() throws Exception {
        Prerequisites.require(Prerequisites.PYTHON);
        Path staging = directory.resolve("helper-staging");
        startAgent(staging, "/python");
        String script = """
                import json, os, sys
                import plinth_checkpoint as ckpt
                staging, to, server, secret = sys.argv[1:5]
                args = [server, secret]
                for rank in range(2):
                    d = ckpt.tmp_dir(staging, 7, rank=rank, world_size=2)
                    with open(os.path.join(d, "shard.bin"), "wb") as f:
                        f.write(bytes([rank]) * (100000 + rank))
                    os.makedirs(os.path.join(d, "extra"))
                    open(os.path.join(d, "extra", "note.txt"), "w").write("rank %d" % rank)
                    if rank == 0:
                        assert ckpt.latest(staging) is None, "half a step is not a checkpoint"
                    ckpt.commit(staging, 7, rank=rank, world_size=2)
                # a step whose writer dies before its commit: never complete
                d = ckpt.tmp_dir(staging, 8)
                open(os.path.join(d, "half.bin"), "wb").write(b"x")
                assert ckpt.wait_durable(staging, 7, timeout=60), "step 7 did not become durable"
                assert not ckpt.is_durable(staging, 8)
                assert ckpt.latest(staging, "/python", plinth_args=args) == 7
                listed = {s["step"]: s for s in ckpt.list_steps("/python", staging, plinth_args=args)}
                assert listed[7]["state"] == "complete" and "hot" in listed[7]["tiers"], listed
                assert listed[8]["state"] == "incomplete", listed
                info = ckpt.restore("/python", to, rank=1, plinth_args=args)
                assert info["step"] == 7 and info["files"] == 2, info
                assert open(os.path.join(to, "shard.bin"), "rb").read() == bytes([1]) * 100001
                manifest = json.load(open(os.path.join(to, "MANIFEST.json")))
                assert manifest["rank"] == 1 and all(f["crc32c"] is not None for f in manifest["files"]), manifest
                print("helper ok")
                """;
        String output = TestProcesses.run(List.of("/usr/bin/python3", "-c", script, staging.toString(), directory.resolve("helper-restored").toString(),
                plinthArguments().get(0), plinthArguments().get(1)), environment(), Duration.ofMinutes(3));
        assertThat(output).contains("helper ok");
    }

    @Test
    void aPyTorchLoopResumesFromTheNewestCheckpointBitForBit() throws Exception {
        Prerequisites.require(Prerequisites.PYTHON, Prerequisites.TORCH);
        Path staging = directory.resolve("torch-staging");
        startAgent(staging, "/torch");
        String train = REPOSITORY.resolve("examples/pytorch-checkpoint/train.py").toString();
        List<String> common = new ArrayList<>(List.of("/usr/bin/python3", train, "--staging", staging.toString(), "--dest", "/torch",
                "--steps", "30", "--every", "10"));
        plinthArguments().forEach(argument -> common.add("--plinth-arg=" + argument));

        List<String> stopped = new ArrayList<>(common);
        stopped.addAll(List.of("--stop-at", "25"));
        TestProcesses.Result killed = TestProcesses.runAllowingFailure(stopped, environment(), Duration.ofMinutes(3));
        assertThat(killed.exitCode()).as(killed.output()).isEqualTo(9);
        awaitDurable(staging, 20);
        // the job comes back on another node: its staging directory has nothing
        try (Stream<Path> steps = Files.list(staging)) {
            for (Path step : steps.filter(p -> p.getFileName().toString().startsWith("step-")).toList()) {
                FileTrees.delete(step);
            }
        }
        List<String> resumed = new ArrayList<>(common);
        resumed.addAll(List.of("--resume", "--final", directory.resolve("resumed.pt").toString()));
        assertThat(TestProcesses.run(resumed, environment(), Duration.ofMinutes(3))).contains("resumed from step 20 (hot tier)");

        List<String> uninterrupted = new ArrayList<>(List.of("/usr/bin/python3", train, "--staging", directory.resolve("reference").toString(),
                "--dest", "/unused", "--steps", "30", "--every", "10", "--final", directory.resolve("reference.pt").toString()));
        TestProcesses.run(uninterrupted, environment(), Duration.ofMinutes(3));
        String compare = """
                import sys, torch
                a, b = torch.load(sys.argv[1]), torch.load(sys.argv[2])
                assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a), "models differ"
                print("identical")
                """;
        assertThat(TestProcesses.run(List.of("/usr/bin/python3", "-c", compare, directory.resolve("resumed.pt").toString(),
                directory.resolve("reference.pt").toString()), Duration.ofMinutes(1))).contains("identical");
    }

    private static void awaitDurable(Path staging, long step) throws InterruptedException {
        Path marker = staging.resolve(".durable").resolve(dev.plinth.checkpoint.CheckpointNames.step(step));
        for (int i = 0; i < 600 && !Files.exists(marker); i++) {
            Thread.sleep(100);
        }
        assertThat(marker).exists();
    }
}
