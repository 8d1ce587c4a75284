package dev.plinth.integration;

import static org.assertj.core.api.Assertions.assertThat;

import dev.plinth.client.PlinthClient;
import dev.plinth.client.PlinthFile;
import dev.plinth.common.Config;
import dev.plinth.common.FileTrees;
import dev.plinth.integration.ProcessCluster.Member;
import dev.plinth.integration.ProcessCluster.MetaProcess;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * `plinth backup create` against a running cluster (mgmt, MDT 0 as three `plinth meta` processes,
 * a storage node) while a writer keeps creating files; then every process is killed, every
 * metadata directory deleted, each restored from the backup with `plinth backup restore`, and the
 * cluster started again: every file written before the backup reads back whole, names, links and
 * symlinks as they were, files the writer made during the backup are whole where they exist, and
 * new files can be made. `plinth backup verify` accepts the backup; `plinth fsck` finds nothing on the running cluster, and after the restore
 * finds the chunks of the files made after the backup, which `--repair` removes.
 */
class MetadataBackupIT {
    @TempDir
    Path directory;

    @Test
    void everyMetadataDirectoryIsRebuiltFromABackupTakenUnderLoad() throws Exception {
        List<String> settings = List.of("rpc.timeout-millis=10000", "client.retry-timeout-millis=60000");
        Config clientConfig = Config.defaults().with("rpc.timeout-millis", "10000").with("client.retry-timeout-millis", "60000");
        Path clusterDirectory = directory.resolve("cluster");
        Path backup = directory.resolve("metadata.tar");
        Map<String, byte[]> written = new LinkedHashMap<>();
        Random random = new Random(7);
        try (ProcessCluster cluster = ProcessCluster.start(clusterDirectory, 1, 3, 1, settings, Map.of())) {
            AtomicInteger duringBackup = new AtomicInteger();
            try (PlinthClient client = cluster.client(clientConfig)) {
                ProcessCluster.awaitMap(client, map -> map.mdt(0) != null && map.mdt(0).replicas().size() == 3, 30_000);
                client.mkdirs("/data/nested/deeper", 0755);
                client.mkdirs("/load", 0755);
                for (int i = 0; i < 120; i++) {
                    // small files live with their inode (Data-on-MDT), larger ones on the storage node
                    byte[] content = new byte[i % 3 == 0 ? random.nextInt(300_000) : random.nextInt(2_000)];
                    random.nextBytes(content);
                    String path = (i % 2 == 0 ? "/data/" : "/data/nested/deeper/") + "file-" + i;
                    write(client, path, content);
                    written.put(path, content);
                }
                client.rename("/data/file-0", "/data/renamed-0");
                written.put("/data/renamed-0", written.remove("/data/file-0"));
                client.link("/data/file-2", "/data/nested/link-to-2");
                client.symlink("/data/symlink-to-4", "file-4");

                AtomicBoolean stop = new AtomicBoolean();
                Thread writer = Thread.ofPlatform().start(() -> {
                    for (int n = 0; !stop.get() && n < 100_000; n++) {
                        write(client, "/load/f-" + n, loadContent(n));
                        duringBackup.incrementAndGet();
                    }
                });
                Thread.sleep(500);
                String output = TestProcesses.run(cluster.cli("backup", "create", "--out", backup.toString(), "--json"), Duration.ofMinutes(3));
                System.out.println("backup: " + output.trim());
                stop.set(true);
                writer.join(60_000);
                assertThat(Files.getPosixFilePermissions(backup)).extracting(Object::toString).containsOnly("OWNER_READ", "OWNER_WRITE");
                assertThat(fsck(cluster).exitCode()).as("fsck of the running cluster").isZero();
                String verified = TestProcesses.run(TestProcesses.plinth(List.of("-Xmx256m"), List.of("backup", "verify", backup.toString(),
                        "--scratch", directory.toString())), Duration.ofMinutes(2));
                assertThat(verified).contains("MDT 0: ").contains(" 0 findings").contains("restorable");
                // files made after the backup: their chunks stay on the target when the backup is restored
                for (int i = 0; i < 3; i++) {
                    byte[] content = new byte[200_000];
                    random.nextBytes(content);
                    write(client, "/data/after-backup-" + i, content);
                }
            }

            List<Member> members = new ArrayList<>(cluster.mgmtReplicas());
            members.addAll(cluster.metaReplicas());
            members.addAll(cluster.storageNodes());
            for (Member member : members) {
                member.kill();
            }
            Path mgmtData = cluster.mgmtReplicas().getFirst().data;
            FileTrees.delete(mgmtData);
            restore(backup, mgmtData, "--only-mgmt");
            for (MetaProcess meta : cluster.metaReplicas()) {
                FileTrees.delete(meta.data);
                restore(backup, meta.data, "--no-mgmt");
            }
            for (Member member : members) {
                member.start();
            }

            TestProcesses.Result found = fsck(cluster);
            assertThat(found.exitCode()).isEqualTo(1);
            assertThat(found.output()).contains("orphan-chunks: 3");
            assertThat(fsck(cluster, "--repair").output()).contains("repaired orphan-chunks: 3");
            assertThat(fsck(cluster).exitCode()).as("fsck after --repair").isZero();
            try (PlinthClient client = cluster.client(clientConfig)) {
                assertThat(client.list("/data").stream().map(e -> e.name())).noneMatch(name -> name.startsWith("after-backup"));
                for (Map.Entry<String, byte[]> file : written.entrySet()) {
                    assertThat(read(client, file.getKey())).as(file.getKey()).isEqualTo(file.getValue());
                }
                assertThat(client.stat("/data/nested/link-to-2").inodeId()).isEqualTo(client.stat("/data/file-2").inodeId());
                assertThat(client.stat("/data/file-2").linkCount()).isEqualTo(2);
                assertThat(client.readLink("/data/symlink-to-4")).isEqualTo("file-4");
                assertThat(client.list("/data").stream().map(e -> e.name())).doesNotContain("file-0");
                int restoredLoad = 0;
                for (var entry : client.list("/load")) {
                    int n = Integer.parseInt(entry.name().substring(2));
                    byte[] content = read(client, "/load/" + entry.name());
                    byte[] expected = loadContent(n);
                    // a file still open when its MDT was copied keeps what was settled then: empty, or whole
                    assertThat(content.length == 0 || Arrays.equals(content, expected)).as(entry.name()).isTrue();
                    restoredLoad++;
                }
                System.out.printf("restored %d files written before the backup, %d of the %d the writer made while it ran%n",
                        written.size(), restoredLoad, duringBackup.get());
                write(client, "/data/after-restore", "new".getBytes(StandardCharsets.UTF_8));
                assertThat(read(client, "/data/after-restore")).isEqualTo("new".getBytes(StandardCharsets.UTF_8));
            }
        }
    }

    private static TestProcesses.Result fsck(ProcessCluster cluster, String... options) throws Exception {
        List<String> arguments = new ArrayList<>(List.of("fsck"));
        arguments.addAll(List.of(options));
        return TestProcesses.runAllowingFailure(cluster.cli(arguments.toArray(String[]::new)), Map.of(), Duration.ofMinutes(2));
    }

    private static byte[] loadContent(int n) {
        return ("load file " + n + " ").repeat(1 + n % 50).getBytes(StandardCharsets.UTF_8);
    }

    private void restore(Path backup, Path data, String which) throws Exception {
        String output = TestProcesses.run(TestProcesses.plinth(List.of("-Xmx256m"),
                List.of("backup", "restore", backup.toString(), "--data", data.toString(), which)), Duration.ofMinutes(2));
        System.out.println(output.trim());
    }

    private static void write(PlinthClient client, String path, byte[] content) {
        try (PlinthFile file = client.create(path, 0644, true, null)) {
            file.write(0, ByteBuffer.wrap(content));
        }
    }

    private static byte[] read(PlinthClient client, String path) {
        try (PlinthFile file = client.open(path, false)) {
            ByteBuffer buffer = ByteBuffer.allocate((int) file.size());
            while (buffer.hasRemaining()) {
                if (file.read(buffer.position(), buffer) <= 0) {
                    break;
                }
            }
            return Arrays.copyOf(buffer.array(), buffer.position());
        }
    }
}
