package dev.plinth.cli;

import dev.plinth.common.Config;
import dev.plinth.server.RoleServer;
import dev.plinth.server.Roles;
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
        RoleServer server = Roles.startMeta(data, mdt, RoleMixin.mgmtReplicas(config, mgmt), RoleMixin.readSecret(config), config);
        return RoleMixin.serveUntilStopped(server, "mdt:     " + mdt + " under " + data.toAbsolutePath());
    }
}
