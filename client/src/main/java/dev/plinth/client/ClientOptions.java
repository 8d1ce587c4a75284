package dev.plinth.client;

import static java.util.Objects.requireNonNull;

import dev.plinth.common.Config;
import dev.plinth.common.Credentials;
import dev.plinth.wire.ClusterSecret;
import dev.plinth.wire.HostPort;

/**
 * How to reach a cluster and as whom. {@code servers}: the mgmt addresses to bootstrap from (the
 * all-in-one server's, or the replicas of a mgmt group). {@code clock}: what deadlines and
 * leases are read against (the machine's; a test's own to move them forward).
 */
public record ClientOptions(java.util.List<HostPort> servers, ClusterSecret secret, Credentials credentials, Config config, String clientName,
                            dev.plinth.common.Clock clock) {
    public ClientOptions {
        servers = java.util.List.copyOf(servers);
        if (servers.isEmpty()) {
            throw new IllegalArgumentException("no server address");
        }
        requireNonNull(secret, "secret is null");
        requireNonNull(credentials, "credentials is null");
        requireNonNull(config, "config is null");
        requireNonNull(clientName, "clientName is null");
        requireNonNull(clock, "clock is null");
    }

    public ClientOptions(java.util.List<HostPort> servers, ClusterSecret secret, Credentials credentials, Config config, String clientName) {
        this(servers, secret, credentials, config, clientName, dev.plinth.common.Clock.SYSTEM);
    }

    public ClientOptions(HostPort server, ClusterSecret secret, Credentials credentials, Config config, String clientName) {
        this(java.util.List.of(server), secret, credentials, config, clientName);
    }

    public ClientOptions withClock(dev.plinth.common.Clock other) {
        return new ClientOptions(servers, secret, credentials, config, clientName, other);
    }

    /** The first mgmt address: the one the cluster is named by. */
    public HostPort server() {
        return servers.get(0);
    }

    public ClientOptions withCredentials(Credentials other) {
        return new ClientOptions(servers, secret, other, config, clientName, clock);
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
