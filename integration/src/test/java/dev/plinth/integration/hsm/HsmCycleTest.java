package dev.plinth.integration.hsm;

import static dev.plinth.wire.messages.HsmMessages.*;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.plinth.client.PlinthClient;
import dev.plinth.client.PlinthFile;
import dev.plinth.common.Credentials;
import dev.plinth.common.ErrorCode;
import dev.plinth.common.Layout;
import dev.plinth.common.PlinthException;
import dev.plinth.integration.MiniCluster;
import dev.plinth.integration.s3.S3Testing;
import dev.plinth.wire.messages.HsmMessages.HsmState;
import dev.plinth.wire.messages.MetaMessages;
import dev.plinth.wire.messages.MetaMessages.Attributes;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.S3Exception;

/**
 * The HSM cycle against the embedded server's local-directory archive: archive, release (space
 * freed), transparent restore on read, dirty on write, archive again, and what is refused.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class HsmCycleTest {
    private static final Layout STRIPED = new Layout(2, 1 << 20, 1 << 20, "default", 1, List.of());

    @TempDir
    static Path directory;
    private MiniCluster cluster;
    private PlinthClient plinth;
    private final Random random = new Random(5);

    @BeforeAll
    void start() {
        // small parts, so that files of a few MiB are archived and checked in several
        cluster = MiniCluster.start(directory.resolve("data"), MiniCluster.testConfig().with("hsm.part-bytes", "1048576"));
        plinth = cluster.client();
    }

    @AfterAll
    void stop() throws Exception {
        plinth.close();
        cluster.close();
    }

    private Path archiveDirectory() {
        return directory.resolve("data").resolve("archive");
    }

    private byte[] write(String path, int length) {
        byte[] bytes = new byte[length];
        random.nextBytes(bytes);
        try (PlinthFile file = plinth.create(path, 0644, true, STRIPED)) {
            file.write(0, ByteBuffer.wrap(bytes));
        }
        return bytes;
    }

    private byte[] read(String path) {
        return dev.plinth.integration.ClusterSmokeTest.readAll(plinth, path);
    }

    private long inode(String path) {
        return plinth.stat(path).inodeId();
    }

    /** Waits for the queued action on the file to end; its state then. */
    private HsmState settled(String path) throws InterruptedException {
        long inode = inode(path);
        for (int i = 0; i < 600; i++) {
            HsmState state = plinth.hsm().state(inode);
            if (state.action() == null) {
                return state;
            }
            Thread.sleep(20);
        }
        throw new AssertionError("the HSM action on " + path + " did not end: " + plinth.hsm().state(inode));
    }

    private HsmState archive(String path) throws InterruptedException {
        plinth.hsm().request(inode(path), ARCHIVE, 1);
        return settled(path);
    }

    private long usedOnTargets() {
        return cluster.server().storage().targets().stream().mapToLong(t -> t.usedBytes()).sum();
    }

    private List<Path> archivedObjects() throws IOException {
        try (Stream<Path> walk = Files.walk(archiveDirectory())) {
            return walk.filter(Files::isRegularFile).toList();
        }
    }

    @Test
    void archiveReleaseRestoreDirtyAndArchiveAgain() throws Exception {
        plinth.mkdirs("/cycle", 0755);
        byte[] bytes = write("/cycle/data", 5 * (1 << 20) + 4321);
        Attributes before = plinth.stat("/cycle/data");
        assertThat(plinth.hsm().state(before.inodeId()).states()).isZero();

        HsmState archived = archive("/cycle/data");
        assertThat(archived.states()).isEqualTo(EXISTS | ARCHIVED);
        assertThat(archived.lastError()).isNull();
        assertThat(archived.copy().archiveId()).isEqualTo(1);
        assertThat(archived.copy().sizeBytes()).isEqualTo(bytes.length);
        assertThat(archived.copy().partCrcs()).hasSize(6);
        assertThat(Files.readAllBytes(archiveDirectory().resolve(archived.copy().objectKey()))).isEqualTo(bytes);

        long usedBefore = usedOnTargets();
        HsmState released = plinth.hsm().request(before.inodeId(), RELEASE, 0);
        assertThat(released.states()).isEqualTo(EXISTS | ARCHIVED | RELEASED);
        Attributes stat = plinth.stat("/cycle/data");
        assertThat(stat.sizeBytes()).isEqualTo(bytes.length);
        assertThat(stat.mtimeNanos()).isEqualTo(before.mtimeNanos());
        // the chunks go once the cleaner's keep time is over
        long deadline = System.currentTimeMillis() + MetaMessages.REMOVED_FILE_KEPT_MILLIS + 10_000;
        while (usedOnTargets() > usedBefore - bytes.length && System.currentTimeMillis() < deadline) {
            Thread.sleep(50);
        }
        assertThat(usedOnTargets()).isLessThanOrEqualTo(usedBefore - bytes.length);

        // a read restores it, transparently, with the bytes and mtime it had
        assertThat(read("/cycle/data")).isEqualTo(bytes);
        HsmState restored = plinth.hsm().state(before.inodeId());
        assertThat(restored.states()).isEqualTo(EXISTS | ARCHIVED);
        assertThat(plinth.stat("/cycle/data").mtimeNanos()).isEqualTo(before.mtimeNanos());

        // a write makes it dirty: it cannot be released until archived again
        try (PlinthFile file = plinth.open("/cycle/data", true)) {
            file.write(0, ByteBuffer.wrap(new byte[] {1, 2, 3}));
        }
        System.arraycopy(new byte[] {1, 2, 3}, 0, bytes, 0, 3);
        assertThat(plinth.hsm().state(before.inodeId()).states()).isEqualTo(EXISTS | ARCHIVED | DIRTY);
        assertThatThrownBy(() -> plinth.hsm().request(before.inodeId(), RELEASE, 0)).isInstanceOfSatisfying(PlinthException.class,
                e -> assertThat(e.getMessage()).contains("dirty"));

        HsmState again = archive("/cycle/data");
        assertThat(again.states()).isEqualTo(EXISTS | ARCHIVED);
        assertThat(again.copy().objectKey()).isNotEqualTo(archived.copy().objectKey());
        assertThat(archivedObjects()).contains(archiveDirectory().resolve(again.copy().objectKey()))
                .doesNotContain(archiveDirectory().resolve(archived.copy().objectKey())); // the superseded copy is gone

        plinth.hsm().request(before.inodeId(), RELEASE, 0);
        // opening for writing restores too, and the write then makes it dirty
        try (PlinthFile file = plinth.open("/cycle/data", true)) {
            file.write(bytes.length, ByteBuffer.wrap(new byte[] {9}));
        }
        byte[] grown = java.util.Arrays.copyOf(bytes, bytes.length + 1);
        grown[bytes.length] = 9;
        assertThat(read("/cycle/data")).isEqualTo(grown);
        assertThat(plinth.hsm().state(before.inodeId()).states()).isEqualTo(EXISTS | ARCHIVED | DIRTY);
    }

    /**
     * A reader of a released file gets its first bytes while the restore is still running (the
     * mover reports each part back, checked and flushed), Data-on-MDT part included; a read
     * further in waits for its own range; all of it reads back exactly.
     */
    @Test
    void aReleasedFilesFirstBytesAreReadBeforeItsRestoreEnds() throws Exception {
        plinth.mkdirs("/early", 0755);
        byte[] bytes = new byte[8 * (1 << 20) + 777];
        random.nextBytes(bytes);
        try (PlinthFile file = plinth.create("/early/big", 0644, true, null)) { // the directory's layout: its first bytes on the MDT
            file.write(0, ByteBuffer.wrap(bytes));
        }
        assertThat(plinth.stat("/early/big").layout().mdtBytes()).isPositive();
        archive("/early/big");
        long inode = inode("/early/big");
        plinth.hsm().request(inode, RELEASE, 0);
        dev.plinth.common.FaultPoints.set(dev.plinth.common.FaultPoints.HSM_PART_DELAY_MILLIS, "300"); // nine parts: about 3 s
        try (PlinthFile file = plinth.open("/early/big", false)) {
            ByteBuffer first = ByteBuffer.allocate(100_000);
            assertThat(file.read(0, first)).isEqualTo(100_000);
            assertThat(plinth.hsm().state(inode).states() & RELEASED).as("read while the restore runs").isEqualTo(RELEASED);
            assertThat(first.array()).isEqualTo(java.util.Arrays.copyOf(bytes, 100_000));
            ByteBuffer tail = ByteBuffer.allocate(5000);
            assertThat(file.read(bytes.length - 5000, tail)).isEqualTo(5000);
            assertThat(tail.array()).isEqualTo(java.util.Arrays.copyOfRange(bytes, bytes.length - 5000, bytes.length));
        } finally {
            dev.plinth.common.FaultPoints.clear();
        }
        assertThat(settled("/early/big").states() & RELEASED).isZero();
        assertThat(read("/early/big")).isEqualTo(bytes);
    }

    /**
     * A release's freeing queued twice (the cleaner's periodic scan found the file's key again
     * before the purge) must not free the chunks a restore wrote after the first freeing.
     */
    @Test
    void aSecondFreeingOfAReleasedFileSparesWhatItsRestoreWrote() throws Exception {
        plinth.mkdirs("/twice", 0755);
        byte[] bytes = write("/twice/file", 3 << 20);
        archive("/twice/file");
        plinth.hsm().request(inode("/twice/file"), RELEASE, 0);
        Thread.sleep(MetaMessages.REMOVED_FILE_KEPT_MILLIS - 1000);
        cluster.server().meta().rescanRemovedFiles(); // due a while after the first, which frees and purges before it
        assertThat(read("/twice/file")).isEqualTo(bytes);
        Thread.sleep(MetaMessages.REMOVED_FILE_KEPT_MILLIS + 1000); // the second comes due
        assertThat(read("/twice/file")).isEqualTo(bytes);
    }

    @Test
    void smallFilesOnTheMdtAndTruncationRestoreToo() throws Exception {
        plinth.mkdirs("/small", 0755);
        byte[] bytes = new byte[3000];
        random.nextBytes(bytes);
        try (PlinthFile file = plinth.create("/small/inline", 0644, true, null)) {
            file.write(0, ByteBuffer.wrap(bytes));
        }
        archive("/small/inline");
        plinth.hsm().request(inode("/small/inline"), RELEASE, 0);
        assertThat(read("/small/inline")).isEqualTo(bytes);

        plinth.hsm().request(inode("/small/inline"), RELEASE, 0);
        plinth.setAttr(inode("/small/inline"), MetaMessages.SET_SIZE, 0, 0, 0, 1000, 0, 0);
        assertThat(read("/small/inline")).isEqualTo(java.util.Arrays.copyOf(bytes, 1000));
        assertThat(plinth.hsm().state(inode("/small/inline")).states() & DIRTY).isEqualTo(DIRTY);
    }

    @Test
    void aReleasedObjectIsRestoredByAnS3Get() throws Exception {
        try (S3Client s3 = S3Testing.sdk(S3Testing.endpoint(cluster), S3Testing.ownerKey(cluster))) {
            s3.createBucket(b -> b.bucket("cold"));
            byte[] bytes = new byte[3 << 20];
            random.nextBytes(bytes);
            s3.putObject(b -> b.bucket("cold").key("shard-0.tar"), RequestBody.fromBytes(bytes));
            archive("/cold/shard-0.tar");
            plinth.hsm().request(inode("/cold/shard-0.tar"), RELEASE, 0);
            assertThat(s3.getObjectAsBytes(b -> b.bucket("cold").key("shard-0.tar")).asByteArray()).isEqualTo(bytes);
            assertThat(plinth.hsm().state(inode("/cold/shard-0.tar")).states() & RELEASED).isZero();

            // an encrypted object goes to the archive as stored (ciphertext) and comes back readable
            s3.putObject(b -> b.bucket("cold").key("secret.bin").serverSideEncryption("AES256"), RequestBody.fromBytes(bytes));
            archive("/cold/secret.bin");
            Path copy = archiveDirectory().resolve(plinth.hsm().state(inode("/cold/secret.bin")).copy().objectKey());
            assertThat(Files.readAllBytes(copy)).hasSize(bytes.length).isNotEqualTo(bytes);
            plinth.hsm().request(inode("/cold/secret.bin"), RELEASE, 0);
            assertThat(s3.getObjectAsBytes(b -> b.bucket("cold").key("secret.bin")).asByteArray()).isEqualTo(bytes);

            // a copy damaged out of band: the read fails, the state says lost, nothing waits
            plinth.hsm().request(inode("/cold/shard-0.tar"), RELEASE, 0);
            Path object = archiveDirectory().resolve(plinth.hsm().state(inode("/cold/shard-0.tar")).copy().objectKey());
            try (var channel = Files.newByteChannel(object, StandardOpenOption.WRITE)) {
                channel.position(2 << 20).write(ByteBuffer.wrap(new byte[] {42}));
            }
            assertThatThrownBy(() -> s3.getObjectAsBytes(b -> b.bucket("cold").key("shard-0.tar"))).isInstanceOfSatisfying(S3Exception.class,
                    e -> {
                        assertThat(e.statusCode()).isEqualTo(500);
                        assertThat(e.awsErrorDetails().errorCode()).isEqualTo("XPlinthArchivedCopyUnreadable");
                    });
            HsmState lost = plinth.hsm().state(inode("/cold/shard-0.tar"));
            assertThat(lost.states() & LOST).isEqualTo(LOST);
            assertThat(lost.lastError()).contains("checksum");
            assertThatThrownBy(() -> read("/cold/shard-0.tar")).isInstanceOfSatisfying(PlinthException.class,
                    e -> assertThat(e.code()).isEqualTo(ErrorCode.ARCHIVE_UNREADABLE));
        }
    }

    @Test
    void readsMoveAtimeAsRelatimeDoes() throws Exception {
        plinth.mkdirs("/atime", 0755);
        write("/atime/file", 10_000);
        Attributes written = plinth.stat("/atime/file");
        assertThat(written.atimeNanos()).isLessThanOrEqualTo(written.mtimeNanos());
        read("/atime/file");
        long deadline = System.currentTimeMillis() + 10_000;
        while (plinth.stat("/atime/file").atimeNanos() <= written.mtimeNanos() && System.currentTimeMillis() < deadline) {
            Thread.sleep(50);
        }
        Attributes read = plinth.stat("/atime/file");
        assertThat(read.atimeNanos()).isGreaterThan(written.mtimeNanos());
        assertThat(read.ctimeNanos()).isEqualTo(written.ctimeNanos()); // an atime update is not a change
        // atime is now after mtime and less than a day old: another read leaves it
        read("/atime/file");
        Thread.sleep(2500);
        assertThat(plinth.stat("/atime/file").atimeNanos()).isEqualTo(read.atimeNanos());
    }

    @Test
    void whatIsRefused() throws Exception {
        plinth.mkdirs("/refused", 0777);
        write("/refused/file", 100_000);
        long inode = inode("/refused/file");
        assertThatThrownBy(() -> plinth.hsm().request(inode, RELEASE, 0)).hasMessageContaining("not archived");
        plinth.hsm().setFlags(inode, NOARCHIVE, 0);
        assertThatThrownBy(() -> plinth.hsm().request(inode, ARCHIVE, 1)).hasMessageContaining("noarchive");
        plinth.hsm().setFlags(inode, NORELEASE, NOARCHIVE);
        archive("/refused/file");
        assertThatThrownBy(() -> plinth.hsm().request(inode, RELEASE, 0)).hasMessageContaining("norelease");
        plinth.hsm().setFlags(inode, 0, NORELEASE);
        try (PlinthFile open = plinth.open("/refused/file", false)) {
            assertThatThrownBy(() -> plinth.hsm().request(inode, RELEASE, 0)).hasMessageContaining("the file is open");
        }
        plinth.hsm().request(inode, RELEASE, 0);
        assertThatThrownBy(() -> plinth.hsm().request(inode, REMOVE, 0)).hasMessageContaining("released");
        // another user: not the owner's flags or actions to change, but a reader may restore what it may read
        try (PlinthClient other = cluster.client(new Credentials(4242, 4242, List.of()))) {
            assertThatThrownBy(() -> other.hsm().setFlags(inode, NORELEASE, 0)).isInstanceOfSatisfying(PlinthException.class,
                    e -> assertThat(e.code()).isEqualTo(ErrorCode.OPERATION_NOT_PERMITTED));
            assertThatThrownBy(() -> other.hsm().request(inode, ARCHIVE, 1)).isInstanceOfSatisfying(PlinthException.class,
                    e -> assertThat(e.code()).isEqualTo(ErrorCode.OPERATION_NOT_PERMITTED));
            assertThatThrownBy(() -> other.hsm().take(1000, 1)).isInstanceOfSatisfying(PlinthException.class,
                    e -> assertThat(e.code()).isEqualTo(ErrorCode.OPERATION_NOT_PERMITTED));
            try (PlinthFile file = other.open("/refused/file", false)) {
                assertThat(file.size()).isEqualTo(100_000);
                assertThat(file.read(0, ByteBuffer.allocate(200_000))).isEqualTo(100_000); // waits for the restore it asked for
            }
            settled("/refused/file");
        }
        // remove of a resident, archived file drops the copy
        HsmState resident = plinth.hsm().state(inode);
        plinth.hsm().request(inode, REMOVE, 0);
        HsmState removed = settled("/refused/file");
        assertThat(removed.states()).isZero();
        assertThat(removed.copy()).isNull();
        assertThat(archiveDirectory().resolve(resident.copy().objectKey())).doesNotExist();
    }

    @Test
    void aMigratedFileStaysArchivedAndAReleasedOneIsSkipped() throws Exception {
        byte[] bytes = write("/migrated", 3 << 20);
        assertThat(archive("/migrated").states() & (ARCHIVED | DIRTY)).isEqualTo(ARCHIVED);
        Layout oneStripe = new Layout(1, 256 << 10, 1 << 20, "default", 1, List.of());
        dev.plinth.client.Migration.Result result = dev.plinth.client.Migration.migrate(plinth, "/migrated", oneStripe, copied -> { });
        assertThat(result.outcome()).isEqualTo(dev.plinth.client.Migration.Outcome.MIGRATED);
        assertThat(plinth.stat("/migrated").layout().stripeCount()).isEqualTo(1);
        assertThat(plinth.hsm().state(inode("/migrated")).states() & (ARCHIVED | DIRTY)).as("the same bytes: not dirty").isEqualTo(ARCHIVED);
        assertThat(read("/migrated")).isEqualTo(bytes);
        // the archived copy is still the file's: released and read back, it restores the same bytes
        plinth.hsm().request(inode("/migrated"), RELEASE, 0);
        assertThat(read("/migrated")).isEqualTo(bytes);

        byte[] other = write("/released-before", 2 << 20);
        archive("/released-before");
        plinth.hsm().request(inode("/released-before"), RELEASE, 0);
        dev.plinth.client.Migration.Result skipped = dev.plinth.client.Migration.migrate(plinth, "/released-before", oneStripe, copied -> { });
        assertThat(skipped.outcome()).isEqualTo(dev.plinth.client.Migration.Outcome.RELEASED);
        assertThat(plinth.hsm().state(inode("/released-before")).states() & RELEASED).isEqualTo(RELEASED);
        assertThat(read("/released-before")).isEqualTo(other);
    }
}
