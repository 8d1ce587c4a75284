package dev.plinth.wire;

import java.net.SocketAddress;

/**
 * What a handler knows about the request besides its message. {@code fileRegions}: whether a
 * reply may carry a FileRegion (sendfile); in-JVM callers need the bytes in a buffer.
 * {@code onCallerThread}: the handler runs on the caller's own platform thread (a direct in-JVM
 * call), which may block, so short disk work (a RocksDB read) may run inline instead of being
 * handed to the service's executor; on network threads and virtual threads it never is.
 */
public record RequestContext(SocketAddress remoteAddress, long deadlineNanos, boolean fileRegions, boolean onCallerThread) {
    public RequestContext(SocketAddress remoteAddress, long deadlineNanos) {
        this(remoteAddress, deadlineNanos, true, false);
    }

    /** True once the caller has stopped waiting; handlers skip work for expired requests. */
    public boolean expired() {
        return deadlineNanos != 0 && System.nanoTime() - deadlineNanos > 0;
    }
}
