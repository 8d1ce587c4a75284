package dev.plinth.wire;

import io.netty.channel.local.LocalAddress;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The RPC servers running in this JVM, by the address they listen on, with the in-JVM address
 * that reaches them without a socket. A client that finds its server here (the embedded server's
 * own FUSE mount, tests) skips loopback TCP: on a small machine the socket copies cost as much
 * CPU as the disk writes themselves.
 */
final class InProcessEndpoints {
    private static final Map<HostPort, LocalAddress> ENDPOINTS = new ConcurrentHashMap<>();

    private InProcessEndpoints() {}

    static void register(HostPort address, LocalAddress local) {
        ENDPOINTS.put(address, local);
    }

    static void unregister(HostPort address, LocalAddress local) {
        ENDPOINTS.remove(address, local);
    }

    /** The in-JVM address of the server listening on {@code address}, or null. */
    static LocalAddress lookup(HostPort address) {
        return ENDPOINTS.get(address);
    }
}
