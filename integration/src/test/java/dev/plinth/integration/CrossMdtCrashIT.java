package dev.plinth.integration;

import static org.assertj.core.api.Assertions.assertThat;

import dev.plinth.client.PlinthClient;
import dev.plinth.client.PlinthFile;
import dev.plinth.common.Config;
import dev.plinth.common.ErrorCode;
import dev.plinth.common.FaultPoints;
import dev.plinth.common.PlinthException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Names that cross MDTs under failures: two workers create files on MDT 0 and MDT 1, rename them
 * back and forth between the MDTs, hard-link them across and unlink the links, and make and
 * remove directories on the other MDT, while a nemesis injects faults one after another: with
 * single-replica MDTs it kills (SIGKILL) and pauses (SIGSTOP) each; with both MDTs Raft groups of
 * three it kills each group's leader and a follower, pauses the leader, and cuts the leader and a
 * follower off. It prints how long progress took to resume after each fault. Afterwards every file a worker knows of is in exactly one place (where the last
 * acknowledged change put it, or either place where the last change's outcome was not learned),
 * its bytes are intact, and fsck finds nothing across the two MDTs. A backup taken while the
 * workers run passes `plinth backup verify` (its stores restore and fsck accepts them).
 */
class CrossMdtCrashIT {
    private static final List<String> DIRECTORIES = List.of("/zero", "/one");
    private static final int OPERATIONS_MAX = 3000;

    @TempDir
    Path directory;

    /** Where a worker's file is: a directory index, or -1 where its last change was not acknowledged either way. */
    private final Map<String, Integer> locations = new ConcurrentHashMap<>();
    private final AtomicLong acknowledged = new AtomicLong();
    private final AtomicLong lastAcknowledgedNanos = new AtomicLong(System.nanoTime());
    private final AtomicLong unknownOutcomes = new AtomicLong();

    /** One fault of the nemesis: it injects it, waits until it is over, and returns what it did. */
    @FunctionalInterface
    private interface Fault {
        String inject() throws Exception;
    }

    @Test
    void namesAcrossMdtsSurviveKilledMdts() throws Exception {
        try (ProcessCluster cluster = ProcessCluster.start(directory, 1, List.of())) {
            // each step of an intent waits a little, so that kills land while intents are open
            cluster.meta().faults = FaultPoints.META_INTENT_STEP_DELAY_MILLIS + "=30";
            cluster.meta().kill();
            cluster.meta().start();
            ProcessCluster.MetaProcess mdt1 = cluster.addMdt(1, FaultPoints.META_INTENT_STEP_DELAY_MILLIS + "=30");
            ProcessCluster.MetaProcess mdt0 = cluster.meta();
            List<Fault> faults = new ArrayList<>();
            for (ProcessCluster.MetaProcess victim : List.of(mdt1, mdt0, mdt1, mdt0)) {
                faults.add(() -> {
                    victim.kill();
                    Thread.sleep(1000);
                    victim.start();
                    return "kill MDT " + victim.mdt;
                });
            }
            for (ProcessCluster.MetaProcess victim : List.of(mdt1, mdt0)) {
                faults.add(() -> {
                    victim.pause(); // a hung MDT: its sockets stay open and nothing answers
                    Thread.sleep(3000);
                    victim.resume();
                    return "pause MDT " + victim.mdt + " for 3 s";
                });
            }
            exercise(cluster, MiniCluster.testConfig().with("client.retry-timeout-millis", "60000"), faults);
        }
    }

    /**
     * The same workload with MDT 0 and MDT 1 each a Raft group of three replicas, every replica in a
     * network namespace of its own (as {@link MetaGroupIT}): in each group in turn the nemesis
     * kills the leader and a follower, pauses the leader, and cuts the leader and then a follower
     * off from the others.
     */
    @Test
    void namesAcrossMdtsSurviveFailuresOfReplicatedMdts() throws Exception {
        List<String> settings = List.of("rpc.timeout-millis=10000", "client.retry-timeout-millis=60000", "cluster.mdt-replica-timeout-millis=2000");
        Config config = Config.defaults().with("rpc.timeout-millis", "10000").with("client.retry-timeout-millis", "60000")
                .with("cluster.mdt-replica-timeout-millis", "2000");
        try (ProcessCluster cluster = ProcessCluster.startIsolated(directory, 3, 1, settings)) {
            try (PlinthClient client = cluster.client(config)) {
                ProcessCluster.awaitMap(client, map -> map.mdt(0) != null && map.mdt(0).replicas().size() == 3, 30_000);
            }
            List<List<ProcessCluster.MetaProcess>> groups = List.of(cluster.metaReplicas(), cluster.addMdtGroup(1, 3));
            List<Fault> faults = new ArrayList<>();
            for (List<ProcessCluster.MetaProcess> group : groups) {
                String name = "MDT " + group.getFirst().mdt;
                faults.add(() -> {
                    ProcessCluster.MetaProcess leader = ProcessCluster.awaitMetaLeader(group);
                    leader.kill();
                    Thread.sleep(2000);
                    leader.start();
                    return "kill " + name + " leader " + leader.index;
                });
                faults.add(() -> {
                    ProcessCluster.awaitMetaLeader(group);
                    ProcessCluster.MetaProcess follower = group.stream().filter(m -> !m.leads()).findFirst().orElseThrow();
                    follower.kill();
                    Thread.sleep(2000);
                    follower.start();
                    return "kill " + name + " follower " + follower.index;
                });
                faults.add(() -> {
                    ProcessCluster.MetaProcess leader = ProcessCluster.awaitMetaLeader(group);
                    leader.pause();
                    Thread.sleep(3000);
                    leader.resume();
                    return "pause " + name + " leader " + leader.index + " for 3 s";
                });
                faults.add(() -> {
                    ProcessCluster.MetaProcess leader = ProcessCluster.awaitMetaLeader(group);
                    cutOff(cluster, group, leader, 3000);
                    return "cut " + name + " leader " + leader.index + " off for 3 s";
                });
                faults.add(() -> {
                    ProcessCluster.awaitMetaLeader(group);
                    ProcessCluster.MetaProcess follower = group.stream().filter(m -> !m.leads()).findFirst().orElseThrow();
                    cutOff(cluster, group, follower, 3000);
                    return "cut " + name + " follower " + follower.index + " off for 3 s";
                });
            }
            exercise(cluster, config, faults);
        }
    }

    private static void cutOff(ProcessCluster cluster, List<ProcessCluster.MetaProcess> group, ProcessCluster.MetaProcess replica, long millis)
            throws Exception {
        for (ProcessCluster.MetaProcess other : group) {
            if (other != replica) {
                cluster.cut(replica, other);
            }
        }
        Thread.sleep(millis);
        for (ProcessCluster.MetaProcess other : group) {
            if (other != replica) {
                cluster.heal(replica, other);
            }
        }
    }

    /**
     * Runs the workload on {@code cluster} (MDT 0 and MDT 1 up) while {@code faults} are injected one
     * after another, 2.5 s apart; takes a backup under the workload; then checks every file, fsck
     * and the backup, and prints what happened.
     */
    private void exercise(ProcessCluster cluster, Config config, List<Fault> faults) throws Exception {
        long seed = Long.getLong("plinth.seed", System.nanoTime());
        try (PlinthClient client = cluster.client(config)) {
            client.mkdir("/zero", 0755);
            client.mkdir("/one", 0755, 1);
        }
        AtomicBoolean stop = new AtomicBoolean();
        List<Thread> workers = new ArrayList<>();
        List<Throwable> failures = new java.util.concurrent.CopyOnWriteArrayList<>();
        for (int w = 0; w < 2; w++) {
            int worker = w;
            workers.add(Thread.ofPlatform().start(() -> {
                try (PlinthClient client = cluster.client(config)) {
                    work(client, worker, new Random(seed + worker), stop);
                } catch (Throwable e) {
                    failures.add(e);
                }
            }));
        }
        List<String> injected = new ArrayList<>();
        long longestStall = 0;
        for (Fault fault : faults) {
            Thread.sleep(2500);
            long before = acknowledged.get();
            // the longest time without an acknowledged change while the fault lasts and until progress resumes after it
            AtomicLong longestGap = new AtomicLong();
            AtomicBoolean watching = new AtomicBoolean(true);
            Thread gaps = Thread.ofPlatform().start(() -> {
                while (watching.get()) {
                    longestGap.accumulateAndGet(System.nanoTime() - lastAcknowledgedNanos.get(), Math::max);
                    try {
                        Thread.sleep(10);
                    } catch (InterruptedException e) {
                        return;
                    }
                }
            });
            String what = fault.inject();
            long over = System.nanoTime();
            while (acknowledged.get() <= before + 2 && System.nanoTime() - over < TimeUnit.SECONDS.toNanos(60)) {
                Thread.sleep(20);
            }
            watching.set(false);
            gaps.join();
            long stallMillis = (System.nanoTime() - over) / 1_000_000;
            injected.add(what + ": no change acknowledged for " + longestGap.get() / 1_000_000 + " ms at most, progress " + stallMillis
                    + " ms after it ended");
            longestStall = Math.max(longestStall, stallMillis);
        }
        // a backup taken under the workload: its MDTs' copies agree, so it restores to a namespace fsck accepts
        Path backup = directory.resolve("metadata.tar");
        long beforeBackup = acknowledged.get();
        String backedUp = TestProcesses.run(cluster.cli("backup", "create", "--out", backup.toString()), java.time.Duration.ofMinutes(2));
        long duringBackup = acknowledged.get() - beforeBackup;
        Thread.sleep(500);
        stop.set(true);
        for (Thread worker : workers) {
            worker.join(TimeUnit.MINUTES.toMillis(3));
        }
        assertThat(failures).isEmpty();

        try (PlinthClient client = cluster.client(config)) {
            // open intents are finished by their MDT's leader within a few seconds of it starting
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            List<dev.plinth.wire.messages.FsckMessages.Finding> findings = client.namespaceFindings();
            while (!findings.isEmpty() && System.nanoTime() < deadline) {
                Thread.sleep(500);
                findings = client.namespaceFindings();
            }
            Map<String, List<Integer>> found = new HashMap<>();
            List<String> leftovers = new ArrayList<>();
            for (int d = 0; d < DIRECTORIES.size(); d++) {
                for (var entry : client.list(DIRECTORIES.get(d))) {
                    if (entry.name().startsWith("f-")) {
                        found.computeIfAbsent(entry.name(), name -> new ArrayList<>()).add(d);
                    } else {
                        leftovers.add(DIRECTORIES.get(d) + "/" + entry.name());
                    }
                }
            }
            List<String> violations = new ArrayList<>();
            for (Map.Entry<String, Integer> file : locations.entrySet()) {
                List<Integer> places = found.getOrDefault(file.getKey(), List.of());
                int expected = file.getValue();
                if (places.size() > 1 || expected >= 0 && !places.equals(List.of(expected))) {
                    violations.add(file.getKey() + " expected in " + (expected < 0 ? "either" : DIRECTORIES.get(expected)) + ", found in " + places);
                    continue;
                }
                for (int place : places) {
                    byte[] bytes = read(client, DIRECTORIES.get(place) + "/" + file.getKey());
                    if (!new String(bytes, StandardCharsets.UTF_8).equals(file.getKey())) {
                        violations.add(file.getKey() + " holds other bytes");
                    }
                }
            }
            for (String name : found.keySet()) {
                if (!locations.containsKey(name)) {
                    violations.add(name + " exists but no worker made it");
                }
            }
            long carried = 0;
            try (var logs = java.nio.file.Files.newDirectoryStream(directory, "meta*.log")) {
                for (Path log : logs) {
                    carried += java.nio.file.Files.readAllLines(log).stream().filter(line -> line.contains("carrying on intent")).count();
                }
            }
            System.out.printf("cross-MDT crash test (seed %d): %d operations acknowledged, %d with unknown outcome, %d faults (%s), "
                            + "%d intents carried on by a restarted leader, %d violations, longest wait for progress after a fault ended %d ms, "
                            + "fsck findings %d, other names left %s%n",
                    seed, acknowledged.get(), unknownOutcomes.get(), injected.size(), injected, carried, violations.size(), longestStall,
                    findings.size(), leftovers);
            String verified = TestProcesses.run(TestProcesses.plinth(List.of("-Xmx256m"), List.of("backup", "verify", backup.toString(),
                    "--scratch", directory.toString())), java.time.Duration.ofMinutes(2));
            System.out.printf("backup under the workload (%d changes acknowledged while it ran): %s%s", duringBackup, backedUp, verified);
            assertThat(violations).isEmpty();
            assertThat(verified).contains("MDT 0: ").contains("MDT 1: ").contains("restorable");
            assertThat(findings).isEmpty();
            assertThat(acknowledged.get()).isGreaterThan(50);
        }
    }

    private void work(PlinthClient client, int worker, Random random, AtomicBoolean stop) {
        List<String> mine = new ArrayList<>();
        for (int operation = 0; operation < OPERATIONS_MAX && !stop.get(); operation++) {
            int choice = random.nextInt(10);
            if (mine.size() < 6 || choice < 2) {
                String name = "f-" + worker + "-" + operation;
                int place = random.nextInt(2);
                mine.add(name);
                locations.put(name, -1);
                if (attempt(() -> {
                    try (PlinthFile file = client.create(DIRECTORIES.get(place) + "/" + name, 0644, true, null)) {
                        file.write(0, ByteBuffer.wrap(name.getBytes(StandardCharsets.UTF_8)));
                    }
                })) {
                    locations.put(name, place);
                }
                continue;
            }
            String name = mine.get(random.nextInt(mine.size()));
            Integer place = locations.get(name);
            if (place < 0) {
                place = locate(client, name);
                if (place < 0) {
                    mine.remove(name);
                    locations.remove(name); // a create whose outcome was lost, and it did not happen
                    continue;
                }
                locations.put(name, place);
            }
            String here = DIRECTORIES.get(place) + "/" + name;
            int other = 1 - place;
            if (choice < 6) {
                locations.put(name, -1);
                if (attempt(() -> client.rename(here, DIRECTORIES.get(other) + "/" + name))) {
                    locations.put(name, other);
                }
            } else if (choice < 8) {
                String link = DIRECTORIES.get(other) + "/link-" + name;
                if (attempt(() -> client.link(here, link))) {
                    attempt(() -> client.delete(link));
                }
            } else {
                String made = DIRECTORIES.get(place) + "/dir-" + name + "-" + operation;
                if (attempt(() -> client.mkdir(made, 0755, other))) {
                    attempt(() -> client.delete(made));
                }
            }
        }
    }

    /** Where {@code name} is now, or -1 for nowhere. */
    private static int locate(PlinthClient client, String name) {
        for (int d = 0; d < DIRECTORIES.size(); d++) {
            if (client.exists(DIRECTORIES.get(d) + "/" + name)) {
                return d;
            }
        }
        return -1;
    }

    /** Runs a change; true if it was acknowledged, false where its outcome is unknown (the client gave up waiting). */
    private boolean attempt(Runnable change) {
        try {
            change.run();
            acknowledged.incrementAndGet();
            lastAcknowledgedNanos.set(System.nanoTime());
            return true;
        } catch (PlinthException e) {
            if (e.code() == ErrorCode.UNAVAILABLE || e.code() == ErrorCode.TIMED_OUT || e.code() == ErrorCode.BUSY
                    || e.code() == ErrorCode.NOT_LEADER || e.code() == ErrorCode.CHANGED) {
                unknownOutcomes.incrementAndGet();
                return false;
            }
            throw new AssertionError("a change failed: " + e.getMessage(), e);
        }
    }

    private static byte[] read(PlinthClient client, String path) {
        try (PlinthFile file = client.open(path, false)) {
            ByteBuffer buffer = ByteBuffer.allocate((int) file.attributes().sizeBytes());
            file.read(0, buffer);
            return buffer.array();
        }
    }
}
