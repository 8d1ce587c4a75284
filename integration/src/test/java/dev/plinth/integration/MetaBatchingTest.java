package dev.plinth.integration;

import static org.assertj.core.api.Assertions.assertThat;

import dev.plinth.common.Credentials;
import dev.plinth.common.ErrorCode;
import dev.plinth.common.PlinthException;
import dev.plinth.wire.messages.MetaMessages;
import dev.plinth.wire.messages.MetaMessages.AttributesReply;
import dev.plinth.wire.messages.MetaMessages.OpHeader;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Concurrent changes share log entries: each change is still atomic on its own (a failed one
 * leaves nothing behind), and a retried request that lands twice is applied once.
 */
class MetaBatchingTest {
    @TempDir
    Path directory;

    @Test
    void concurrentChangesInSharedEntriesStayAtomic() throws Exception {
        try (MiniCluster cluster = MiniCluster.start(directory); var client = cluster.client()) {
            var meta = cluster.server().meta();
            long parent = client.mkdir("/batch", 0755).inodeId();
            List<CompletableFuture<Record>> results = new ArrayList<>();
            List<String> names = new ArrayList<>();
            for (int i = 0; i < 600; i++) {
                String name = "d" + (i % 400); // 200 names are asked for twice: one of each pair must fail
                names.add(name);
                results.add(meta.mutate(new MetaMessages.Mkdir(new OpHeader(0, 0, Credentials.ROOT, 0), parent, name, 0755)));
            }
            // the same request id sent three times, concurrently: one directory, one answer
            long session = openSession(meta);
            OpHeader retried = new OpHeader(session, 42, Credentials.ROOT, 0);
            List<CompletableFuture<Record>> retries = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                retries.add(meta.mutate(new MetaMessages.Mkdir(retried, parent, "retried", 0755)));
            }
            Set<String> created = new HashSet<>();
            int failed = 0;
            for (int i = 0; i < results.size(); i++) {
                try {
                    results.get(i).join();
                    assertThat(created.add(names.get(i))).as("%s created twice", names.get(i)).isTrue();
                } catch (CompletionException e) {
                    assertThat(e.getCause()).isInstanceOfSatisfying(PlinthException.class,
                            p -> assertThat(p.code()).isEqualTo(ErrorCode.ALREADY_EXISTS));
                    failed++;
                }
            }
            assertThat(created).hasSize(400);
            assertThat(failed).isEqualTo(200);
            Set<Long> retriedInodes = new HashSet<>();
            for (CompletableFuture<Record> retry : retries) {
                retriedInodes.add(((AttributesReply) retry.join()).attributes().inodeId());
            }
            assertThat(retriedInodes).hasSize(1);
            // failed changes left nothing: entry count and link count match what was created
            assertThat(client.list("/batch")).hasSize(401);
            assertThat(client.stat("/batch").linkCount()).isEqualTo(2 + 401);
        }
    }

    /**
     * A change that fails inside a shared entry after it counted (an inode id, the MDT's inode
     * count and Data-on-MDT bytes) takes its counts back with the rest of its writes: ids stay
     * unique, and the MDT's totals are right, also after a restart.
     */
    @Test
    void countersOfSharedEntriesCountOnlyWhatLanded() throws Exception {
        double inodesBefore;
        double bytesBefore;
        Set<Long> inodes = new HashSet<>();
        long landedBytes = 0;
        try (MiniCluster cluster = MiniCluster.start(directory); var client = cluster.client()) {
            var meta = cluster.server().meta();
            long parent = client.mkdir("/counted", 0755).inodeId();
            inodesBefore = cluster.metric("plinth_meta_inodes{mdt=\"0\"}");
            bytesBefore = cluster.metric("plinth_meta_data_bytes{mdt=\"0\"}");
            List<CompletableFuture<Record>> results = new ArrayList<>();
            List<MetaMessages.Xattr> tooLarge = List.of(new MetaMessages.Xattr("user.big", new byte[dev.plinth.meta.Namespace.XATTR_VALUE_BYTES_MAX + 1]));
            for (int i = 0; i < 600; i++) {
                // every third change fails on its xattr, after its inode and its bytes were counted
                boolean fails = i % 3 == 2;
                results.add(meta.mutate(new MetaMessages.PutWhole(new OpHeader(0, 0, Credentials.ROOT, 0), parent, "f" + i, 0644, null,
                        new byte[1 + i % 100], 0, fails ? tooLarge : List.of(), true, 0)));
            }
            int failed = 0;
            for (int i = 0; i < results.size(); i++) {
                try {
                    var attributes = ((AttributesReply) results.get(i).join()).attributes();
                    assertThat(inodes.add(attributes.inodeId())).as("inode %d given twice", attributes.inodeId()).isTrue();
                    landedBytes += attributes.sizeBytes();
                    assertThat(attributes.sizeBytes()).isEqualTo(1 + i % 100);
                } catch (CompletionException e) {
                    assertThat(i % 3).isEqualTo(2);
                    assertThat(e.getCause()).isInstanceOfSatisfying(PlinthException.class,
                            p -> assertThat(p.code()).isEqualTo(ErrorCode.RESULT_TOO_LARGE));
                    failed++;
                }
            }
            assertThat(failed).isEqualTo(200);
            assertThat(inodes).hasSize(400);
            assertThat(client.list("/counted")).hasSize(400);
            assertThat(cluster.metric("plinth_meta_inodes{mdt=\"0\"}")).isEqualTo(inodesBefore + 400);
            assertThat(cluster.metric("plinth_meta_data_bytes{mdt=\"0\"}")).isEqualTo(bytesBefore + landedBytes);
        }
        try (MiniCluster cluster = MiniCluster.start(directory); var client = cluster.client()) {
            assertThat(cluster.metric("plinth_meta_inodes{mdt=\"0\"}")).isEqualTo(inodesBefore + 400);
            assertThat(cluster.metric("plinth_meta_data_bytes{mdt=\"0\"}")).isEqualTo(bytesBefore + landedBytes);
            long fresh = client.mkdir("/counted/after-restart", 0755).inodeId();
            assertThat(fresh).as("ids go on from the last one given").isGreaterThan(java.util.Collections.max(inodes));
        }
    }

    private static long openSession(dev.plinth.meta.MetaService meta) {
        return ((MetaMessages.SessionReply) meta.mutate(new MetaMessages.OpenSession(new OpHeader(0, 0, Credentials.ROOT, 0), "batch-test"))
                .join()).clientId();
    }
}
