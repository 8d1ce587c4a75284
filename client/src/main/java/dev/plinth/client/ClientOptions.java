package dev.plinth.client;

import static java.util.Objects.requireNonNull;

import dev.plinth.common.Config;
import dev.plinth.common.Credentials;
import dev.plinth.wire.ClusterSecret;
import dev.plinth.wire.HostPort;

/** How to reach a cluster and as whom. */
public record ClientOptions(HostPort server, ClusterSecret secret, Credentials credentials, Config config, String clientName) {
    public ClientOptions {
        requireNonNull(server, "server is null");
        requireNonNull(secret, "secret is null");
        requireNonNull(credentials, "credentials is null");
        requireNonNull(config, "config is null");
        requireNonNull(clientName, "clientName is null");
    }

    public ClientOptions withCredentials(Credentials other) {
        return new ClientOptions(server, secret, other, config, clientName);
    }

    /**
     * The cluster secret for {@code server}: {@code explicitFile} if given, else $PLINTH_SECRET_FILE,
     * else the copy a local embedded server keeps in ~/.plinth/secrets/HOST_PORT (mode 0600).
     */
    public static ClusterSecret findSecret(HostPort server, String explicitFile) {
        if (explicitFile != null && !explicitFile.isEmpty()) {
            return ClusterSecret.read(java.nio.file.Path.of(explicitFile));
        }
        String fromEnvironment = System.getenv("PLINTH_SECRET_FILE");
        if (fromEnvironment != null && !fromEnvironment.isEmpty()) {
            return ClusterSecret.read(java.nio.file.Path.of(fromEnvironment));
        }
        java.nio.file.Path known = knownSecretFile(server);
        if (java.nio.file.Files.exists(known)) {
            return ClusterSecret.read(known);
        }
        throw new dev.plinth.common.PlinthException(dev.plinth.common.ErrorCode.AUTHENTICATION_FAILED, "no cluster secret for "
                + server + ": pass --secret-file DIR/cluster.secret or set PLINTH_SECRET_FILE");
    }

    /** Where a local embedded server leaves a copy of its secret for its own user's clients. */
    public static java.nio.file.Path knownSecretFile(HostPort server) {
        return java.nio.file.Path.of(System.getProperty("user.home"), ".plinth", "secrets", server.host() + "_" + server.port());
    }

    /** The uid, gid and groups of this process, as the kernel knows them. */
    public static Credentials processCredentials() {
        com.sun.security.auth.module.UnixSystem unix = new com.sun.security.auth.module.UnixSystem();
        java.util.List<Integer> groups = new java.util.ArrayList<>();
        for (long group : unix.getGroups()) {
            groups.add((int) group);
        }
        return new Credentials((int) unix.getUid(), (int) unix.getGid(), groups);
    }
}
