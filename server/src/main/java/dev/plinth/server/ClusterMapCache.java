package dev.plinth.server;

import dev.plinth.common.ErrorCode;
import dev.plinth.common.PlinthException;
import dev.plinth.meta.ClusterMapSource;
import dev.plinth.wire.MgmtClient;
import dev.plinth.wire.messages.MgmtMessages.ClusterMap;
import dev.plinth.wire.messages.MgmtMessages.GetClusterMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The cluster map as mgmt last gave it, fetched five times a second, and at once when a
 * placement asks ({@link #refreshedLater}, on the poller's thread): how an MDT learns the cluster, whether mgmt is in its
 * process or on another node. NOT_READY until the first fetch, so a request that arrives before
 * is retried rather than failed.
 */
final class ClusterMapCache implements ClusterMapSource, AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(ClusterMapCache.class);
    private static final long POLL_MILLIS = 200;

    private final ScheduledExecutorService refresher = Executors.newSingleThreadScheduledExecutor(
            Thread.ofPlatform().name("mgmt-map").daemon().factory());
    private volatile MgmtClient mgmt;
    private volatile ClusterMap map;

    /** Fetches the first map (waiting for mgmt, which may be starting too), then polls. */
    void start(MgmtClient client) {
        this.mgmt = client;
        map = Await.mgmt(() -> client.request(new GetClusterMap()));
        refresher.scheduleWithFixedDelay(() -> {
            try {
                adopt(client.request(new GetClusterMap()));
            } catch (RuntimeException e) {
                LOG.warn("cannot fetch the cluster map from mgmt: {}", e.getMessage());
            }
        }, POLL_MILLIS, POLL_MILLIS, TimeUnit.MILLISECONDS);
    }

    /** Keeps the newer of two maps: a poll and a refresh can answer out of order. */
    private synchronized ClusterMap adopt(ClusterMap fetched) {
        if (map == null || fetched.version() >= map.version()) {
            map = fetched;
        }
        return map;
    }

    @Override
    public ClusterMap current() {
        ClusterMap current = map;
        if (current == null) {
            throw new PlinthException(ErrorCode.NOT_READY, "the metadata service has no cluster map from mgmt yet");
        }
        return current;
    }

    @Override
    public java.util.concurrent.CompletableFuture<ClusterMap> refreshedLater() {
        MgmtClient client = mgmt;
        if (client == null) {
            return java.util.concurrent.CompletableFuture.supplyAsync(this::current);
        }
        return java.util.concurrent.CompletableFuture.supplyAsync(() -> adopt(client.request(new GetClusterMap())), refresher);
    }

    @Override
    public void close() {
        refresher.shutdownNow();
    }
}
