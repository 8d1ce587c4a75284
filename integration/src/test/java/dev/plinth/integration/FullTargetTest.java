package dev.plinth.integration;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.plinth.client.PlinthClient;
import dev.plinth.client.PlinthFile;
import dev.plinth.common.ErrorCode;
import dev.plinth.common.Layout;
import dev.plinth.common.PlinthException;
import dev.plinth.wire.messages.MetaMessages;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A full target: the writer gets ENOSPC, what was written before stays intact, and space comes back. */
class FullTargetTest {
    @TempDir
    Path directory;

    @Test
    void noSpaceIsReportedAndNothingIsLost() throws Exception {
        var config = MiniCluster.testConfig().with("target.capacity", "4M").with("server.targets", "2");
        byte[] kept = new byte[3 << 20];
        new Random(3).nextBytes(kept);
        Layout oneTarget = new Layout(1, 1 << 20, 1 << 20, "default", 1, List.of());
        try (MiniCluster cluster = MiniCluster.start(directory, config); PlinthClient client = cluster.client()) {
            try (PlinthFile file = client.create("/kept", 0644, true, oneTarget)) {
                file.write(0, ByteBuffer.wrap(kept));
            }
            int keptTarget = client.clusterMap().chain(client.stat("/kept").layout().chainIds().getFirst()).targetIds().getFirst();
            // fill every target past its capacity
            Layout sameTarget = oneTarget;
            assertThatThrownBy(() -> {
                for (int attempt = 0; attempt < 4; attempt++) {
                    try (PlinthFile file = client.create("/filler" + attempt, 0644, true, sameTarget)) {
                        file.write(0, ByteBuffer.wrap(new byte[2 << 20]));
                    }
                }
            }).isInstanceOfSatisfying(PlinthException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.NO_SPACE));
            assertThat(ClusterSmokeTest.readAll(client, "/kept")).isEqualTo(kept);
            for (var target : cluster.server().storage().targets()) {
                assertThat(target.usedBytes()).as("target %d", target.targetId()).isLessThanOrEqualTo(4 << 20);
            }
            assertThat(keptTarget).isPositive();
            // delete the fillers and the space comes back
            for (int attempt = 0; attempt < 4; attempt++) {
                if (client.exists("/filler" + attempt)) {
                    client.delete("/filler" + attempt);
                }
            }
            long deadline = System.currentTimeMillis() + MetaMessages.REMOVED_FILE_KEPT_MILLIS + 10_000; // removed files' chunks outlive them a while
            while (cluster.server().storage().usage().stream().mapToLong(u -> u.usedBytes()).sum() > kept.length
                    && System.currentTimeMillis() < deadline) {
                Thread.sleep(50);
            }
            try (PlinthFile file = client.create("/after", 0644, true, oneTarget)) {
                file.write(0, ByteBuffer.wrap(new byte[512 << 10]));
            }
            assertThat(client.stat("/after").sizeBytes()).isEqualTo(512 << 10);
        }
    }
}
