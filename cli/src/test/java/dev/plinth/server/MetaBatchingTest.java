package dev.plinth.server;

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

    private static long openSession(dev.plinth.meta.MetaService meta) {
        return ((MetaMessages.SessionReply) meta.mutate(new MetaMessages.OpenSession(new OpHeader(0, 0, Credentials.ROOT, 0), "batch-test"))
                .join()).clientId();
    }
}
