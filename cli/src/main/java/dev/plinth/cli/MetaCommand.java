package dev.plinth.cli;

import dev.plinth.common.Config;
import dev.plinth.server.MetaRole;
import dev.plinth.server.ProcessHost;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

@Command(name = "meta", mixinStandardHelpOptions = true,
        description = {"Run a metadata service on its own: the namespace of one MDT (Raft log and RocksDB under DIR).",
                "Registers with mgmt, which tells clients where it is. Writes its addresses to DIR/endpoints.json."})
final class MetaCommand implements Callable<Integer> {
    @Option(names = "--data", required = true, paramLabel = "DIR", description = "Data directory (created if missing).")
    Path data;

    @Option(names = "--mgmt", paramLabel = "HOST:PORT[,HOST:PORT...]",
            description = "The management service, or every replica of a mgmt group (setting cluster.mgmt).")
    String mgmt;

    @Option(names = "--mdt", paramLabel = "N", description = "Which MDT this serves (default 0).")
    int mdt;

    @Mixin
    RoleMixin role;

    @Override
    public Integer call() throws InterruptedException {
        Config config = role.config();
        dev.plinth.common.log.LogContext.node("meta-" + mdt);
        java.util.List<dev.plinth.wire.HostPort> replicas = RoleMixin.mgmtReplicas(config, mgmt);
        ProcessHost server = ProcessHost.run("meta", config, RoleMixin.readSecret(config), true, data.resolve("endpoints.json"),
                java.util.Map.of(), host -> MetaRole.add(host, data, mdt, replicas));
        return RoleMixin.serveUntilStopped(server, "mdt:     " + mdt + " under " + data.toAbsolutePath());
    }
}
