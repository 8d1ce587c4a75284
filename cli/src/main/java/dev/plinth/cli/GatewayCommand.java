package dev.plinth.cli;

import dev.plinth.client.PlinthClient;
import dev.plinth.common.Config;
import dev.plinth.common.Credentials;
import dev.plinth.common.Settings;
import dev.plinth.server.GatewayRole;
import dev.plinth.server.ProcessHost;
import dev.plinth.wire.HostPort;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

@Command(name = "gateway", mixinStandardHelpOptions = true,
        description = {"Serve the cluster's namespace over the S3 API (bucket = top-level directory, or one under s3.root).",
                "`plinth server` runs one already; run this on other nodes to add gateways. Requests are signed with keys",
                "from `plinth s3 keys` and act as the key's uid/gid. Ctrl-C or SIGTERM stops it."})
final class GatewayCommand implements Callable<Integer> {
    @Option(names = "--listen", paramLabel = "HOST:PORT", description = "Where to listen (setting s3.listen, default 127.0.0.1:9000).")
    String listen;

    @Option(names = "--http", paramLabel = "HOST:PORT", description = "HTTP listener for /metrics, /healthz, /readyz (setting http.listen, default 127.0.0.1:7180).")
    String http;

    @Mixin
    ClientMixin client;

    @Override
    public Integer call() throws InterruptedException {
        dev.plinth.common.log.LogContext.node("gateway");
        Config config = client.config();
        HostPort address = HostPort.parse(listen != null ? listen : config.get(Settings.S3_LISTEN));
        if (http != null) {
            config = config.with(Settings.HTTP_LISTEN.key(), http);
        }
        PlinthClient plinth = client.connect(config, Credentials.ROOT, "s3-gateway");
        ProcessHost server;
        try {
            // serves S3 and HTTP only: no RPC listener, and no secret of its own beyond its client's
            server = ProcessHost.run("gateway", config, plinth.options().secret(), false, null, java.util.Map.of(),
                    host -> GatewayRole.add(host, plinth, address, null));
        } catch (RuntimeException e) {
            plinth.close();
            throw e;
        }
        server.own(plinth);
        GatewayRole gateway = (GatewayRole) server.roles().getFirst();
        return RoleMixin.serveUntilStopped(server, "s3:      " + gateway.url() + "   (cluster " + client.serverAddress() + ")");
    }
}
