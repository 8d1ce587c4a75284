package dev.plinth.storage;

import dev.plinth.wire.RpcClient;
import dev.plinth.wire.messages.MgmtMessages.ClusterMap;

/** What a storage node knows of the cluster: the chain tables, and how to reach other members. */
public interface ClusterView {
    /** The cluster map as last fetched. */
    ClusterMap map();

    /** Fetches the map from mgmt now and returns it (a sender knew a newer chain table than ours). */
    ClusterMap refresh();

    /** Whether mgmt answered a heartbeat within the node timeout, so it still counts this node online. */
    boolean leaseValid();

    /**
     * Tells mgmt (in the background, once per chain version) that member {@code fromTarget} of
     * {@code chain} cannot reach its successor {@code toTarget}; mgmt decides which leaves.
     */
    void reportUnreachable(dev.plinth.wire.messages.MgmtMessages.ChainInfo chain, int fromTarget, int toTarget);

    /** A connection to the node serving {@code targetId}. */
    RpcClient connectionTo(int targetId);
}
