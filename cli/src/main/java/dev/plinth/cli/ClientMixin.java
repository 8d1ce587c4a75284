package dev.plinth.cli;

import dev.plinth.client.ClientOptions;
import dev.plinth.client.PlinthClient;
import dev.plinth.common.Config;
import dev.plinth.wire.HostPort;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import picocli.CommandLine.Option;

/** How a command finds its cluster: --server, else $PLINTH_SERVER, else 127.0.0.1:7100. */
final class ClientMixin {
    static final String DEFAULT_SERVER = "127.0.0.1:7100";

    @Option(names = "--server", paramLabel = "HOST:PORT", description = "Cluster to talk to (default: $PLINTH_SERVER, else " + DEFAULT_SERVER + ").")
    String server;

    @Option(names = "--secret-file", paramLabel = "FILE", description = "Cluster secret (default: $PLINTH_SECRET_FILE, else the copy a local `plinth server` left in ~/.plinth/secrets).")
    String secretFile;

    @Option(names = "--set", paramLabel = "KEY=VALUE", description = "Override a setting (see `plinth settings`); repeatable.")
    List<String> settings = new ArrayList<>();

    @Option(names = "--config", paramLabel = "FILE", description = "Settings file (Java properties).")
    Path configFile;

    HostPort serverAddress() {
        String address = server;
        if (address == null || address.isEmpty()) {
            address = System.getenv("PLINTH_SERVER");
        }
        return HostPort.parse(address == null || address.isEmpty() ? DEFAULT_SERVER : address);
    }

    Config config() {
        return Settings.apply(configFile, settings);
    }

    PlinthClient connect() {
        HostPort address = serverAddress();
        return PlinthClient.connect(new ClientOptions(address, ClientOptions.findSecret(address, secretFile),
                ClientOptions.processCredentials(), config(), "cli"));
    }

    /** Settings from a file and --set, in that order. */
    static final class Settings {
        private Settings() {}

        static Config apply(Path configFile, List<String> overrides) {
            Config config = configFile == null ? Config.defaults() : Config.load(configFile);
            for (String entry : overrides) {
                int equals = entry.indexOf('=');
                if (equals <= 0) {
                    throw new dev.plinth.common.PlinthException(dev.plinth.common.ErrorCode.INVALID_ARGUMENT,
                            "--set takes KEY=VALUE, got '" + entry + "'");
                }
                config = config.with(entry.substring(0, equals).trim(), entry.substring(equals + 1));
            }
            return config;
        }
    }
}
