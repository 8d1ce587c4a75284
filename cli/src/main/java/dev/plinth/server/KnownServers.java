package dev.plinth.server;

import dev.plinth.common.ErrorCode;
import dev.plinth.common.PlinthException;
import dev.plinth.wire.ClusterSecret;
import dev.plinth.wire.HostPort;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Where the CLI finds the cluster secret: --secret-file, else $PLINTH_SECRET_FILE, else the copy
 * an embedded server leaves in ~/.plinth/secrets/HOST_PORT (mode 0600) for its local user, so
 * that `plinth fs ls /` just works on the machine that runs `plinth server`.
 */
public final class KnownServers {
    private KnownServers() {}

    static Path entry(HostPort server) {
        return Path.of(System.getProperty("user.home"), ".plinth", "secrets", server.host() + "_" + server.port());
    }

    static void remember(HostPort server, Path secretFile) {
        try {
            ClusterSecret.read(secretFile).write(entry(server));
        } catch (PlinthException e) {
            // not fatal: clients can still be given the secret file explicitly
        }
    }

    public static ClusterSecret secretFor(HostPort server, String explicitFile) {
        if (explicitFile != null && !explicitFile.isEmpty()) {
            return ClusterSecret.read(Path.of(explicitFile));
        }
        String fromEnvironment = System.getenv("PLINTH_SECRET_FILE");
        if (fromEnvironment != null && !fromEnvironment.isEmpty()) {
            return ClusterSecret.read(Path.of(fromEnvironment));
        }
        Path known = entry(server);
        if (Files.exists(known)) {
            return ClusterSecret.read(known);
        }
        throw new PlinthException(ErrorCode.AUTHENTICATION_FAILED, "no cluster secret for " + server
                + ": pass --secret-file DIR/cluster.secret or set PLINTH_SECRET_FILE");
    }

    static void forget(HostPort server) {
        try {
            Files.deleteIfExists(entry(server));
        } catch (IOException e) {
            // best effort
        }
    }
}
