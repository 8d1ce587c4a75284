package dev.plinth.cli;

import dev.plinth.common.Config;
import dev.plinth.common.Settings;
import dev.plinth.server.MgmtRole;
import dev.plinth.server.ProcessHost;
import dev.plinth.wire.ClusterSecret;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

@Command(name = "mgmt", mixinStandardHelpOptions = true,
        description = {"Run the management service on its own: membership, heartbeats, targets, chains, pools, S3 keys.",
                "Start it first; meta and storage processes register with it, and clients bootstrap from its address",
                "(plinth --server HOST:PORT). Creates the cluster secret (DIR/cluster.secret, mode 0600) unless one is given;",
                "copy it to the other nodes. Writes its addresses to DIR/endpoints.json.",
                "With --raft and --peers it is one replica of a mgmt group (Raft, Apache Ratis): start three, each with its own",
                "--raft address and the same --peers list and secret; only the leader answers, the others follow its log, and",
                "clients and nodes are given every replica's RPC address (--server/--mgmt A,B,C)."})
final class MgmtCommand implements Callable<Integer> {
    @Option(names = "--data", required = true, paramLabel = "DIR", description = "State directory (created if missing).")
    Path data;

    @Option(names = "--raft", paramLabel = "HOST:PORT", description = "This replica's Raft address, one of --peers (setting mgmt.raft-listen).")
    String raft;

    @Option(names = "--peers", paramLabel = "HOST:PORT,...", description = "Raft addresses of every mgmt replica, in the same order on each "
            + "(setting mgmt.raft-peers).")
    String peers;

    @Mixin
    RoleMixin role;

    @Override
    public Integer call() throws InterruptedException {
        Config config = role.config();
        if (raft != null) {
            config = config.with(Settings.MGMT_RAFT_LISTEN.key(), raft);
        }
        if (peers != null) {
            config = config.with(Settings.MGMT_RAFT_PEERS.key(), peers);
        }
        RoleMixin.RaftPeers group = RoleMixin.raftPeers(config, Settings.MGMT_RAFT_LISTEN, Settings.MGMT_RAFT_PEERS);
        Path secretFile = RoleMixin.secretFile(config, data.resolve("cluster.secret"));
        dev.plinth.common.log.LogContext.node(group.peers().isEmpty() ? "mgmt" : "mgmt-" + group.selfIndex());
        ProcessHost server = ProcessHost.run("mgmt", config, ClusterSecret.readOrCreate(secretFile), true, data.resolve("endpoints.json"),
                java.util.Map.of(), host -> MgmtRole.add(host, data, group.peers(), group.selfIndex()));
        return RoleMixin.serveUntilStopped(server, "secret:  " + secretFile.toAbsolutePath(),
                "next:    plinth meta --data DIR --mgmt " + server.rpcAddress() + " --secret-file " + secretFile.toAbsolutePath(),
                "         plinth storage --target DIR --mgmt " + server.rpcAddress() + " --secret-file " + secretFile.toAbsolutePath());
    }
}
