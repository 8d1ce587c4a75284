package dev.plinth.server;

import dev.plinth.client.ClientOptions;
import dev.plinth.client.PlinthClient;
import dev.plinth.common.Credentials;
import dev.plinth.gateway.S3Credentials;
import dev.plinth.gateway.S3Gateway;
import dev.plinth.wire.HostPort;
import dev.plinth.wire.messages.MgmtMessages.AccessKey;
import dev.plinth.wire.messages.MgmtMessages.CreateAccessKey;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

/**
 * The S3 gateway on its own listener, over a native client: of the cluster elsewhere
 * ({@code plinth gateway}), or of this process's own listener ({@code plinth server}). Where
 * {@code credentialsFile} is given and missing, the first start makes a key pair for the user who
 * runs the process and writes it there, where the AWS tools read credentials from.
 */
public final class GatewayRole implements Role {
    private final HostPort listen;
    private final Path credentialsFile;
    private PlinthClient client;
    private final boolean ownsClient;
    private S3Gateway gateway;

    private GatewayRole(PlinthClient client, HostPort listen, Path credentialsFile) {
        this.client = client;
        this.ownsClient = client == null;
        this.listen = listen;
        this.credentialsFile = credentialsFile;
    }

    /** {@code client} null: the gateway connects to its host's own listener once it listens. */
    public static GatewayRole add(ProcessHost host, PlinthClient client, HostPort listen, Path credentialsFile) {
        return host.add(new GatewayRole(client, listen, credentialsFile));
    }

    @Override
    public void start(ProcessHost host) {
        if (client == null) {
            client = PlinthClient.connect(new ClientOptions(host.rpcAddress(), host.secret(), Credentials.ROOT, host.config(), "s3-gateway")
                    .withClock(host.clock()));
        }
        if (credentialsFile != null && !Files.exists(credentialsFile)) {
            Credentials owner = ClientOptions.processCredentials();
            AccessKey key = client.createAccessKey(new CreateAccessKey(null, null, owner.uid(), owner.gid(), owner.groups(),
                    "made by plinth server on first start"));
            S3Credentials.write(credentialsFile, key);
        }
        gateway = S3Gateway.start(client, host.config(), listen, host.metrics());
    }

    @Override
    public boolean ready() {
        return gateway != null;
    }

    @Override
    public Map<String, String> endpoints() {
        return gateway == null ? Map.of() : Map.of("s3", url());
    }

    /** The endpoint URL clients use, or null before the gateway started. */
    public String url() {
        return gateway == null ? null : (gateway.tls() ? "https://" : "http://") + gateway.address();
    }

    public S3Gateway gateway() {
        return gateway;
    }

    @Override
    public void close() {
        if (gateway != null) {
            gateway.close();
        }
        if (ownsClient && client != null) {
            client.close();
        }
    }
}
