package dev.plinth.wire;

import java.net.SocketAddress;

/** What a handler knows about the request besides its message. */
public record RequestContext(SocketAddress remoteAddress, long deadlineNanos, boolean fileRegions) {
    public RequestContext(SocketAddress remoteAddress, long deadlineNanos) {
        this(remoteAddress, deadlineNanos, true);
    }

    /** Whether a reply may carry a FileRegion (sendfile); in-JVM channels need the bytes in a buffer. */
    public boolean fileRegionsAllowed() {
        return fileRegions;
    }

    /** True once the caller has stopped waiting; handlers skip work for expired requests. */
    public boolean expired() {
        return deadlineNanos != 0 && System.nanoTime() - deadlineNanos > 0;
    }
}
