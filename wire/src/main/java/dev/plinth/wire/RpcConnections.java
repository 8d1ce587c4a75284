package dev.plinth.wire;

import static java.util.Objects.requireNonNull;

import dev.plinth.common.Config;
import io.netty.channel.EventLoopGroup;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/** Authenticated connections by server address, opened on first use and reopened after a failure. */
public final class RpcConnections implements AutoCloseable {
    private final EventLoopGroup group;
    private final ClusterSecret secret;
    private final String clientName;
    private final Config config;
    private final Map<HostPort, RpcClient> clients = new ConcurrentHashMap<>();

    public RpcConnections(ClusterSecret secret, String clientName, Config config) {
        this.secret = requireNonNull(secret, "secret is null");
        this.clientName = requireNonNull(clientName, "clientName is null");
        this.config = requireNonNull(config, "config is null");
        this.group = Transport.newGroup(2);
    }

    public RpcClient get(HostPort address) {
        RpcClient client = clients.get(address);
        if (client != null && client.isOpen()) {
            return client;
        }
        synchronized (this) {
            client = clients.get(address);
            if (client == null || !client.isOpen()) {
                client = RpcClient.connect(group, address, secret, clientName, config);
                clients.put(address, client);
            }
            return client;
        }
    }

    public Config config() {
        return config;
    }

    @Override
    public void close() {
        clients.values().forEach(RpcClient::close);
        clients.clear();
        group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
    }
}
