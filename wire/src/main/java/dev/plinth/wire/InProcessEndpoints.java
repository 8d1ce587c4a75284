package dev.plinth.wire;

import io.netty.channel.local.LocalAddress;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The RPC servers running in this JVM, by the address they listen on, with the in-JVM address
 * that reaches them without a socket and the dispatcher that serves them. A client that finds its
 * server here (the embedded server's own FUSE mount, tests) skips loopback TCP: on a small machine
 * the socket copies cost as much CPU as the disk writes themselves.
 */
final class InProcessEndpoints {
    /** An in-JVM server: where its channel listens (for the handshake) and what serves its requests. */
    record Endpoint(LocalAddress local, RpcDispatcher dispatcher) {}

    private static final Map<HostPort, Endpoint> ENDPOINTS = new ConcurrentHashMap<>();

    private InProcessEndpoints() {}

    static void register(HostPort address, Endpoint endpoint) {
        ENDPOINTS.put(address, endpoint);
    }

    static void unregister(HostPort address, Endpoint endpoint) {
        ENDPOINTS.remove(address, endpoint);
    }

    /** The in-JVM server listening on {@code address}, or null. */
    static Endpoint lookup(HostPort address) {
        return ENDPOINTS.get(address);
    }
}
