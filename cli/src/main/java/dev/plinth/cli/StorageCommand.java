package dev.plinth.cli;

import dev.plinth.common.Config;
import dev.plinth.server.StorageRole;
import dev.plinth.server.ProcessHost;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

@Command(name = "storage", mixinStandardHelpOptions = true,
        description = {"Run a storage node on its own, serving one or more targets (one per disk).",
                "A directory that is not a target yet is formatted (like mkfs.lustre --ost): with --index N, or an id from mgmt;",
                "the id stays in the directory. New targets join the default pool and new files use them. The node heartbeats",
                "to mgmt, takes part in chains (replicated layouts) and resyncs a target that was away."})
final class StorageCommand implements Callable<Integer> {
    @Option(names = "--target", required = true, paramLabel = "DIR", description = "A target directory; repeatable.")
    List<Path> targets = new ArrayList<>();

    @Option(names = "--index", paramLabel = "N", description = "Target id for the next directory that is not formatted yet; repeatable (default: mgmt assigns).")
    List<Integer> indexes = new ArrayList<>();

    @Option(names = "--node-id", paramLabel = "N", description = "This node's id (default: the one kept in its targets, else mgmt assigns).")
    Integer nodeId;

    @Option(names = "--mgmt", paramLabel = "HOST:PORT[,HOST:PORT...]",
            description = "The management service, or every replica of a mgmt group (setting cluster.mgmt).")
    String mgmt;

    @Option(names = "--endpoints", paramLabel = "FILE", description = "Write this node's addresses and target ids here (JSON).")
    Path endpoints;

    @Option(names = "--hsm-mover", description = "Also run an HSM mover on this node (archives must be reachable from it; see plinth hsm agent).")
    boolean hsmMover;

    @Mixin
    RoleMixin role;

    @Override
    public Integer call() throws InterruptedException {
        Config config = role.config();
        java.util.List<dev.plinth.wire.HostPort> replicas = RoleMixin.mgmtReplicas(config, mgmt);
        ProcessHost server = ProcessHost.run("storage", config, RoleMixin.readSecret(config), true, endpoints, java.util.Map.of(),
                host -> {
                    StorageRole.add(host, targets, indexes, nodeId, replicas);
                    if (hsmMover) {
                        dev.plinth.server.MoverRole.addFor(host, replicas);
                    }
                });
        return RoleMixin.serveUntilStopped(server, "targets: " + targets);
    }
}
