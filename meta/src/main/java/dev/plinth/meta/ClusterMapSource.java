package dev.plinth.meta;

import dev.plinth.wire.messages.MgmtMessages.ClusterMap;

/**
 * The cluster map as the metadata service knows it (chains and pools for placement, space for
 * statfs), from mgmt. {@link #current} is cheap and may be a poll behind; {@link #refreshedLater}
 * asks mgmt now, for a placement that the current map cannot satisfy (a pool made a moment ago).
 */
public interface ClusterMapSource {
    /** The map as last fetched; NOT_READY before the first fetch. */
    ClusterMap current();

    /**
     * The map fetched from mgmt now, on a thread of the source's own: never waited for on a
     * request's thread, which may be the event loop that must deliver mgmt's answer.
     */
    java.util.concurrent.CompletableFuture<ClusterMap> refreshedLater();
}
