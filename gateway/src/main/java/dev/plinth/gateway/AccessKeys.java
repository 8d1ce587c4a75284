package dev.plinth.gateway;

import dev.plinth.client.PlinthClient;
import dev.plinth.wire.messages.MgmtMessages.AccessKey;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.stream.Collectors;

/**
 * The cluster's S3 access keys as the gateway sees them: fetched from mgmt and kept for
 * {@link #REFRESH_MILLIS}; an unknown key refetches at once (at most every
 * {@link #MISS_REFETCH_MILLIS}), so a key made with {@code plinth s3 keys create} works on its
 * first request and a deleted one stops within the refresh time. Thread-safe.
 */
final class AccessKeys {
    static final long REFRESH_MILLIS = 5_000;
    private static final long MISS_REFETCH_MILLIS = 500;

    private final PlinthClient client;
    private volatile Map<String, AccessKey> keys = Map.of();
    private volatile long fetchedAtMillis;

    AccessKeys(PlinthClient client) {
        this.client = client;
    }

    /** The key, or null if the cluster has none by that id. */
    AccessKey find(String accessKeyId) {
        long now = System.currentTimeMillis();
        if (now - fetchedAtMillis > REFRESH_MILLIS) {
            refresh(now);
        }
        AccessKey key = keys.get(accessKeyId);
        if (key == null && now - fetchedAtMillis > MISS_REFETCH_MILLIS) {
            refresh(now);
            key = keys.get(accessKeyId);
        }
        return key;
    }

    private synchronized void refresh(long now) {
        if (now - fetchedAtMillis <= MISS_REFETCH_MILLIS) {
            return; // another thread just did
        }
        List<AccessKey> list = client.accessKeys();
        keys = list.stream().collect(Collectors.toUnmodifiableMap(AccessKey::accessKeyId, Function.identity(), (a, b) -> a));
        fetchedAtMillis = System.currentTimeMillis();
    }
}
