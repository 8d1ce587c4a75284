package dev.plinth.integration.checkpoint;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.plinth.checkpoint.CheckpointAgent;
import dev.plinth.checkpoint.CheckpointCatalog;
import dev.plinth.checkpoint.CheckpointNames;
import dev.plinth.checkpoint.CheckpointWriter;
import dev.plinth.checkpoint.LocalStaging;
import dev.plinth.checkpoint.PlinthCheckpoints;
import dev.plinth.checkpoint.RankManifest;
import dev.plinth.client.PlinthClient;
import dev.plinth.common.PlinthException;
import dev.plinth.integration.ClusterSmokeTest;
import dev.plinth.integration.MiniCluster;
import dev.plinth.wire.messages.HsmMessages;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * The checkpoint flow against an in-process cluster: the Java writer commits into staging, the
 * agent uploads, links unchanged files, completes steps once every rank is there, archives,
 * releases and prunes; restore and verify read them back; and no incomplete step is ever complete.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class CheckpointTest {
    @TempDir
    static Path directory;
    private MiniCluster cluster;
    private PlinthClient plinth;
    private final Random random = new Random(39);
    private final List<String> reported = new ArrayList<>();

    @BeforeAll
    void start() {
        cluster = MiniCluster.start(directory.resolve("data"), MiniCluster.testConfig().with("hsm.part-bytes", "1048576"));
        plinth = cluster.client();
    }

    @AfterAll
    void stop() {
        plinth.close();
        cluster.close();
    }

    private byte[] bytes(int length) {
        byte[] bytes = new byte[length];
        random.nextBytes(bytes);
        return bytes;
    }

    private CheckpointAgent agent(Path staging, String dest, int keepLocal, int keepHot, int keepCold, int archiveEvery) {
        CheckpointAgent agent = new CheckpointAgent(plinth, new CheckpointAgent.Options(staging, dest, keepLocal, keepHot, keepCold,
                archiveEvery, 1, 2, 100, true), reported::add);
        agent.prepareDestination();
        return agent;
    }

    /** Commits a one-rank step with the Java writer: one file from a buffer, one from a stream. */
    private void writeStep(Path staging, long step, byte[] model, byte[] config) throws Exception {
        try (CheckpointWriter writer = CheckpointWriter.open(staging, 1 << 20, 2)) {
            CheckpointWriter.Checkpoint checkpoint = writer.begin(step);
            checkpoint.write("model.bin", ByteBuffer.wrap(model));
            checkpoint.write("meta/config.json", new ByteArrayInputStream(config));
            checkpoint.commit().join();
            assertThat(writer.heldBytes()).isZero();
        }
    }

    private CheckpointCatalog catalog(String dest, Path staging) {
        return new CheckpointCatalog(new PlinthCheckpoints(plinth, dest), staging == null ? null : new LocalStaging(staging));
    }

    private CheckpointCatalog.Entry entry(String dest, Path staging, long step) throws IOException {
        return catalog(dest, staging).list().stream().filter(e -> e.step() == step).findFirst().orElseThrow();
    }

    @Test
    void uploadsCommittedStepsAndLinksUnchangedFiles() throws Exception {
        Path staging = directory.resolve("staging-links");
        byte[] config = "{\"lr\": 0.01}\n".getBytes();
        byte[] model1 = bytes(3 << 20);
        byte[] model2 = bytes(3 << 20);
        writeStep(staging, 100, model1, config);
        writeStep(staging, 200, model2, config);
        RankManifest staged = RankManifest.parse(Files.readString(staging.resolve("step-000200/MANIFEST.json")));
        assertThat(staged.files()).extracting(RankManifest.FileEntry::path).containsExactly("meta/config.json", "model.bin");
        assertThat(staged.files()).allMatch(file -> file.crc32c() != null);

        CheckpointAgent agent = agent(staging, "/links", 2, 3, 0, 0);
        assertThat(agent.pass(true).completed()).containsExactly(100L, 200L);
        assertThat(new LocalStaging(staging).durable(200)).isTrue();

        assertThat(ClusterSmokeTest.readAll(plinth, "/links/step-000100/model.bin")).isEqualTo(model1);
        assertThat(ClusterSmokeTest.readAll(plinth, "/links/step-000200/model.bin")).isEqualTo(model2);
        // the unchanged file is the earlier step's inode, not a second copy
        assertThat(plinth.stat("/links/step-000200/meta/config.json").inodeId()).isEqualTo(plinth.stat("/links/step-000100/meta/config.json").inodeId());
        assertThat(plinth.stat("/links/step-000200/model.bin").inodeId()).isNotEqualTo(plinth.stat("/links/step-000100/model.bin").inodeId());
        assertThat(plinth.exists("/links/step-000200/" + CheckpointNames.MARKER)).isTrue();

        CheckpointCatalog.Entry listed = entry("/links", staging, 200);
        assertThat(listed.state()).isEqualTo("complete");
        assertThat(listed.tiers()).containsExactly("local", "hot");
        assertThat(listed.durable()).isTrue();
        assertThat(catalog("/links", null).verify(200, ignored -> {}).problems()).isEmpty();

        // a later pass finds nothing to do: steps are immutable once complete
        assertThat(agent.pass(true).uploadedParts()).isZero();

        Path restored = directory.resolve("restored-links");
        CheckpointCatalog.Restored result = catalog("/links", null).restore(200, null, restored, 10_000, ignored -> {});
        assertThat(result.tier()).isEqualTo("hot");
        assertThat(Files.readAllBytes(restored.resolve("model.bin"))).isEqualTo(model2);
        assertThat(Files.readAllBytes(restored.resolve("meta/config.json"))).isEqualTo(config);
    }

    @Test
    void anUncommittedOrPartStepIsNeverComplete() throws Exception {
        Path staging = directory.resolve("staging-partial");
        byte[] model = bytes(1 << 20);
        writeStep(staging, 1, model, new byte[] {1});
        // a trainer killed in the middle of step 2: a .tmp directory with half a file
        Path killed = new LocalStaging(staging).uncommitted(2, 0, 1);
        Files.createDirectories(killed);
        Files.write(killed.resolve("model.bin"), bytes(1000));
        CheckpointAgent agent = agent(staging, "/partial", 2, 3, 0, 0);
        agent.pass(true);
        assertThat(plinth.exists("/partial/step-000002")).isFalse();
        assertThat(plinth.exists("/partial/" + CheckpointNames.partial(2))).isFalse();
        assertThat(entry("/partial", staging, 2).state()).isEqualTo("incomplete");
        assertThat(catalog("/partial", staging).latest()).isEqualTo(1);
        assertThatThrownBy(() -> catalog("/partial", staging).restore(2, null, directory.resolve("r2"), 1000, ignored -> {}))
                .isInstanceOf(PlinthException.class).hasMessageContaining("not a complete checkpoint");

        // three ranks on two nodes: complete only when the last one arrives
        Path nodeA = directory.resolve("node-a");
        Path nodeB = directory.resolve("node-b");
        byte[][] shards = {bytes(700_000), bytes(900_000), bytes(300_000)};
        for (int rank = 0; rank < 3; rank++) {
            try (CheckpointWriter writer = CheckpointWriter.open(rank < 2 ? nodeA : nodeB, 256 << 10, 1)) {
                CheckpointWriter.Checkpoint part = writer.begin(10, rank, 3);
                var written = part.write("shard.pt", ByteBuffer.wrap(shards[rank]));
                if (rank < 2) {
                    part.commit().join();
                } else {
                    written.join(); // written, not committed: the rank's trainer is still at it
                }
            }
        }
        agent(nodeA, "/ranks", 2, 3, 0, 0).pass(true);
        CheckpointCatalog.Entry waiting = entry("/ranks", nodeA, 10);
        assertThat(waiting.state()).isEqualTo("incomplete");
        assertThat(waiting.uploading()).isTrue();
        assertThat(waiting.localRanks()).containsExactly(0, 1);
        assertThat(new LocalStaging(nodeA).durable(10)).isFalse();
        assertThatThrownBy(() -> catalog("/ranks", null).latest()).isInstanceOf(PlinthException.class);

        new LocalStaging(nodeB).commit(10, 2, 3);
        agent(nodeB, "/ranks", 2, 3, 0, 0).pass(true);
        assertThat(entry("/ranks", null, 10).state()).isEqualTo("complete");
        assertThat(new LocalStaging(nodeB).durable(10)).isTrue();
        agent(nodeA, "/ranks", 2, 3, 0, 0).pass(true); // node A learns the step is durable
        assertThat(new LocalStaging(nodeA).durable(10)).isTrue();
        for (int rank = 0; rank < 3; rank++) {
            Path to = directory.resolve("rank-" + rank);
            catalog("/ranks", null).restore(10, rank, to, 1000, ignored -> {});
            assertThat(Files.readAllBytes(to.resolve("shard.pt"))).isEqualTo(shards[rank]);
        }
        Path whole = directory.resolve("whole");
        catalog("/ranks", null).restore(10, null, whole, 1000, ignored -> {});
        assertThat(Files.readAllBytes(whole.resolve("rank-00002/shard.pt"))).isEqualTo(shards[2]);
    }

    @Test
    void archivesReleasesAndRestoresFromTheColdTier() throws Exception {
        Path staging = directory.resolve("staging-cold");
        byte[] config = bytes(100_000);
        List<byte[]> models = new ArrayList<>();
        CheckpointAgent agent = agent(staging, "/cold", 1, 1, 2, 1);
        for (long step = 1; step <= 3; step++) {
            models.add(bytes(2 << 20));
            writeStep(staging, step, models.getLast(), config);
            agent.pass(true);
            awaitArchived("/cold", step);
        }
        agent.pass(true); // releases what is archived beyond --keep-hot
        PlinthCheckpoints store = new PlinthCheckpoints(plinth, "/cold");
        // step 1: removed (beyond --keep-cold 2); step 2: cold only, but its config is shared with step 3 and stays
        assertThat(plinth.exists("/cold/step-000001")).isFalse();
        List<PlinthCheckpoints.StoredFile> step2 = store.files(store.completeStep(2));
        assertThat(step2).filteredOn(f -> f.path().endsWith("model.bin")).allMatch(PlinthCheckpoints.StoredFile::released);
        assertThat(step2).filteredOn(f -> f.path().endsWith("config.json")).noneMatch(PlinthCheckpoints.StoredFile::released);
        assertThat(entry("/cold", staging, 2).tiers()).containsExactly("cold");
        assertThat(entry("/cold", staging, 3).tiers()).containsExactly("local", "hot", "cold");
        // the local tier keeps one step
        assertThat(Files.exists(staging.resolve("step-000002"))).isFalse();
        assertThat(Files.exists(staging.resolve("step-000003"))).isTrue();

        Path restored = directory.resolve("restored-cold");
        CheckpointCatalog.Restored result = catalog("/cold", staging).restore(2, null, restored, 60_000, ignored -> {});
        assertThat(result.tier()).isEqualTo("cold");
        assertThat(Files.readAllBytes(restored.resolve("model.bin"))).isEqualTo(models.get(1));
        assertThat(Files.readAllBytes(restored.resolve("meta/config.json"))).isEqualTo(config);
        assertThat(reported).anyMatch(line -> line.contains("step-000001: removed (beyond --keep-cold)"));
    }

    private void awaitArchived(String dest, long step) throws InterruptedException {
        PlinthCheckpoints store = new PlinthCheckpoints(plinth, dest);
        for (int i = 0; i < 600; i++) {
            if (store.archived(store.completeStep(step))) {
                return;
            }
            Thread.sleep(20);
        }
        throw new AssertionError(CheckpointNames.step(step) + " was not archived: " + store.files(store.completeStep(step)).stream()
                .map(f -> f.path() + "=" + HsmMessages.states(f.attributes())).toList());
    }

    @Test
    void aRestartedUploadKeepsWhatMatchesAndRewritesWhatDoesNot() throws Exception {
        Path staging = directory.resolve("staging-resume");
        byte[] model = bytes(2 << 20);
        byte[] config = bytes(5000);
        writeStep(staging, 7, model, config);
        // what an agent killed mid-upload leaves: the partial step with one good file and one of the right size but wrong bytes
        agent(staging, "/resume", 2, 3, 0, 0);
        plinth.mkdirs("/resume/" + CheckpointNames.partial(7) + "/meta", 0755);
        try (var file = plinth.create("/resume/" + CheckpointNames.partial(7) + "/model.bin", 0644, true, null)) {
            file.write(0, ByteBuffer.wrap(model));
        }
        try (var file = plinth.create("/resume/" + CheckpointNames.partial(7) + "/meta/config.json", 0644, true, null)) {
            file.write(0, ByteBuffer.wrap(bytes(5000)));
        }
        assertThat(entry("/resume", null, 7).state()).isEqualTo("incomplete");
        agent(staging, "/resume", 2, 3, 0, 0).pass(true);
        assertThat(reported).anyMatch(line -> line.contains("2.0 MiB verified from an earlier run"));
        assertThat(ClusterSmokeTest.readAll(plinth, "/resume/step-000007/meta/config.json")).isEqualTo(config);
        assertThat(catalog("/resume", null).verify(7, ignored -> {}).problems()).isEmpty();
    }

    @Test
    void aStagedCopyThatChangedAfterItsCommitIsRefused() throws Exception {
        Path staging = directory.resolve("staging-changed");
        writeStep(staging, 3, bytes(100_000), bytes(10));
        Path model = staging.resolve("step-000003/model.bin");
        byte[] changed = Files.readAllBytes(model);
        changed[500] ^= 1;
        Files.write(model, changed);
        // a later good step still goes: one bad step does not hold up the others
        writeStep(staging, 4, bytes(1000), bytes(10));
        CheckpointAgent agent = agent(staging, "/changed", 2, 3, 0, 0);
        assertThat(agent.pass(true).completed()).containsExactly(4L);
        assertThat(reported).filteredOn(line -> line.contains("step-000003: not uploaded")).singleElement()
                .satisfies(line -> assertThat(line).contains("not what the trainer committed"));
        agent.pass(true);
        assertThat(reported).as("reported once a minute, not once a pass")
                .filteredOn(line -> line.contains("step-000003: not uploaded")).hasSize(1);
        assertThat(plinth.exists("/changed/step-000003")).isFalse();
        assertThat(plinth.exists("/changed/" + CheckpointNames.partial(3) + "/model.bin")).isFalse();
        // and restore from that staging copy is refused too, in favour of nothing (the step is not on Plinth)
        assertThatThrownBy(() -> catalog("/changed", staging).restore(3, null, directory.resolve("r3"), 1000, ignored -> {}))
                .isInstanceOf(PlinthException.class);
    }

    @Test
    void restoreFallsBackToPlinthWhenTheLocalCopyIsDamaged() throws Exception {
        Path staging = directory.resolve("staging-damaged");
        byte[] model = bytes(300_000);
        writeStep(staging, 4, model, bytes(10));
        agent(staging, "/damaged", 2, 3, 0, 0).pass(true);
        Path restored = directory.resolve("restored-local");
        assertThat(catalog("/damaged", staging).restore(4, null, restored, 1000, ignored -> {}).tier()).isEqualTo("local");
        Path local = staging.resolve("step-000004/model.bin");
        byte[] damaged = Files.readAllBytes(local);
        damaged[0] ^= 1;
        Files.write(local, damaged);
        Path again = directory.resolve("restored-damaged");
        assertThat(catalog("/damaged", staging).restore(4, null, again, 1000, ignored -> {}).tier()).isEqualTo("hot");
        assertThat(Files.readAllBytes(again.resolve("model.bin"))).isEqualTo(model);
        assertThat(Files.list(again).map(p -> p.getFileName().toString())).noneMatch(name -> name.endsWith(".restoring"));
    }
}
