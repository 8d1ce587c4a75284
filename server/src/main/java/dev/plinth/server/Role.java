package dev.plinth.server;

import java.util.Map;

/**
 * One role of a Plinth process (mgmt, an MDT, a storage node, the S3 gateway), built on a
 * {@link ProcessHost}. A role is made before its host listens, with its services registered on
 * the host's dispatcher, and started once the host listens, when it can reach the other roles
 * (register with mgmt, start background work). {@code plinth server} puts every role on one
 * host; {@code plinth mgmt|meta|storage|gateway} put one on a host of its own: the same code
 * either way.
 */
public interface Role extends AutoCloseable {
    /** Called once the host listens, in the order the roles were added. */
    default void start(ProcessHost host) {}

    /** Whether the role can serve now (/readyz). */
    default boolean ready() {
        return true;
    }

    /** The node id the role gives its process on the wire (a storage node's); 0 for none. */
    default int nodeId() {
        return 0;
    }

    /** What the process's status page shows, where the role has one (mgmt's), given where the process listens; else null. */
    default java.util.function.Supplier<Map<String, Object>> statusPage(dev.plinth.wire.HostPort rpcAddress) {
        return null;
    }

    /** Fields the role adds to the process's endpoints file. */
    default Map<String, String> endpoints() {
        return Map.of();
    }

    /** Stops the role; the host's listeners are still up, so a role may still talk to others while it stops. */
    @Override
    void close();
}
