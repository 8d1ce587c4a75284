package dev.plinth.integration;

import static org.assertj.core.api.Assertions.assertThat;

import dev.plinth.client.PlinthClient;
import dev.plinth.common.Config;
import dev.plinth.common.Credentials;
import dev.plinth.fuse.FuseMount;
import dev.plinth.fuse.MountOptions;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * The FUSE mount under real applications: a POSIX behaviour suite in Python, fio with
 * verification, a randomized model check, a 100,000-entry directory, a Python training-style
 * job, and unmounting from outside. Two mounts (two clients) of one in-process cluster, so that
 * cross-client behaviour (close-to-open, unlink while open elsewhere, locks) is exercised.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class FuseMountIT {
    @TempDir
    static Path directory;

    private MiniCluster cluster;
    private final List<AutoCloseable> resources = new ArrayList<>();
    private Path mountA;
    private Path mountB;

    @BeforeAll
    void mountTwice() throws IOException {
        FuseTesting.requireFuse();
        // the permission checks run as an unprivileged user, who must be able to reach the mounts
        Files.setPosixFilePermissions(directory, java.nio.file.attribute.PosixFilePermissions.fromString("rwxr-xr-x"));
        cluster = MiniCluster.start(directory.resolve("data"));
        mountA = mount("a");
        mountB = mount("b");
    }

    private Path mount(String name) throws IOException {
        return mount(name, "");
    }

    private Path mount(String name, String options) throws IOException {
        Path mountpoint = Files.createDirectories(directory.resolve("mnt-" + name));
        Config config = MiniCluster.testConfig();
        PlinthClient client = cluster.client(Credentials.ROOT, config);
        resources.add(client);
        FuseMount mount = FuseMount.mount(client, mountpoint, MountOptions.parse(options, config, true));
        resources.add(mount);
        return mountpoint;
    }

    @AfterAll
    void unmount() throws Exception {
        for (AutoCloseable resource : resources.reversed()) {
            resource.close();
        }
        if (cluster != null) {
            cluster.close();
        }
    }

    @Test
    void posixSuite() throws Exception {
        FuseTesting.run(List.of("/usr/bin/python3", FuseTesting.script("posix_suite.py"), mountA.toString(), mountB.toString()),
                Duration.ofMinutes(5));
    }

    /**
     * Every file system call over every file type, mode, parent and caller, compared with the
     * local file system the test runs on. The mount is {@code dev} so that device nodes open as
     * they do there.
     */
    @Test
    void posixSweepMatchesTheLocalFileSystem() throws Exception {
        Path withDevices = mount("dev", "dev");
        Path reference = Files.createDirectories(directory.resolve("reference"));
        try {
            FuseTesting.run(List.of("/usr/bin/python3", FuseTesting.script("posix_sweep.py"), withDevices.toString(), reference.toString()),
                    Duration.ofMinutes(10));
        } finally {
            FuseTesting.run(List.of("rm", "-rf", reference.toString()), Duration.ofMinutes(2));
        }
    }

    @Test
    void pythonTrainingJob() throws Exception {
        FuseTesting.run(List.of("/usr/bin/python3", FuseTesting.script("training_job.py"), mountA.toString(), mountB.toString()),
                Duration.ofMinutes(3));
    }

    @Test
    void fioVerifiesConcurrentWriters() throws Exception {
        Path work = Files.createDirectories(mountA.resolve("fio"));
        FuseTesting.run(List.of("fio", "--name=verify", "--directory=" + work, "--numjobs=4", "--size=32m", "--bs=64k",
                "--rw=randwrite", "--ioengine=psync", "--verify=crc32c", "--verify_fatal=1", "--do_verify=1",
                "--verify_backlog=64", "--group_reporting"), Duration.ofMinutes(5));
        FuseTesting.run(List.of("fio", "--name=seqverify", "--directory=" + work, "--numjobs=2", "--size=48m", "--bs=1m",
                "--rw=write", "--ioengine=psync", "--verify=crc32c", "--verify_fatal=1", "--group_reporting"), Duration.ofMinutes(5));
    }

    /** Several threads, each on its own file, against a byte model; every read is checked, also through the other mount. */
    @Test
    void randomOperationsMatchModel() throws Exception {
        long seed = Long.getLong("plinth.seed", System.nanoTime());
        System.out.println("random operations seed " + seed + " (rerun with -Dplinth.seed=" + seed + ")");
        Path dirA = Files.createDirectories(mountA.resolve("model"));
        Path dirB = mountB.resolve("model");
        ExecutorService pool = Executors.newFixedThreadPool(4);
        try {
            List<Future<?>> workers = new ArrayList<>();
            for (int t = 0; t < 4; t++) {
                long workerSeed = seed + t;
                String name = "file-" + t;
                workers.add(pool.submit(() -> {
                    modelWorker(new Random(workerSeed), dirA.resolve(name), dirB.resolve(name));
                    return null;
                }));
            }
            for (Future<?> worker : workers) {
                worker.get(5, TimeUnit.MINUTES);
            }
        } finally {
            pool.shutdownNow();
        }
    }

    private static void modelWorker(Random random, Path file, Path sameFileElsewhere) throws IOException {
        byte[] model = new byte[0];
        List<String> history = new ArrayList<>();
        FileChannel channel = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.READ, StandardOpenOption.WRITE);
        try {
            for (int op = 0; op < 150; op++) {
                int choice = random.nextInt(100);
                if (choice < 45) {
                    int length = 1 + random.nextInt(random.nextBoolean() ? 4096 : 600_000);
                    long offset = random.nextInt(Math.max(1, model.length + 200_000));
                    byte[] data = new byte[length];
                    random.nextBytes(data);
                    channel.write(ByteBuffer.wrap(data), offset);
                    history.add("write " + offset + "+" + length);
                    if (offset + length > model.length) {
                        model = Arrays.copyOf(model, (int) (offset + length));
                    }
                    System.arraycopy(data, 0, model, (int) offset, length);
                } else if (choice < 75) {
                    int offset = random.nextInt(model.length + 1);
                    int length = random.nextInt(800_000);
                    ByteBuffer read = ByteBuffer.allocate(length);
                    while (read.hasRemaining() && channel.read(read, offset + read.position()) > 0) {
                        // keep reading until end of file or the buffer is full
                    }
                    int expected = Math.max(0, Math.min(length, model.length - offset));
                    history.add("read " + offset + "+" + length);
                    assertThat(read.position()).as("bytes read at %d", offset).isEqualTo(expected);
                    assertThat(Arrays.copyOf(read.array(), expected)).as("bytes at %d", offset)
                            .isEqualTo(Arrays.copyOfRange(model, offset, offset + expected));
                } else if (choice < 85) {
                    int size = random.nextInt(model.length + 300_000);
                    channel.truncate(size);
                    history.add("truncate " + size + " (size " + model.length + ")");
                    if (size > model.length) { // FileChannel.truncate never grows; do it the POSIX way
                        channel.write(ByteBuffer.wrap(new byte[1]), size - 1);
                    }
                    model = Arrays.copyOf(model, size);
                } else if (choice < 95) {
                    channel.close(); // close-to-open: the other client sees everything written
                    history.add("close, read elsewhere");
                    assertThat(Files.readAllBytes(sameFileElsewhere)).as("through the other mount after %s", history).isEqualTo(model);
                    channel = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE);
                } else {
                    history.add("fsync");
                    channel.force(true);
                    assertThat(Files.size(file)).isEqualTo(model.length);
                }
            }
            assertThat(channel.size()).isEqualTo(model.length);
        } finally {
            channel.close();
        }
        assertThat(Files.readAllBytes(file)).isEqualTo(model);
    }

    @Test
    void directoryWithAHundredThousandEntries() throws Exception {
        int count = 100_000;
        try (PlinthClient client = cluster.client()) {
            long parent = client.mkdir("/huge", 0755).inodeId();
            ExecutorService pool = Executors.newVirtualThreadPerTaskExecutor();
            try {
                List<Future<?>> batches = new ArrayList<>();
                for (int batch = 0; batch < 100; batch++) {
                    int first = batch * (count / 100);
                    batches.add(pool.submit(() -> {
                        for (int i = first; i < first + count / 100; i++) {
                            client.symlink(parent, String.format("entry-%06d", i), "t");
                        }
                        return null;
                    }));
                }
                for (Future<?> batch : batches) {
                    batch.get(10, TimeUnit.MINUTES);
                }
            } finally {
                pool.shutdown();
            }
        }
        String listing = FuseTesting.run(List.of("/usr/bin/python3", "-c", """
                import os, sys
                names = os.listdir(sys.argv[1])
                expected = ["entry-%06d" % i for i in range(int(sys.argv[2]))]
                assert sorted(names) == expected, (len(names), len(set(names)))
                with os.scandir(sys.argv[1]) as entries:
                    links = sum(1 for e in entries if e.is_symlink())
                assert links == len(expected), links
                print("listed", len(names))
                """, mountA.resolve("huge").toString(), Integer.toString(count)), Duration.ofMinutes(5));
        assertThat(listing).contains("listed " + count);
    }

    /** The HSM cycle as a training job sees it: a released file reads back whole through the mount, and a write dirties it. */
    @Test
    void releasedFilesRestoreWhenReadThroughTheMount() throws Exception {
        byte[] bytes = new byte[3 << 20];
        new Random(17).nextBytes(bytes);
        Path file = mountA.resolve("cold-shard.bin");
        Files.write(file, bytes);
        try (PlinthClient plinth = cluster.client()) {
            long inode = plinth.stat("/cold-shard.bin").inodeId();
            plinth.hsm().request(inode, dev.plinth.wire.messages.HsmMessages.ARCHIVE, 1);
            for (int i = 0; i < 500 && plinth.hsm().state(inode).action() != null; i++) {
                Thread.sleep(20);
            }
            plinth.hsm().request(inode, dev.plinth.wire.messages.HsmMessages.RELEASE, 0);
            Path elsewhere = mountB.resolve("cold-shard.bin");
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10); // the attribute cache's time, at most
            while (!blocks(elsewhere).equals("1") && System.nanoTime() < deadline) {
                Thread.sleep(100);
            }
            assertThat(Files.size(elsewhere)).isEqualTo(bytes.length);
            assertThat(blocks(elsewhere)).isEqualTo("1"); // as Lustre reports it
            assertThat(Files.readAllBytes(elsewhere)).isEqualTo(bytes);
            assertThat(plinth.hsm().state(inode).states() & dev.plinth.wire.messages.HsmMessages.RELEASED).isZero();
            Files.write(elsewhere, new byte[] {7}, StandardOpenOption.APPEND);
            assertThat(plinth.hsm().state(inode).states() & dev.plinth.wire.messages.HsmMessages.DIRTY)
                    .isEqualTo(dev.plinth.wire.messages.HsmMessages.DIRTY);
        }
    }

    /** st_blocks, as stat(1) prints it (java.nio has no view of it). */
    private static String blocks(Path file) throws Exception {
        return TestProcesses.run(List.of("stat", "-c", "%b", file.toString()), Duration.ofSeconds(10)).trim();
    }

    @Test
    void externalUnmountEndsTheMountCleanly() throws Exception {
        Path mountpoint = Files.createDirectories(directory.resolve("mnt-external"));
        try (PlinthClient client = cluster.client();
             FuseMount mount = FuseMount.mount(client, mountpoint, MountOptions.parse("", MiniCluster.testConfig(), true))) {
            Files.writeString(mountpoint.resolve("before-unmount"), "x");
            assertThat(FuseMount.isMounted(mountpoint)).isTrue();
            FuseTesting.run(List.of("fusermount3", "-u", mountpoint.toString()), Duration.ofSeconds(30));
            assertThat(mount.awaitUnmounted(20, TimeUnit.SECONDS)).as("workers stop after fusermount3 -u").isTrue();
            assertThat(FuseMount.isMounted(mountpoint)).isFalse();
        }
        try (PlinthClient client = cluster.client()) {
            assertThat(client.stat("/before-unmount").sizeBytes()).isEqualTo(1);
        }
    }

    @Test
    void readOnlyMountRefusesChanges() throws Exception {
        Files.writeString(mountA.resolve("ro-visible"), "seen");
        Path mountpoint = Files.createDirectories(directory.resolve("mnt-ro"));
        try (PlinthClient client = cluster.client();
             FuseMount ignored = FuseMount.mount(client, mountpoint, MountOptions.parse("ro", MiniCluster.testConfig(), true))) {
            assertThat(Files.readString(mountpoint.resolve("ro-visible"))).isEqualTo("seen");
            String output = FuseTesting.run(List.of("/usr/bin/python3", "-c", """
                    import errno, os, sys
                    try:
                        open(os.path.join(sys.argv[1], "new"), "w")
                    except OSError as e:
                        assert e.errno == errno.EROFS, e
                        print("refused", errno.errorcode[e.errno])
                    """, mountpoint.toString()), Duration.ofSeconds(30));
            assertThat(output).contains("refused EROFS");
        }
    }

    /** Running programs against a mount, with their output in the test log. */
    static final class FuseTesting {
        private FuseTesting() {}

        /** FUSE mounts, and the programs the FUSE tests drive them with. */
        static void requireFuse() {
            dev.plinth.testing.Prerequisites.requireFuse();
            dev.plinth.testing.Prerequisites.require(dev.plinth.testing.Prerequisites.PYTHON, dev.plinth.testing.Prerequisites.FIO);
        }

        static String script(String name) {
            return Path.of("target", "test-classes", "fuse", name).toAbsolutePath().toString();
        }

        static String run(List<String> command, Duration limit) throws IOException, InterruptedException {
            return TestProcesses.run(command, limit);
        }
    }
}
