package dev.plinth.wire;

import static java.util.Objects.requireNonNull;

import dev.plinth.common.Config;
import dev.plinth.common.Settings;
import io.netty.channel.EventLoopGroup;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Authenticated connections by server address, opened on first use and reopened after a failure.
 * Each server gets a few connections used in turn ({@code rpc.connections-per-server}): one
 * connection is served by one network thread on each side, which would otherwise carry all the
 * bulk data of a client. Thread-safe.
 */
public final class RpcConnections implements AutoCloseable {
    private final EventLoopGroup group;
    private final ClusterSecret secret;
    private final String clientName;
    private final Config config;
    private final int connectionsPerServer;
    private final Map<HostPort, RpcClient[]> clients = new ConcurrentHashMap<>();
    private final AtomicInteger turn = new AtomicInteger();
    private final boolean inProcess;
    private EventLoopGroup inProcessGroup;

    public RpcConnections(ClusterSecret secret, String clientName, Config config) {
        this.secret = requireNonNull(secret, "secret is null");
        this.clientName = requireNonNull(clientName, "clientName is null");
        this.config = requireNonNull(config, "config is null");
        this.connectionsPerServer = Math.max(1, config.get(Settings.RPC_CONNECTIONS_PER_SERVER));
        this.group = Transport.newGroup(Math.max(2, Runtime.getRuntime().availableProcessors()));
        this.inProcess = config.get(Settings.RPC_IN_PROCESS);
    }

    /** A connection to {@code address}, the next one in turn. */
    public RpcClient get(HostPort address) {
        RpcClient[] pool = clients.computeIfAbsent(address, ignored -> new RpcClient[connectionsPerServer]);
        int slot = Math.floorMod(turn.getAndIncrement(), pool.length);
        RpcClient client = pool[slot];
        if (client != null && client.isOpen()) {
            return client;
        }
        synchronized (pool) {
            client = pool[slot];
            if (client == null || !client.isOpen()) {
                client = connect(address);
                pool[slot] = client;
            }
            return client;
        }
    }

    private RpcClient connect(HostPort address) {
        InProcessEndpoints.Endpoint local = inProcess ? InProcessEndpoints.lookup(address) : null;
        if (local == null) {
            return RpcClient.connect(group, address, secret, clientName, config);
        }
        return RpcClient.connectInProcess(inProcessGroup(), address, local, secret, clientName, config);
    }

    private synchronized EventLoopGroup inProcessGroup() {
        if (inProcessGroup == null) {
            inProcessGroup = Transport.newInProcessGroup(2);
        }
        return inProcessGroup;
    }

    public Config config() {
        return config;
    }

    @Override
    public void close() {
        for (RpcClient[] pool : clients.values()) {
            synchronized (pool) {
                for (RpcClient client : pool) {
                    if (client != null) {
                        client.close();
                    }
                }
            }
        }
        clients.clear();
        group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
        synchronized (this) {
            if (inProcessGroup != null) {
                inProcessGroup.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
            }
        }
    }
}
