package dev.plinth.fuse;

import dev.plinth.wire.messages.MetaMessages.Attributes;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * What each file looked like (size, mtime, ctime) when this mount last closed it, for at most
 * {@code capacity} files. A file that looks the same at the next open was not changed by anyone
 * else, so the kernel may keep its cached pages (FUSE keep_cache); otherwise it drops them.
 */
final class CacheValidators {
    private record Validator(long sizeBytes, long mtimeNanos, long ctimeNanos) {
        static Validator of(Attributes attributes) {
            return new Validator(attributes.sizeBytes(), attributes.mtimeNanos(), attributes.ctimeNanos());
        }
    }

    private final Map<Long, Validator> validators;

    CacheValidators(int capacity) {
        this.validators = new LinkedHashMap<>(1024, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<Long, Validator> eldest) {
                return size() > capacity;
            }
        };
    }

    synchronized void remember(Attributes attributes) {
        validators.put(attributes.inodeId(), Validator.of(attributes));
    }

    synchronized void forget(long inodeId) {
        validators.remove(inodeId);
    }

    synchronized boolean unchanged(Attributes attributes) {
        return Validator.of(attributes).equals(validators.get(attributes.inodeId()));
    }
}
