package dev.plinth.integration.hsm;

import static dev.plinth.wire.messages.HsmMessages.*;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.plinth.client.PlinthClient;
import dev.plinth.client.PlinthFile;
import dev.plinth.common.ErrorCode;
import dev.plinth.common.Layout;
import dev.plinth.common.PlinthException;
import dev.plinth.gateway.S3Credentials;
import dev.plinth.integration.MiniCluster;
import dev.plinth.integration.s3.S3Testing;
import dev.plinth.wire.messages.HsmMessages.HsmState;
import dev.plinth.wire.messages.MgmtMessages.ArchiveInfo;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * The cold tier against real S3 servers: s3proxy (a process of its own, stopped and started
 * again) and a second Plinth cluster's S3 gateway.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class HsmArchivesIT {
    private static final Layout STRIPED = new Layout(2, 1 << 20, 1 << 20, "default", 1, List.of());

    @TempDir
    static Path directory;
    private S3ProxyProcess s3proxy;
    private MiniCluster cluster;
    private MiniCluster second;
    private PlinthClient plinth;
    private final Random random = new Random(8);

    @BeforeAll
    void start() throws Exception {
        s3proxy = new S3ProxyProcess(directory.resolve("s3proxy")).start();
        try (S3Client s3 = s3proxy.sdk()) {
            s3.createBucket(b -> b.bucket("cold"));
        }
        // a short retry, so that an archive that stays away fails the action within the test
        cluster = MiniCluster.start(directory.resolve("data"), MiniCluster.testConfig().with("hsm.part-bytes", "1048576")
                .with("hsm.archive-retry-millis", "8000"));
        plinth = cluster.client();
        plinth.addArchive(new ArchiveInfo(2, "s3proxy", s3proxy.archiveUri("cold", "plinth")));

        second = MiniCluster.start(directory.resolve("second"));
        S3Credentials.KeyPair key = S3Testing.ownerKey(second);
        try (S3Client s3 = S3Testing.sdk(S3Testing.endpoint(second), key)) {
            s3.createBucket(b -> b.bucket("archive"));
        }
        Path credentials = Files.writeString(directory.resolve("second.credentials"),
                "[default]\naws_access_key_id = " + key.accessKeyId() + "\naws_secret_access_key = " + key.secretKey() + "\n");
        plinth.addArchive(new ArchiveInfo(3, "second-plinth", "s3://archive/from-first?endpoint=" + S3Testing.endpoint(second)
                + "&path-style=true&credentials=" + credentials));
    }

    @AfterAll
    void stop() throws Exception {
        for (AutoCloseable closeable : new AutoCloseable[] {plinth, cluster, second, s3proxy}) {
            if (closeable != null) {
                closeable.close();
            }
        }
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

    private HsmState settle(long inode) throws InterruptedException {
        for (int i = 0; i < 3000; i++) {
            HsmState state = plinth.hsm().state(inode);
            if (state.action() == null) {
                return state;
            }
            Thread.sleep(20);
        }
        throw new AssertionError("HSM action did not end: " + plinth.hsm().state(inode));
    }

    private HsmState archive(String path, int archiveId) throws InterruptedException {
        long inode = plinth.stat(path).inodeId();
        plinth.hsm().request(inode, ARCHIVE, archiveId);
        return settle(inode);
    }

    @Test
    void cycleThroughS3ProxyAndAnotherPlinth() throws Exception {
        plinth.mkdirs("/cycle", 0755);
        for (int archiveId : new int[] {2, 3}) {
            String path = "/cycle/file-" + archiveId;
            byte[] bytes = write(path, 5 * (1 << 20) + 77);
            HsmState archived = archive(path, archiveId);
            assertThat(archived.states()).as(archived.toString()).isEqualTo(EXISTS | ARCHIVED);
            assertThat(archived.copy().partCrcs()).hasSize(2); // S3's parts are 5 MiB at least
            plinth.hsm().request(plinth.stat(path).inodeId(), RELEASE, 0);
            assertThat(read(path)).isEqualTo(bytes);
            assertThat(plinth.hsm().state(plinth.stat(path).inodeId()).states()).isEqualTo(EXISTS | ARCHIVED);
        }
        String key = "plinth/" + plinth.hsm().state(plinth.stat("/cycle/file-2").inodeId()).copy().objectKey();
        try (S3Client s3 = s3proxy.sdk()) {
            assertThat(s3.headObject(b -> b.bucket("cold").key(key)).contentLength()).isEqualTo(5 * (1 << 20) + 77);
        }
    }

    @Test
    void anArchiveThatGoesAwayIsWaitedForThenGivenUpOn() throws Exception {
        plinth.mkdirs("/away", 0755);
        byte[] bytes = write("/away/comes-back", 2 << 20);
        long inode = plinth.stat("/away/comes-back").inodeId();
        s3proxy.stop();
        plinth.hsm().request(inode, ARCHIVE, 2);
        Thread.sleep(2000);
        s3proxy.start();
        HsmState archived = settle(inode);
        assertThat(archived.states()).as(archived.toString()).isEqualTo(EXISTS | ARCHIVED);
        plinth.hsm().request(inode, RELEASE, 0);
        assertThat(read("/away/comes-back")).isEqualTo(bytes);

        write("/away/stays-away", 1 << 20);
        long other = plinth.stat("/away/stays-away").inodeId();
        s3proxy.stop();
        try {
            plinth.hsm().request(other, ARCHIVE, 2);
            HsmState failed = settle(other);
            assertThat(failed.states() & ARCHIVED).isZero();
            assertThat(failed.lastError()).contains("archive:").contains("retried for 8000 ms");
        } finally {
            s3proxy.start();
        }
    }

    @Test
    void aCopyRemovedOrReplacedOutOfBandIsLost() throws Exception {
        plinth.mkdirs("/oob", 0755);
        write("/oob/deleted", 3 << 20);
        write("/oob/replaced", 3 << 20);
        for (String name : new String[] {"deleted", "replaced"}) {
            archive("/oob/" + name, 2);
            plinth.hsm().request(plinth.stat("/oob/" + name).inodeId(), RELEASE, 0);
        }
        try (S3Client s3 = s3proxy.sdk()) {
            s3.deleteObject(b -> b.bucket("cold").key("plinth/" + plinth.hsm().state(plinth.stat("/oob/deleted").inodeId()).copy().objectKey()));
            byte[] other = new byte[3 << 20];
            random.nextBytes(other);
            s3.putObject(b -> b.bucket("cold").key("plinth/" + plinth.hsm().state(plinth.stat("/oob/replaced").inodeId()).copy().objectKey()),
                    RequestBody.fromBytes(other));
        }
        for (String name : new String[] {"deleted", "replaced"}) {
            assertThatThrownBy(() -> read("/oob/" + name)).as(name).isInstanceOfSatisfying(PlinthException.class,
                    e -> assertThat(e.code()).isEqualTo(ErrorCode.ARCHIVE_UNREADABLE));
            HsmState lost = plinth.hsm().state(plinth.stat("/oob/" + name).inodeId());
            assertThat(lost.states() & LOST).as(name).isEqualTo(LOST);
        }
    }
}
