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
