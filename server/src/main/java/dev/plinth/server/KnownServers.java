package dev.plinth.server;

import dev.plinth.client.ClientOptions;
import dev.plinth.common.PlinthException;
import dev.plinth.wire.ClusterSecret;
import dev.plinth.wire.HostPort;
import java.nio.file.Path;

/**
 * Leaves a copy of an embedded server's secret (mode 0600) where {@link ClientOptions#findSecret}
 * looks, so `plinth fs ls /` just works for the user who runs `plinth server` on this machine.
 */
final class KnownServers {
    private KnownServers() {}

    static void remember(HostPort server, Path secretFile) {
        try {
            ClusterSecret.read(secretFile).write(ClientOptions.knownSecretFile(server));
        } catch (PlinthException e) {
            // not fatal: clients can still be given the secret file explicitly
        }
    }

    /** Removes the copy when the server stops, so stopped servers (and test clusters) leave nothing behind. */
    static void forget(HostPort server) {
        try {
            java.nio.file.Files.deleteIfExists(ClientOptions.knownSecretFile(server));
        } catch (java.io.IOException e) {
            // best effort
        }
    }
}
