package dev.plinth.mgmt;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.plinth.common.Config;
import dev.plinth.common.ErrorCode;
import dev.plinth.common.PlinthException;
import dev.plinth.wire.HostPort;
import dev.plinth.wire.messages.MgmtMessages.IdKind;
import dev.plinth.wire.messages.MgmtMessages.TargetUsage;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Three mgmt replicas in one JVM (Raft over loopback): changes made on the leader reach every
 * replica's state and file; followers refuse requests; and state survives restarts of every
 * replica, replayed from snapshot and log without applying a change twice.
 */
class MgmtReplicationTest {
    @TempDir
    Path directory;

    private final List<HostPort> peers = new ArrayList<>();
    private final MgmtService[] replicas = new MgmtService[3];

    @AfterEach
    void closeAll() {
        for (MgmtService replica : replicas) {
            if (replica != null) {
                replica.close();
            }
        }
    }

    @Test
    void changesReachEveryReplicaAndSurviveRestarts() throws Exception {
        for (int i = 0; i < 3; i++) {
            try (ServerSocket probe = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
                peers.add(new HostPort("127.0.0.1", probe.getLocalPort()));
            }
        }
        for (int i = 0; i < 3; i++) {
            start(i);
        }
        MgmtService leader = awaitLeader();
        leader.registerNode(1, "127.0.0.1:9001", List.of(new TargetUsage(1, 1L << 30, 0, 11, 0, 0)), List.of("/t1"));
        leader.registerNode(2, "127.0.0.1:9002", List.of(new TargetUsage(2, 1L << 30, 0, 12, 0, 0)), List.of("/t2"));
        List<Integer> first = leader.allocateIds(IdKind.TARGET, 3);
        assertThat(first).containsExactly(3, 4, 5);
        long version = leader.map().version();
        for (MgmtService replica : replicas) {
            awaitVersion(replica, version);
            assertThat(replica.map().targets()).hasSize(2);
            assertThat(replica.map().chains()).anyMatch(chain -> chain.replicas() == 2);
        }
        for (MgmtService replica : replicas) {
            if (replica != leader) {
                assertThatThrownBy(() -> replica.allocateIds(IdKind.NODE, 1))
                        .isInstanceOfSatisfying(PlinthException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.NOT_LEADER));
            }
        }

        // Every replica restarts: the state comes back from file and log, and ids handed out stay handed out.
        for (int i = 0; i < 3; i++) {
            replicas[i].close();
        }
        for (int i = 0; i < 3; i++) {
            start(i);
        }
        leader = awaitLeader();
        for (MgmtService replica : replicas) {
            awaitVersion(replica, version);
            assertThat(replica.map().targets()).hasSize(2);
        }
        assertThat(leader.allocateIds(IdKind.TARGET, 1)).containsExactly(6);
    }

    private void start(int index) {
        replicas[index] = new MgmtService(directory.resolve("mgmt-" + index), Config.defaults(), peers, index);
    }

    private MgmtService awaitLeader() throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (System.nanoTime() < deadline) {
            for (MgmtService replica : replicas) {
                if ("leader".equals(replica.replication().get("role"))) {
                    try {
                        replica.allocateIds(IdKind.NODE, 1); // ready: it has applied what earlier leaders committed
                        return replica;
                    } catch (PlinthException e) {
                        // elected but not ready yet
                    }
                }
            }
            Thread.sleep(50);
        }
        throw new AssertionError("no leader in 30 s");
    }

    private static void awaitVersion(MgmtService replica, long version) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (replica.map().version() < version) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("replica stayed at map version " + replica.map().version() + ", expected " + version);
            }
            Thread.sleep(20);
        }
    }
}
