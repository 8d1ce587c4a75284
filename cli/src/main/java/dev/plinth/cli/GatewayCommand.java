package dev.plinth.cli;

import dev.plinth.client.PlinthClient;
import dev.plinth.common.Config;
import dev.plinth.common.Credentials;
import dev.plinth.common.Settings;
import dev.plinth.gateway.S3Gateway;
import dev.plinth.server.HttpEndpoint;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import dev.plinth.wire.HostPort;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
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
        PlinthClient plinth = client.connect(config, Credentials.ROOT, "s3-gateway");
        PrometheusRegistry metrics = new PrometheusRegistry();
        S3Gateway gateway;
        try {
            gateway = S3Gateway.start(plinth, config, address, metrics);
        } catch (RuntimeException e) {
            plinth.close();
            throw e;
        }
        HttpEndpoint endpoint = HttpEndpoint.startOrWarn(http != null ? http : config.get(Settings.HTTP_LISTEN), metrics, () -> true);
        CountDownLatch stopped = RoleMixin.stopOnSignal("gateway", () -> {
            if (endpoint != null) {
                endpoint.close();
            }
            gateway.close();
            plinth.close();
        });
        System.out.println("plinth gateway ready");
        System.out.println("  s3:      " + (gateway.tls() ? "https://" : "http://") + gateway.address() + "   (cluster " + client.serverAddress() + ")");
        if (endpoint != null) {
            System.out.println("  http:    http://" + endpoint.address() + "/metrics");
        }
        System.out.flush();
        stopped.await();
        return 0;
    }
}
