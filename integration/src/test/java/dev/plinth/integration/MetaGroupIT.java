package dev.plinth.integration;

import static org.assertj.core.api.Assertions.assertThat;

import dev.plinth.client.PlinthClient;
import dev.plinth.common.Config;
import dev.plinth.common.ErrorCode;
import dev.plinth.common.PlinthException;
import dev.plinth.integration.ProcessCluster.MetaProcess;
import dev.plinth.wire.messages.MetaMessages.Attributes;
import dev.plinth.wire.messages.MetaMessages.DirEntry;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * MDT 0 as a Raft group of three `plinth meta` processes under a metadata workload (creates with
 * small writes, renames, hard links, unlinks from several threads of one native client) while a
 * nemesis kills the leader, kills a follower, pauses the leader (SIGSTOP), and cuts the leader and
 * then a follower off from the other replicas (each replica in a network namespace of its own;
 * mgmt and clients still reach it). Afterwards the namespace is what the
 * acknowledged operations made it: every acknowledged name exists once, nothing removed is back,
 * no operation was applied twice (a change sent again after a lost reply would fail with EEXIST
 * or ENOENT), link counts and file contents match. Prints operations, faults, violations and the
 * time each fault kept creates from being acknowledged. `plinth fsck` then finds nothing, and
 * `plinth status` shows the three replicas and which leads.
 */
class MetaGroupIT {
    private static final int WORKERS = 3;

    @TempDir
    Path directory;

    /** What a worker knows of one file: its names now (acknowledged), and whether an operation on it had no answer. */
    private static final class FileState {
        final String base;
        final String content;
        final Set<String> names = new HashSet<>();
        volatile boolean uncertain;

        FileState(String name, String content) {
            this.base = name;
            this.content = content;
            names.add(name);
        }
    }

    @Test
    void theNamespaceSurvivesLeaderAndFollowerFailures() throws Exception {
        List<String> settings = List.of("rpc.timeout-millis=10000", "client.retry-timeout-millis=60000", "cluster.mdt-replica-timeout-millis=2000");
        Config clientConfig = Config.defaults().with("rpc.timeout-millis", "10000").with("client.retry-timeout-millis", "60000")
                .with("cluster.mdt-replica-timeout-millis", "2000");
        try (ProcessCluster cluster = ProcessCluster.startIsolated(directory, 3, 1, settings);
             PlinthClient client = cluster.client(clientConfig)) {
            ProcessCluster.awaitMap(client, map -> map.mdt(0) != null && map.mdt(0).replicas().size() == 3, 30_000);
            long dirId = client.mkdirs("/work", 0755).inodeId();

            AtomicBoolean stop = new AtomicBoolean();
            ConcurrentLinkedQueue<Long> acknowledged = new ConcurrentLinkedQueue<>();
            List<String> violations = java.util.Collections.synchronizedList(new ArrayList<>());
            Map<String, FileState> files = new ConcurrentHashMap<>();
            AtomicInteger operations = new AtomicInteger();
            List<Thread> workers = new ArrayList<>();
            for (int w = 0; w < WORKERS; w++) {
                int worker = w;
                workers.add(Thread.ofPlatform().name("workload-" + w).start(
                        () -> work(client, dirId, worker, stop, acknowledged, files, operations, violations)));
            }

            List<String> faults = new ArrayList<>();
            List<long[]> faultTimes = new ArrayList<>();
            awaitAcknowledged(acknowledged, 50);
            for (int round = 0; round < 2; round++) {
                MetaProcess leader = ProcessCluster.awaitMetaLeader(cluster.metaReplicas());
                long at = System.nanoTime();
                leader.kill();
                record(faults, faultTimes, "kill leader meta-" + leader.index, at);
                awaitAcknowledgedAfter(acknowledged, at);
                Thread.sleep(2000);
                leader.start();

                MetaProcess follower = cluster.metaReplicas().stream().filter(m -> !m.leads()).findFirst().orElseThrow();
                at = System.nanoTime();
                follower.kill();
                record(faults, faultTimes, "kill follower meta-" + follower.index, at);
                Thread.sleep(2000);
                follower.start();

                leader = ProcessCluster.awaitMetaLeader(cluster.metaReplicas());
                at = System.nanoTime();
                leader.pause();
                record(faults, faultTimes, "pause leader meta-" + leader.index, at);
                awaitAcknowledgedAfter(acknowledged, at);
                Thread.sleep(1000);
                leader.resume();

                leader = ProcessCluster.awaitMetaLeader(cluster.metaReplicas());
                at = System.nanoTime();
                for (MetaProcess other : cluster.metaReplicas()) {
                    if (other != leader) {
                        cluster.cut(leader, other);
                    }
                }
                record(faults, faultTimes, "cut leader meta-" + leader.index + " off", at);
                awaitAcknowledgedAfter(acknowledged, at);
                Thread.sleep(1000);
                for (MetaProcess other : cluster.metaReplicas()) {
                    if (other != leader) {
                        cluster.heal(leader, other);
                    }
                }
                MetaProcess follower2 = cluster.metaReplicas().stream().filter(m -> !m.leads()).findFirst().orElseThrow();
                at = System.nanoTime();
                for (MetaProcess other : cluster.metaReplicas()) {
                    if (other != follower2) {
                        cluster.cut(follower2, other);
                    }
                }
                record(faults, faultTimes, "cut follower meta-" + follower2.index + " off", at);
                Thread.sleep(2000);
                for (MetaProcess other : cluster.metaReplicas()) {
                    if (other != follower2) {
                        cluster.heal(follower2, other);
                    }
                }
                ProcessCluster.awaitMetaLeader(cluster.metaReplicas());
                awaitAcknowledgedAfter(acknowledged, System.nanoTime());
            }
            stop.set(true);
            for (Thread worker : workers) {
                worker.join(120_000);
            }

            List<Long> acks = new ArrayList<>(acknowledged);
            java.util.Collections.sort(acks);
            for (int i = 0; i < faults.size(); i++) {
                long from = faultTimes.get(i)[0];
                long until = i + 1 < faults.size() ? faultTimes.get(i + 1)[0] : from + TimeUnit.SECONDS.toNanos(15);
                System.out.printf("fault %-30s longest wait for an acknowledgement until the next fault: %6d ms%n", faults.get(i),
                        TimeUnit.NANOSECONDS.toMillis(longestGap(acks, from, until - from)));
            }
            violations.addAll(check(client, dirId, files));
            System.out.printf("MDT group: %d operations acknowledged, %d faults injected, %d violations%n", operations.get(), faults.size(),
                    violations.size());
            violations.forEach(v -> System.out.println("violation: " + v));
            assertThat(violations).isEmpty();
            assertThat(operations.get()).isGreaterThan(100);

            TestProcesses.Result fsck = TestProcesses.runAllowingFailure(cluster.cli("fsck"), Map.of(), java.time.Duration.ofMinutes(2));
            assertThat(fsck.exitCode()).as("fsck after the faults").isZero();
            String status = TestProcesses.runAllowingFailure(cluster.cli("status"), Map.of(), java.time.Duration.ofMinutes(2)).output();
            assertThat(status).containsPattern("mdt 0 +3 replicas: .* leads \\(\\d+ inodes\\)").contains("follows");
        }
    }

    /** The longest time without an acknowledgement between {@code from} and {@code from + window} (acks sorted). */
    private static long longestGap(List<Long> acks, long from, long window) {
        long previous = from;
        long longest = 0;
        for (long ack : acks) {
            if (ack <= from) {
                continue;
            }
            long at = Math.min(ack, from + window);
            longest = Math.max(longest, at - previous);
            previous = at;
            if (ack >= from + window) {
                break;
            }
        }
        return longest;
    }

    private static void record(List<String> faults, List<long[]> times, String fault, long at) {
        faults.add(fault);
        times.add(new long[] {at});
        System.out.println("nemesis: " + fault);
    }

    /**
     * One worker: creates a file with a few bytes, and now and then renames, links or unlinks one
     * of its own. A failed operation that may have been applied makes its file uncertain (not
     * checked); an answer that shows a change applied twice is a violation.
     */
    private static void work(PlinthClient client, long dirId, int worker, AtomicBoolean stop, ConcurrentLinkedQueue<Long> acknowledged,
                             Map<String, FileState> files, AtomicInteger operations, List<String> violations) {
        List<FileState> mine = new ArrayList<>();
        for (int n = 0; !stop.get() && n < 100_000; n++) {
            String name = "w" + worker + "-" + n;
            FileState file = new FileState(name, "contents of " + name);
            files.put(name, file);
            try {
                PlinthClient.OpenedFile created = client.createAndOpen(dirId, name, 0644, true, null);
                created.file().write(0, ByteBuffer.wrap(file.content.getBytes(StandardCharsets.UTF_8)));
                created.file().close();
                mine.add(file);
                ack(acknowledged, operations);
            } catch (PlinthException e) {
                file.uncertain = true;
                if (e.code() == ErrorCode.ALREADY_EXISTS) {
                    violations.add("create of the new name " + name + " answered EEXIST: applied twice");
                }
                continue;
            }
            FileState other = mine.get((int) ((n * 7919L) % mine.size()));
            if (other.uncertain || other.names.isEmpty()) {
                continue;
            }
            String someName = other.names.iterator().next();
            String change = n % 3 == 0 ? "rename" : n % 3 == 1 ? "link" : "unlink";
            try {
                switch (change) {
                    case "rename" -> {
                        String target = other.base + ".r" + n; // never taken
                        client.rename(dirId, someName, dirId, target, true);
                        other.names.remove(someName);
                        other.names.add(target);
                    }
                    case "link" -> {
                        String target = other.base + ".l" + n;
                        Attributes attributes = client.lookup(dirId, someName);
                        client.link(attributes.inodeId(), dirId, target);
                        other.names.add(target);
                    }
                    default -> {
                        client.unlink(dirId, someName);
                        other.names.remove(someName);
                    }
                }
                ack(acknowledged, operations);
            } catch (PlinthException e) {
                other.uncertain = true;
                if (e.code() == ErrorCode.ALREADY_EXISTS || e.code() == ErrorCode.NOT_FOUND) {
                    violations.add(change + " of " + someName + " answered " + e.code() + ": applied twice or lost");
                }
            }
        }
    }

    private static void ack(ConcurrentLinkedQueue<Long> acknowledged, AtomicInteger operations) {
        acknowledged.add(System.nanoTime());
        operations.incrementAndGet();
    }

    /** Compares the directory with what the acknowledged operations made it. */
    private static List<String> check(PlinthClient client, long dirId, Map<String, FileState> files) {
        List<String> violations = new ArrayList<>();
        Map<String, DirEntry> listed = new HashMap<>();
        for (DirEntry entry : client.list("/work")) {
            listed.put(entry.name(), entry);
        }
        Set<String> accounted = new HashSet<>();
        for (FileState file : files.values()) {
            Set<String> names = file.names;
            accounted.addAll(names);
            if (file.uncertain) {
                continue; // any of its names, and any an unanswered change made, may exist
            }
            long inode = -1;
            for (String name : names) {
                DirEntry entry = listed.get(name);
                if (entry == null) {
                    violations.add("acknowledged name " + name + " is missing");
                    continue;
                }
                if (inode != -1 && entry.inodeId() != inode) {
                    violations.add("names of one file point at two inodes: " + names);
                }
                inode = entry.inodeId();
            }
            if (inode == -1) {
                continue;
            }
            String someName = names.iterator().next();
            Attributes attributes = client.lookup(dirId, someName);
            if (attributes.linkCount() != names.size()) {
                violations.add(someName + " has " + attributes.linkCount() + " links, the acknowledged operations made " + names.size());
            }
            ByteBuffer content = ByteBuffer.allocate(file.content.length() + 16);
            try (var opened = client.open("/work/" + someName, false)) {
                opened.read(0, content);
            }
            if (!new String(content.array(), 0, content.position(), StandardCharsets.UTF_8).equals(file.content)) {
                violations.add(someName + " holds other bytes than were written");
            }
        }
        for (String name : listed.keySet()) {
            FileState file = files.get(name.contains(".") ? name.substring(0, name.indexOf('.')) : name);
            if (!accounted.contains(name) && (file == null || !file.uncertain)) {
                violations.add("name " + name + " exists, though no acknowledged operation left it");
            }
        }
        return violations;
    }

    private static void awaitAcknowledged(ConcurrentLinkedQueue<Long> acknowledged, int count) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (acknowledged.size() < count) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("the workload made no progress");
            }
            Thread.sleep(50);
        }
    }

    /** Waits (60 s at most) until an operation is acknowledged after {@code at}. */
    private static void awaitAcknowledgedAfter(ConcurrentLinkedQueue<Long> acknowledged, long at) throws InterruptedException {
        AtomicLong last = new AtomicLong();
        long deadline = at + TimeUnit.SECONDS.toNanos(60);
        while (System.nanoTime() < deadline) {
            acknowledged.forEach(t -> last.accumulateAndGet(t, Math::max));
            if (last.get() > at) {
                return;
            }
            Thread.sleep(50);
        }
        throw new AssertionError("no operation was acknowledged in 60 s after the fault");
    }
}
