package dev.plinth.integration;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.plinth.client.PlinthClient;
import dev.plinth.client.PlinthFile;
import dev.plinth.wire.ClusterSecret;
import dev.plinth.common.Credentials;
import dev.plinth.common.ErrorCode;
import dev.plinth.common.InodeId;
import dev.plinth.common.PlinthException;
import dev.plinth.server.MetaRole;
import dev.plinth.server.ProcessHost;
import dev.plinth.wire.HostPort;
import dev.plinth.wire.messages.HsmMessages;
import dev.plinth.wire.messages.MetaMessages;
import dev.plinth.wire.messages.MetaMessages.Attributes;
import dev.plinth.wire.messages.MetaMessages.ReadDirPlusReply;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A cluster with two MDTs (the embedded server's MDT 0 and a second host with MDT 1): directories
 * placed on MDT 1 with `mkdir --mdt`, paths and listings that cross between the MDTs, files in
 * them, removal, what is refused across MDTs, and an intent carried forward after MDT 1 was away.
 */
class SeveralMdtsTest {
    @TempDir
    Path directory;

    @Test
    void directoriesOnASecondMdt() throws Exception {
        try (MiniCluster cluster = MiniCluster.start(directory.resolve("server"));
             ProcessHost mdt1 = startMdt1(cluster);
             PlinthClient client = cluster.client()) {
            awaitMdt1(client);

            Attributes remote = client.mkdir("/remote", 0755, 1);
            assertThat(InodeId.mdtIndex(remote.inodeId())).isEqualTo(1);
            assertThat(client.stat("/remote").inodeId()).isEqualTo(remote.inodeId());
            assertThat(client.lookup(InodeId.ROOT, "remote").uid()).as("the attributes come from MDT 1").isEqualTo(0);
            assertThat(client.stat("/").linkCount()).as("a subdirectory on another MDT counts in its parent").isEqualTo(3);

            // what is made below it follows it; a file there is written and read through MDT 1
            Attributes sub = client.mkdir("/remote/sub", 0755);
            assertThat(InodeId.mdtIndex(sub.inodeId())).isEqualTo(1);
            byte[] bytes = "on the second MDT".getBytes(StandardCharsets.UTF_8);
            try (PlinthFile file = client.create("/remote/sub/f", 0644, false, null)) {
                file.write(0, ByteBuffer.wrap(bytes));
            }
            try (PlinthFile file = client.open("/remote/sub/f", false)) {
                assertThat(InodeId.mdtIndex(file.attributes().inodeId())).isEqualTo(1);
                ByteBuffer read = ByteBuffer.allocate(bytes.length);
                file.read(0, read);
                assertThat(read.array()).isEqualTo(bytes);
            }

            // back to MDT 0 below a directory of MDT 1, and paths that cross both ways
            Attributes back = client.mkdir("/remote/back", 0700, 0);
            assertThat(InodeId.mdtIndex(back.inodeId())).isZero();
            assertThat(client.stat("/remote/back/../sub").inodeId()).isEqualTo(sub.inodeId());
            client.symlink("/remote/link", "/remote/back");
            assertThat(client.stat("/remote/link").inodeId()).as("an absolute symlink on MDT 1 goes back to the root").isEqualTo(back.inodeId());

            ReadDirPlusReply listing = client.readDirPlus(InodeId.ROOT, "", 100);
            int at = listing.entries().stream().map(e -> e.name()).toList().indexOf("remote");
            assertThat(listing.attributes().get(at).mode() & 0777).as("a listing gets a remote entry's attributes from its MDT").isEqualTo(0755);
            assertThat(listing.attributes().get(at).linkCount()).isEqualTo(4);

            // links, unlinks and renames across the MDTs
            assertThat(code(() -> client.unlink(InodeId.ROOT, "remote"))).isEqualTo(ErrorCode.IS_A_DIRECTORY);
            assertThat(code(() -> client.mkdir("/remote", 0755, 1))).isEqualTo(ErrorCode.ALREADY_EXISTS);
            assertThat(code(() -> client.mkdir("/nowhere", 0755, 7))).isEqualTo(ErrorCode.INVALID_ARGUMENT);
            long file = client.stat("/remote/sub/f").inodeId();
            assertThat(client.link("/remote/sub/f", "/hard").linkCount()).as("a link on MDT 0 to a file of MDT 1").isEqualTo(2);
            assertThat(client.stat("/hard").inodeId()).isEqualTo(file);
            assertThat(client.namespaceFindings()).isEmpty();
            client.delete("/hard");
            assertThat(client.stat("/remote/sub/f").linkCount()).isEqualTo(1);
            client.rename("/remote/sub/f", "/moved-file");
            assertThat(code(() -> client.stat("/remote/sub/f"))).isEqualTo(ErrorCode.NOT_FOUND);
            try (PlinthFile moved = client.open("/moved-file", false)) {
                assertThat(moved.attributes().inodeId()).as("a rename moves the name, not the inode").isEqualTo(file);
                ByteBuffer read = ByteBuffer.allocate(bytes.length);
                moved.read(0, read);
                assertThat(read.array()).isEqualTo(bytes);
            }
            client.rename("/moved-file", "/remote/sub/f"); // and back, onto MDT 1 again
            client.rename("/remote/back", "/back"); // a directory of MDT 0 named on MDT 1 comes home
            assertThat(client.stat("/back/..").inodeId()).isEqualTo(InodeId.ROOT);
            client.rename("/back", "/remote/back");
            assertThat(client.stat("/remote/back/..").inodeId()).isEqualTo(remote.inodeId());
            assertThat(code(() -> client.rename("/remote", "/remote/back/inside"))).as("not into itself, across MDTs")
                    .isEqualTo(ErrorCode.INVALID_ARGUMENT);
            try (PlinthClient user = cluster.client(new Credentials(1000, 1000, List.of()))) {
                assertThat(code(() -> user.mkdir("/mine", 0755, 1))).isEqualTo(ErrorCode.PERMISSION_DENIED);
                assertThat(code(() -> user.delete("/remote/back"))).isEqualTo(ErrorCode.PERMISSION_DENIED);
                assertThat(code(() -> user.rename("/remote/sub/f", "/f"))).isEqualTo(ErrorCode.PERMISSION_DENIED);
            }
            // a set-group-ID directory hands its group and the bit to a directory made on another MDT, as to one made beside it
            client.mkdir("/shared", 0755);
            long shared = client.stat("/shared").inodeId();
            client.setAttr(shared, MetaMessages.SET_MODE | MetaMessages.SET_GID, 02777 | 01000, 0, 4242, 0, 0, 0);
            client.mkdir("/shared/there", 0750, 1);
            var there = client.stat("/shared/there");
            assertThat(there.gid()).isEqualTo(4242);
            assertThat(there.mode() & 07777).isEqualTo(02750);
            // and its sticky bit keeps another user's file from a rename arriving from another MDT
            try (PlinthClient owner = cluster.client(new Credentials(1001, 1001, List.of()));
                 PlinthClient other = cluster.client(new Credentials(1002, 1002, List.of()))) {
                owner.create("/shared/victim", 0644, true, null).close();
                other.mkdir("/shared/theirs", 0777, 1);
                other.create("/shared/theirs/f", 0644, true, null).close();
                assertThat(code(() -> other.rename("/shared/theirs/f", "/shared/victim"))).isEqualTo(ErrorCode.OPERATION_NOT_PERMITTED);
                owner.delete("/shared/victim");
                other.delete("/shared/theirs/f");
                other.delete("/shared/theirs");
            }
            client.delete("/shared/there");
            client.delete("/shared");
            assertThat(client.namespaceFindings()).isEmpty();

            // removal: refused while not empty, then the name and the inode go together
            assertThat(code(() -> client.delete("/remote"))).isEqualTo(ErrorCode.DIRECTORY_NOT_EMPTY);
            client.delete("/remote/back");
            client.delete("/remote/link");
            client.delete("/remote/sub/f");
            client.delete("/remote/sub");
            client.delete("/remote");
            assertThat(code(() -> client.stat("/remote"))).isEqualTo(ErrorCode.NOT_FOUND);
            assertThat(client.stat("/").linkCount()).isEqualTo(2);
            assertThat(client.namespaceFindings()).isEmpty();
        }
    }

    @Test
    void aDirectoryAskedForWhileItsMdtIsAwayIsMadeWhenItReturns() throws Exception {
        try (MiniCluster cluster = MiniCluster.start(directory.resolve("server"));
             PlinthClient client = cluster.client()) {
            ProcessHost mdt1 = startMdt1(cluster);
            awaitMdt1(client);
            client.mkdir("/first", 0755, 1);
            mdt1.close();

            CompletableFuture<Attributes> made = CompletableFuture.supplyAsync(() -> client.mkdir("/later", 0750, 1));
            Thread.sleep(1000);
            assertThat(made).isNotDone();
            // the name is taken, and not there yet
            assertThat(code(() -> client.stat("/later"))).isEqualTo(ErrorCode.NOT_FOUND);
            assertThat(code(() -> client.mkdir("/later", 0755))).isEqualTo(ErrorCode.ALREADY_EXISTS);
            assertThat(client.readDir(InodeId.ROOT, "", 100).entries()).extracting(e -> e.name()).containsExactly("first");

            try (ProcessHost again = startMdt1(cluster)) {
                Attributes later = made.get(60, TimeUnit.SECONDS);
                assertThat(InodeId.mdtIndex(later.inodeId())).isEqualTo(1);
                assertThat(client.stat("/later").mode() & 0777).isEqualTo(0750);
                assertThat(client.stat("/first").inodeId()).as("MDT 1 kept what it had").isNotZero();
                assertThat(client.namespaceFindings()).isEmpty();
            }
        }
    }

    @Test
    void twoDirectoriesMovedIntoEachOtherAtOnceNeverFormALoop() throws Exception {
        try (MiniCluster cluster = MiniCluster.start(directory.resolve("server"));
             ProcessHost mdt1 = startMdt1(cluster);
             PlinthClient client = cluster.client()) {
            awaitMdt1(client);
            client.mkdir("/p", 0755);
            client.mkdir("/q", 0755, 1);
            java.util.concurrent.ExecutorService movers = java.util.concurrent.Executors.newFixedThreadPool(2);
            try {
                for (int round = 0; round < 20; round++) {
                    // each moves one into the other: at most one may succeed, or the two would hang in a loop cut off from the root
                    var first = movers.submit(() -> codeOrNull(() -> client.rename("/p", "/q/p")));
                    var second = movers.submit(() -> codeOrNull(() -> client.rename("/q", "/p/q")));
                    ErrorCode a = outcome(first);
                    ErrorCode b = outcome(second);
                    assertThat(a == null && b == null).as("round %d: both moves succeeded", round).isFalse();
                    if (a == null) {
                        client.rename("/q/p", "/p");
                    } else if (b == null) {
                        client.rename("/p/q", "/q");
                    }
                    assertThat(client.stat("/p").inodeId()).isNotZero();
                    assertThat(client.stat("/q").inodeId()).isNotZero();
                }
            } finally {
                movers.shutdownNow();
            }
            assertThat(client.namespaceFindings()).isEmpty();
        }
    }

    /** The error a move ended with; null where it succeeded. */
    private static ErrorCode outcome(java.util.concurrent.Future<ErrorCode> move) throws Exception {
        return move.get(60, TimeUnit.SECONDS);
    }

    @Test
    void filesOnASecondMdtAreArchivedReleasedAndRestored() throws Exception {
        try (MiniCluster cluster = MiniCluster.start(directory.resolve("server"));
             ProcessHost mdt1 = startMdt1(cluster);
             PlinthClient client = cluster.client()) {
            awaitMdt1(client);
            client.mkdir("/cold", 0755, 1);
            byte[] bytes = new byte[3 << 20];
            new java.util.Random(7).nextBytes(bytes);
            try (PlinthFile file = client.create("/cold/data", 0644, false, null)) {
                file.write(0, ByteBuffer.wrap(bytes));
            }
            long inode = client.stat("/cold/data").inodeId();
            assertThat(InodeId.mdtIndex(inode)).isEqualTo(1);
            client.hsm().request(inode, HsmMessages.ARCHIVE, 1);
            assertThat(settled(client, inode).states()).as("the mover takes MDT 1's queue too")
                    .isEqualTo(HsmMessages.EXISTS | HsmMessages.ARCHIVED);
            client.hsm().request(inode, HsmMessages.RELEASE, 0);
            try (PlinthFile file = client.open("/cold/data", false)) {
                ByteBuffer read = ByteBuffer.allocate(bytes.length);
                file.read(0, read);
                assertThat(read.array()).as("restored through MDT 1's queue").isEqualTo(bytes);
            }
            assertThat(settled(client, inode).states() & HsmMessages.RELEASED).isZero();
        }
    }

    private static HsmMessages.HsmState settled(PlinthClient client, long inode) throws InterruptedException {
        for (int i = 0; i < 1500; i++) {
            HsmMessages.HsmState state = client.hsm().state(inode);
            if (state.action() == null) {
                return state;
            }
            Thread.sleep(20);
        }
        throw new AssertionError("the HSM action did not end: " + client.hsm().state(inode));
    }

    private ProcessHost startMdt1(MiniCluster cluster) {
        ClusterSecret secret = ClusterSecret.read(cluster.server().secretFile());
        List<HostPort> mgmt = List.of(cluster.server().rpcAddress());
        return ProcessHost.run("mdt1", MiniCluster.testConfig(), secret, true, null, Map.of(),
                host -> MetaRole.add(host, directory.resolve("mdt1"), 1, mgmt));
    }

    private static void awaitMdt1(PlinthClient client) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (client.refreshClusterMap().mdt(1) == null) {
            assertThat(System.nanoTime()).as("MDT 1 registers").isLessThan(deadline);
            Thread.sleep(50);
        }
    }

    private static ErrorCode code(Runnable action) {
        ErrorCode code = codeOrNull(action);
        if (code == null) {
            throw new AssertionError("no error");
        }
        return code;
    }

    /** The error {@code action} failed with; null where it succeeded. */
    private static ErrorCode codeOrNull(Runnable action) {
        try {
            action.run();
            return null;
        } catch (PlinthException e) {
            return e.code();
        }
    }
}
