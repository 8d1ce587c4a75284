package dev.plinth.cli;

import dev.plinth.client.ClientOptions;
import dev.plinth.client.PlinthClient;
import dev.plinth.common.Config;
import dev.plinth.common.Credentials;
import dev.plinth.wire.HostPort;
import java.util.List;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** How a command finds its cluster: --server, else $PLINTH_SERVER, else 127.0.0.1:7100; a list names the replicas of a mgmt group. */
final class ClientMixin {
    static final String DEFAULT_SERVER = "127.0.0.1:7100";

    @Option(names = "--server", paramLabel = "HOST:PORT[,HOST:PORT...]",
            description = "Cluster to talk to: its server or mgmt, or every replica of a mgmt group (default: $PLINTH_SERVER, else " + DEFAULT_SERVER + ").")
    String server;

    @Option(names = "--secret-file", paramLabel = "FILE", description = "Cluster secret (default: $PLINTH_SECRET_FILE, else the copy a local `plinth server` left in ~/.plinth/secrets).")
    String secretFile;

    @Mixin
    SettingsMixin settings;

    /** The first of {@link #serverAddresses()}: the address the cluster is named by. */
    HostPort serverAddress() {
        return serverAddresses().get(0);
    }

    List<HostPort> serverAddresses() {
        String address = server;
        if (address == null || address.isEmpty()) {
            address = System.getenv("PLINTH_SERVER");
        }
        return HostPort.parseList(address == null || address.isEmpty() ? DEFAULT_SERVER : address);
    }

    Config config() {
        return settings.config();
    }

    PlinthClient connect() {
        return connect(config());
    }

    PlinthClient connect(Config config) {
        return connect(config, ClientOptions.processCredentials(), "cli");
    }

    /** A client acting as {@code credentials} (the gateway acts as root and then as each request's key). */
    PlinthClient connect(Config config, Credentials credentials, String clientName) {
        List<HostPort> addresses = serverAddresses();
        return PlinthClient.connect(new ClientOptions(addresses, ClientOptions.findSecret(addresses.get(0), secretFile), credentials, config,
                clientName));
    }
}
