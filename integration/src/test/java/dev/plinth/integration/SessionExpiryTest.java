package dev.plinth.integration;

import static org.assertj.core.api.Assertions.assertThat;

import dev.plinth.client.PlinthClient;
import dev.plinth.client.PlinthFile;
import dev.plinth.common.Credentials;
import dev.plinth.common.ErrorCode;
import dev.plinth.common.PlinthException;
import dev.plinth.wire.ClusterSecret;
import dev.plinth.wire.RpcConnections;
import dev.plinth.wire.messages.MetaMessages;
import dev.plinth.wire.messages.MetaMessages.OpHeader;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A client that dies without closing: its session is not renewed, the leader expires it after the
 * lease, which ends its opens, so a file it held open after an unlink is removed and its chunks freed.
 */
class SessionExpiryTest {
    @TempDir
    Path directory;

    @Test
    void deadClientsOpensEndWithItsLease() throws Exception {
        var config = MiniCluster.testConfig().with("meta.session-lease-millis", "2000");
        try (MiniCluster cluster = MiniCluster.start(directory, config); PlinthClient client = cluster.client()) {
            try (PlinthFile file = client.create("/held", 0644, true, null)) {
                file.write(0, ByteBuffer.wrap(new byte[300_000]));
            }
            long inode = client.stat("/held").inodeId();
            try (RpcConnections raw = new RpcConnections(ClusterSecret.read(cluster.server().secretFile()), "doomed", config)) {
                var server = raw.get(cluster.server().rpcAddress());
                MetaMessages.SessionReply session = server.request(new MetaMessages.OpenSession(new OpHeader(0, 0, Credentials.ROOT, 0), "doomed"));
                server.request(new MetaMessages.Open(new OpHeader(session.clientId(), 1, Credentials.ROOT, 0), inode, false));
                // the doomed client never renews and never closes
            }
            client.delete("/held");
            assertThat(client.getAttr(inode).linkCount()).isZero(); // unlinked but still open: kept
            long deadline = System.currentTimeMillis() + 20_000;
            boolean gone = false;
            while (!gone && System.currentTimeMillis() < deadline) {
                try {
                    client.getAttr(inode);
                    Thread.sleep(100);
                } catch (PlinthException e) {
                    assertThat(e.code()).isEqualTo(ErrorCode.NOT_FOUND);
                    gone = true;
                }
            }
            assertThat(gone).as("the orphan outlived its only opener's lease").isTrue();
            while (cluster.server().storage().usage().stream().mapToLong(u -> u.usedBytes()).sum() > 0
                    && System.currentTimeMillis() < deadline) {
                Thread.sleep(100);
            }
            assertThat(cluster.server().storage().usage().stream().mapToLong(u -> u.usedBytes()).sum()).isZero();
            // the live client, which renews, still works after the expiry runs
            assertThat(client.mkdir("/still-alive", 0755).isDirectory()).isTrue();
        }
    }

    @Test
    void deadClientsLocksEndWithItsLease() throws Exception {
        var config = MiniCluster.testConfig().with("meta.session-lease-millis", "2000");
        try (MiniCluster cluster = MiniCluster.start(directory, config); PlinthClient client = cluster.client()) {
            try (PlinthFile file = client.create("/locked", 0644, true, null)) {
                file.write(0, ByteBuffer.wrap(new byte[10]));
            }
            long inode = client.stat("/locked").inodeId();
            var exclusive = new MetaMessages.FileLock(0, 7, 1234, MetaMessages.LOCK_POSIX, MetaMessages.LOCK_WRITE, 0, MetaMessages.LOCK_TO_END);
            try (RpcConnections raw = new RpcConnections(ClusterSecret.read(cluster.server().secretFile()), "doomed", config)) {
                var server = raw.get(cluster.server().rpcAddress());
                MetaMessages.SessionReply session = server.request(new MetaMessages.OpenSession(new OpHeader(0, 0, Credentials.ROOT, 0), "doomed"));
                MetaMessages.LockReply taken = server.request(new MetaMessages.SetLock(
                        new OpHeader(session.clientId(), 1, Credentials.ROOT, 0), inode, exclusive));
                assertThat(taken.granted()).isTrue();
                // the doomed client never renews and never unlocks
            }
            MetaMessages.LockReply blocked = client.setLock(inode, exclusive);
            assertThat(blocked.granted()).isFalse();
            assertThat(blocked.conflicts().getFirst().pid()).isEqualTo(1234);
            long deadline = System.currentTimeMillis() + 20_000;
            while (!client.setLock(inode, exclusive).granted() && System.currentTimeMillis() < deadline) {
                Thread.sleep(100);
            }
            assertThat(client.getLock(inode, new MetaMessages.FileLock(0, 8, 1, MetaMessages.LOCK_POSIX, MetaMessages.LOCK_READ, 0, 1))
                    .conflicts()).as("the live client holds it now").hasSize(1);
        }
    }
}
