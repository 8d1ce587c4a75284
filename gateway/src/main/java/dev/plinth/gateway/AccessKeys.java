package dev.plinth.gateway;

import dev.plinth.client.PlinthClient;
import dev.plinth.common.NonBlocking;
import dev.plinth.wire.messages.MgmtMessages.AccessKey;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.stream.Collectors;

/**
 * The cluster's S3 access keys as the gateway sees them: fetched from mgmt and kept for
 * {@link #REFRESH_MILLIS}. An unknown key refetches at once unless a fetch began after the request
 * asked (concurrent misses share one fetch), so a key made with {@code plinth s3 keys create}
 * works on its first request, a flood of unknown keys costs about one fetch at a time, and a
 * deleted key stops working within the refresh time. Thread-safe.
 */
public final class AccessKeys {
    public static final long REFRESH_MILLIS = 5_000;

    private final PlinthClient client;
    private volatile Map<String, AccessKey> keys = Map.of();
    private volatile boolean fetched;
    private volatile long fetchStartedNanos;
    private volatile long fetchedAtMillis;

    AccessKeys(PlinthClient client) {
        this.client = client;
    }

    /** The key, or null if the cluster has none by that id. */
    AccessKey find(String accessKeyId) {
        long askedNanos = client.clock().nanoTime();
        if (client.clock().currentTimeMillis() - fetchedAtMillis > REFRESH_MILLIS) {
            refresh(askedNanos);
        }
        AccessKey key = keys.get(accessKeyId);
        if (key == null) {
            refresh(askedNanos);
            key = keys.get(accessKeyId);
        }
        return key;
    }

    /** Fetches the keys unless a fetch started after {@code askedNanos} (it already saw what existed then). */
    private void refresh(long askedNanos) {
        NonBlocking.check("a fetch of the access keys"); // from mgmt, and another thread may be fetching: it holds the lock
        fetch(askedNanos);
    }

    private synchronized void fetch(long askedNanos) {
        if (fetched && fetchStartedNanos - askedNanos >= 0) {
            return;
        }
        long started = client.clock().nanoTime();
        List<AccessKey> list = client.accessKeys();
        keys = list.stream().collect(Collectors.toUnmodifiableMap(AccessKey::accessKeyId, Function.identity(), (a, b) -> a));
        fetchStartedNanos = started;
        fetched = true;
        fetchedAtMillis = client.clock().currentTimeMillis();
    }
}
