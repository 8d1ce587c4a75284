package dev.plinth.cli;

import dev.plinth.common.Config;
import dev.plinth.common.ErrorCode;
import dev.plinth.common.PlinthException;
import dev.plinth.common.Settings;
import dev.plinth.wire.HostPort;
import java.util.List;
import dev.plinth.server.MetaRole;
import dev.plinth.server.ProcessHost;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

@Command(name = "meta", mixinStandardHelpOptions = true,
        description = {"Run a metadata service on its own: the namespace of one MDT (Raft log and RocksDB under DIR).",
                "Registers with mgmt, which tells clients where it is. Writes its addresses to DIR/endpoints.json.",
                "With --raft and --peers it is one replica of the MDT's Raft group: start three (or five), each with its own",
                "--data, --raft address and the same --mdt and --peers list; the leader answers, the others follow its log and",
                "one of them takes over when it fails. Clients learn every replica from mgmt."})
final class MetaCommand implements Callable<Integer> {
    @Option(names = "--data", required = true, paramLabel = "DIR", description = "Data directory (created if missing).")
    Path data;

    @Option(names = "--mgmt", paramLabel = "HOST:PORT[,HOST:PORT...]",
            description = "The management service, or every replica of a mgmt group (setting cluster.mgmt).")
    String mgmt;

    @Option(names = "--mdt", paramLabel = "N", description = "Which MDT this serves (default 0).")
    int mdt;

    @Option(names = "--raft", paramLabel = "HOST:PORT", description = "This replica's Raft address, one of --peers (setting meta.raft-listen).")
    String raft;

    @Option(names = "--peers", paramLabel = "HOST:PORT,...", description = "Raft addresses of every replica of this MDT, in the same order on "
            + "each (setting meta.raft-peers).")
    String peers;

    @Option(names = "--join", description = {"With --raft and an empty --data: a new replica for a running group, which waits until",
            "`plinth mdt add-replica --mdt N --raft ADDR` adds it, then catches up from the leader's log. Later starts need no --join."})
    boolean join;

    @Mixin
    RoleMixin role;

    @Override
    public Integer call() throws InterruptedException {
        Config config = role.config();
        if (raft != null) {
            config = config.with(Settings.META_RAFT_LISTEN.key(), raft);
        }
        if (peers != null) {
            config = config.with(Settings.META_RAFT_PEERS.key(), peers);
        }
        if (join && config.get(Settings.META_RAFT_LISTEN).isEmpty()) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "--join needs --raft, this replica's Raft address");
        }
        // a joining replica takes its members from the group once it is added: --peers, if given, plays no part
        RoleMixin.RaftPeers group = join ? new RoleMixin.RaftPeers(List.of(), 0)
                : RoleMixin.raftPeers(config, Settings.META_RAFT_LISTEN, Settings.META_RAFT_PEERS);
        dev.plinth.common.log.LogContext.node(group.peers().size() > 1 ? "meta-" + mdt + "." + group.selfIndex() : "meta-" + mdt);
        List<HostPort> replicas = RoleMixin.mgmtReplicas(config, mgmt);
        HostPort joining = join ? HostPort.parse(config.get(Settings.META_RAFT_LISTEN)) : null;
        ProcessHost server = ProcessHost.run("meta", config, RoleMixin.readSecret(config), true, data.resolve("endpoints.json"),
                java.util.Map.of(), host -> {
                    if (joining == null) {
                        MetaRole.add(host, data, mdt, replicas, group.peers(), group.selfIndex());
                    } else if (MetaRole.formatted(data, mdt)) {
                        MetaRole.add(host, data, mdt, replicas, List.of(joining), 0); // a plain restart: its members are in its log
                    } else {
                        MetaRole.join(host, data, mdt, replicas, joining);
                    }
                });
        return RoleMixin.serveUntilStopped(server, "mdt:     " + mdt + " under " + data.toAbsolutePath());
    }
}
