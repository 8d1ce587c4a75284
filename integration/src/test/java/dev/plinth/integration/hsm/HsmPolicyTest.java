package dev.plinth.integration.hsm;

import static dev.plinth.wire.messages.HsmMessages.*;
import static org.assertj.core.api.Assertions.assertThat;

import dev.plinth.client.PlinthClient;
import dev.plinth.client.PlinthFile;
import dev.plinth.hsm.PolicyRules;
import dev.plinth.hsm.PolicyRun;
import dev.plinth.integration.MiniCluster;
import dev.plinth.wire.messages.MetaMessages;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Policy runs, dry and real, over files whose times the test sets. */
class HsmPolicyTest {
    private static final long DAY = 86_400L * 1_000_000_000;

    @TempDir
    Path directory;

    private static void write(PlinthClient plinth, String path, int length) {
        try (PlinthFile file = plinth.create(path, 0644, true, null)) {
            file.write(0, ByteBuffer.wrap(new byte[length]));
        }
    }

    private static void age(PlinthClient plinth, String path, int mask, long agoNanos) {
        long now = System.currentTimeMillis() * 1_000_000;
        plinth.setAttr(plinth.stat(path).inodeId(), mask, 0, 0, 0, 0, now - agoNanos, now - agoNanos);
    }

    @Test
    void aRemovedFilesCopyLeavesTheArchiveAfterTheGracePeriod() throws Exception {
        try (MiniCluster cluster = MiniCluster.start(directory, MiniCluster.testConfig().with("hsm.removed-copy-grace-millis", "1"));
             PlinthClient plinth = cluster.client()) {
            write(plinth, "/doomed", 300_000);
            long inode = plinth.stat("/doomed").inodeId();
            plinth.hsm().request(inode, ARCHIVE, 1);
            for (int i = 0; i < 500 && plinth.hsm().state(inode).action() != null; i++) {
                Thread.sleep(20);
            }
            Path object = directory.resolve("archive").resolve(plinth.hsm().state(inode).copy().objectKey());
            assertThat(object).exists();
            plinth.delete("/doomed");
            // the mover deletes the object, then tells the MDT; the record goes with that second step, a moment later
            long deadline = System.currentTimeMillis() + 20_000;
            while ((java.nio.file.Files.exists(object) || !plinth.hsm().removedCopies(0, 10).copies().isEmpty())
                    && System.currentTimeMillis() < deadline) {
                Thread.sleep(100);
            }
            assertThat(object).doesNotExist();
            assertThat(plinth.hsm().removedCopies(0, 10).copies()).isEmpty();
        }
    }

    /** With no mover running, a read of a released file gives up after hsm.restore-wait-millis: EIO, S3 503; it never hangs. */
    @Test
    void aRestoreNobodyRunsEndsTheReadAfterTheWait() throws Exception {
        dev.plinth.common.Config config = MiniCluster.testConfig().with("server.mover", "false").with("hsm.restore-wait-millis", "1500");
        try (MiniCluster cluster = MiniCluster.start(directory, config); PlinthClient plinth = cluster.client()) {
            plinth.addArchive(new dev.plinth.wire.messages.MgmtMessages.ArchiveInfo(1, "default", directory.resolve("archive").toUri().toString()));
            plinth.mkdirs("/held", 0755);
            write(plinth, "/held/waits", 200_000);
            long inode = plinth.stat("/held/waits").inodeId();
            try (dev.plinth.hsm.HsmMover mover = new dev.plinth.hsm.HsmMover(plinth, config).start()) {
                plinth.hsm().request(inode, ARCHIVE, 1);
                for (int i = 0; i < 500 && plinth.hsm().state(inode).action() != null; i++) {
                    Thread.sleep(20);
                }
            }
            plinth.hsm().request(inode, RELEASE, 0);
            try (PlinthFile held = plinth.open("/held/waits", false)) { // the open asks for the restore; its reads wait
                long started = System.nanoTime();
                org.assertj.core.api.Assertions.assertThatThrownBy(() -> held.read(0, ByteBuffer.allocate(4096)))
                        .isInstanceOfSatisfying(dev.plinth.common.PlinthException.class,
                                e -> assertThat(e.code()).isEqualTo(dev.plinth.common.ErrorCode.RESTORE_PENDING));
                assertThat(System.nanoTime() - started).isGreaterThan(1_000_000_000L);
            }
            assertThat(dev.plinth.common.ErrorCode.RESTORE_PENDING.errno()).isEqualTo(5); // EIO through the mount
            try (software.amazon.awssdk.services.s3.S3Client s3 = dev.plinth.integration.s3.S3Testing.sdk(
                    dev.plinth.integration.s3.S3Testing.endpoint(cluster), dev.plinth.integration.s3.S3Testing.ownerKey(cluster))) {
                org.assertj.core.api.Assertions.assertThatThrownBy(() -> s3.getObjectAsBytes(b -> b.bucket("held").key("waits")))
                        .isInstanceOfSatisfying(software.amazon.awssdk.services.s3.model.S3Exception.class,
                                e -> assertThat(e.statusCode()).isEqualTo(503));
            }
            // the restore stays queued: a mover that comes along finishes it, and the file reads again
            try (dev.plinth.hsm.HsmMover mover = new dev.plinth.hsm.HsmMover(plinth, config).start()) {
                try (PlinthFile file = plinth.open("/held/waits", false)) {
                    assertThat(file.size()).isEqualTo(200_000);
                    assertThat(file.read(0, ByteBuffer.allocate(300_000))).isEqualTo(200_000);
                }
            }
        }
    }

    @Test
    void rulesArchiveAndReleaseByAgeSizeAndPlace() throws Exception {
        try (MiniCluster cluster = MiniCluster.start(directory); PlinthClient plinth = cluster.client()) {
            plinth.mkdirs("/pol/datasets", 0755);
            plinth.mkdirs("/pol/results", 0755);
            write(plinth, "/pol/datasets/old-big", 2 << 20);
            write(plinth, "/pol/datasets/old-small", 100);
            write(plinth, "/pol/datasets/new-big", 2 << 20);
            write(plinth, "/pol/results/run-1", 5000);
            write(plinth, "/pol/results/run-2", 5000);
            age(plinth, "/pol/datasets/old-big", MetaMessages.SET_ATIME, 40 * DAY);
            age(plinth, "/pol/datasets/old-small", MetaMessages.SET_ATIME, 40 * DAY);
            age(plinth, "/pol/results/run-1", MetaMessages.SET_MTIME, 2 * DAY);
            PolicyRules rules = PolicyRules.parse("""
                    archive, release when atime > 30d and size >= 1MiB under /pol/datasets
                    archive when mtime > 1d under /pol/results
                    release when size > 1TiB under /pol
                    """);

            List<PolicyRun.RuleReport> dry = new PolicyRun(plinth, true, 100_000).run(rules);
            assertThat(dry.get(0).scannedFiles).isEqualTo(3);
            assertThat(dry.get(0).matchedFiles).isEqualTo(1);
            assertThat(dry.get(0).matchedBytes).isEqualTo(2 << 20);
            assertThat(dry.get(0).actions.get("archive")).containsExactly(1, 2 << 20);
            assertThat(dry.get(0).skipped).containsEntry("release: waits for its archive (a later run releases it)", 1L);
            assertThat(dry.get(1).actions.get("archive")).containsExactly(1, 5000);
            assertThat(dry.get(2).scannedFiles).isEqualTo(5);
            assertThat(dry.get(2).matchedFiles).isZero(); // a rule that matches nothing
            assertThat(plinth.hsm().actions(0, 10).actions()).isEmpty(); // a dry run asks for nothing

            List<PolicyRun.RuleReport> real = new PolicyRun(plinth, false, 100_000).run(rules);
            assertThat(real.get(0).actions.get("archive")).containsExactly(1, 2 << 20);
            long oldBig = plinth.stat("/pol/datasets/old-big").inodeId();
            long run1 = plinth.stat("/pol/results/run-1").inodeId();
            for (long inode : new long[] {oldBig, run1}) {
                for (int i = 0; i < 500 && plinth.hsm().state(inode).action() != null; i++) {
                    Thread.sleep(20);
                }
                assertThat(plinth.hsm().state(inode).states()).isEqualTo(EXISTS | ARCHIVED);
            }
            assertThat(plinth.hsm().state(plinth.stat("/pol/datasets/new-big").inodeId()).states()).isZero();
            assertThat(plinth.hsm().state(plinth.stat("/pol/results/run-2").inodeId()).states()).isZero();

            // the next run releases what the first archived, and archives nothing again
            List<PolicyRun.RuleReport> next = new PolicyRun(plinth, false, 100_000).run(rules);
            assertThat(next.get(0).actions.get("release")).containsExactly(1, 2 << 20);
            assertThat(next.get(0).actions).doesNotContainKey("archive");
            assertThat(next.get(1).skipped).isEqualTo(Map.of("archive: already archived", 1L));
            assertThat(plinth.hsm().state(oldBig).states() & RELEASED).isEqualTo(RELEASED);
        }
    }
}
