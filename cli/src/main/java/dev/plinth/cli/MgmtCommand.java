package dev.plinth.cli;

import dev.plinth.common.Config;
import dev.plinth.server.RoleServer;
import dev.plinth.server.Roles;
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
                "copy it to the other nodes. Writes its addresses to DIR/endpoints.json."})
final class MgmtCommand implements Callable<Integer> {
    @Option(names = "--data", required = true, paramLabel = "DIR", description = "State directory (created if missing).")
    Path data;

    @Mixin
    RoleMixin role;

    @Override
    public Integer call() throws InterruptedException {
        Config config = role.config();
        Path secretFile = RoleMixin.secretFile(config, data.resolve("cluster.secret"));
        RoleServer server = Roles.startMgmt(data, ClusterSecret.readOrCreate(secretFile), config);
        return RoleMixin.serveUntilStopped(server, "secret:  " + secretFile.toAbsolutePath(),
                "next:    plinth meta --data DIR --mgmt " + server.rpcAddress() + " --secret-file " + secretFile.toAbsolutePath(),
                "         plinth storage --target DIR --mgmt " + server.rpcAddress() + " --secret-file " + secretFile.toAbsolutePath());
    }
}
