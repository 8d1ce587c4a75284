package dev.plinth.checkpoint;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.plinth.common.PlinthException;
import java.nio.ByteBuffer;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletionException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class LocalStagingTest {
    @TempDir
    Path staging;

    @Test
    void namesFollowTheProtocol() {
        assertThat(CheckpointNames.step(500)).isEqualTo("step-000500");
        assertThat(CheckpointNames.rank(3)).isEqualTo("rank-00003");
        assertThat(CheckpointNames.parseStep("step-000500")).hasValue(500);
        assertThat(CheckpointNames.parseStep("step-000500.tmp")).isEmpty();
        assertThat(CheckpointNames.parseUncommittedStep("step-000500.tmp")).hasValue(500);
        assertThat(CheckpointNames.parsePartial(".step-000500.partial")).hasValue(500);
        assertThat(CheckpointNames.parseRank("rank-00003.tmp")).isEmpty();
    }

    @Test
    void manifestsAreCheckedWhenRead() {
        RankManifest manifest = new RankManifest(5, 1, 2, List.of(new RankManifest.FileEntry("a/b.pt", 10, 0xFFFFFFFFL),
                new RankManifest.FileEntry("c", 0, null)));
        assertThat(RankManifest.parse(manifest.toJson())).isEqualTo(manifest);
        for (String bad : List.of("[]", "{\"step\":1,\"rank\":2,\"world_size\":2,\"files\":[]}",
                "{\"step\":1,\"rank\":0,\"world_size\":1,\"files\":[{\"path\":\"../x\",\"size\":1}]}",
                "{\"step\":1,\"rank\":0,\"world_size\":1,\"files\":[{\"path\":\"/x\",\"size\":1}]}",
                "{\"step\":1,\"rank\":0,\"world_size\":1,\"files\":[{\"path\":\"x\",\"size\":-1}]}",
                "{\"step\":1,\"rank\":0,\"world_size\":1,\"files\":[{\"path\":\"x\",\"size\":1,\"crc32c\":4294967296}]}",
                "{\"step\":1,\"rank\":0,\"world_size\":1,\"files\":[{\"path\":\"x\",\"size\":1},{\"path\":\"x\",\"size\":1}]}",
                "{\"step\":1,\"rank\":0,\"world_size\":1,\"files\":[{\"path\":\"MANIFEST.json\",\"size\":1}]}")) {
            assertThatThrownBy(() -> RankManifest.parse(bad)).as(bad).isInstanceOf(PlinthException.class);
        }
    }

    @Test
    void onlyTheRenameCommitsAStep() throws Exception {
        LocalStaging local = new LocalStaging(staging);
        Path writing = local.uncommitted(7, 0, 1);
        Files.createDirectories(writing.resolve("sub"));
        Files.write(writing.resolve("sub/weights.bin"), new byte[] {1, 2, 3});
        assertThat(local.committedParts(new ArrayList<>())).isEmpty();
        assertThat(local.uncommittedSteps()).containsExactly(7L);

        RankManifest manifest = local.commit(7, 0, 1);
        assertThat(manifest.files()).containsExactly(new RankManifest.FileEntry("sub/weights.bin", 3, LocalStaging.crc32c(
                staging.resolve("step-000007/sub/weights.bin"))));
        assertThat(local.committedParts(new ArrayList<>())).extracting(LocalStaging.Part::step).containsExactly(7L);
        assertThat(local.uncommittedSteps()).isEmpty();
        Files.createDirectories(writing);
        assertThatThrownBy(() -> local.commit(7, 0, 1)).isInstanceOf(FileAlreadyExistsException.class);
    }

    @Test
    void aStepIsBeingWrittenUntilItsDirectoryIsStill() throws Exception {
        LocalStaging local = new LocalStaging(staging);
        assertThat(local.beingWritten(1000)).isFalse();
        Path rank = Files.createDirectories(local.uncommitted(3, 1, 4));
        Files.write(rank.resolve("shard.pt"), new byte[10]);
        assertThat(local.beingWritten(1000)).isTrue();
        java.nio.file.attribute.FileTime old = java.nio.file.attribute.FileTime.fromMillis(System.currentTimeMillis() - 5000);
        for (Path path : List.of(rank.resolve("shard.pt"), rank, rank.getParent())) {
            Files.setLastModifiedTime(path, old);
        }
        assertThat(local.beingWritten(1000)).as("a writer that died stops counting").isFalse();
        local.commit(3, 1, 4);
        assertThat(local.beingWritten(1000)).isFalse();
    }

    @Test
    void theWriterStaysWithinItsBudgetAndCommitsNothingAfterAFailedWrite() throws Exception {
        byte[] big = new byte[5 << 20];
        new java.util.Random(1).nextBytes(big);
        try (CheckpointWriter writer = CheckpointWriter.open(staging, 1 << 20, 2)) {
            CheckpointWriter.Checkpoint step = writer.begin(9, 1, 2);
            step.write("big.bin", ByteBuffer.wrap(big));
            assertThat(writer.heldBytes()).isLessThanOrEqualTo(1 << 20);
            Path committed = step.commit().join();
            assertThat(committed).isEqualTo(staging.resolve("step-000009/rank-00001"));
            assertThat(Files.readAllBytes(committed.resolve("big.bin"))).isEqualTo(big);

            CheckpointWriter.Checkpoint failing = writer.begin(10);
            failing.write("from-a-broken-stream", new java.io.InputStream() {
                @Override
                public int read() throws java.io.IOException {
                    throw new java.io.IOException("the source went away");
                }
            });
            assertThatThrownBy(() -> failing.commit().join()).isInstanceOf(CompletionException.class);
            assertThat(Files.exists(staging.resolve("step-000010"))).isFalse();
            assertThat(writer.heldBytes()).isZero();
        }
    }
}
