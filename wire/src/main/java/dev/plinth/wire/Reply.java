package dev.plinth.wire;

import static java.util.Objects.requireNonNull;

import io.netty.buffer.ByteBuf;
import io.netty.channel.FileRegion;
import io.netty.util.ReferenceCountUtil;

/**
 * A response message with optional bulk data: a buffer, or a {@link FileRegion} that the
 * transport sends from the file without copying it through the JVM (sendfile). The reply owns
 * the data and releases it once sent.
 */
public record Reply(Record message, Object data, long dataLength) {
    public Reply {
        requireNonNull(message, "message is null");
        if (data != null && !(data instanceof ByteBuf) && !(data instanceof FileRegion)) {
            throw new IllegalArgumentException("reply data must be a ByteBuf or FileRegion");
        }
    }

    public static Reply of(Record message) {
        return new Reply(message, null, 0);
    }

    public static Reply withData(Record message, ByteBuf data) {
        return new Reply(message, data, data.readableBytes());
    }

    public static Reply withFile(Record message, FileRegion region) {
        return new Reply(message, region, region.count());
    }

    void releaseData() {
        if (data != null) {
            ReferenceCountUtil.release(data);
        }
    }
}
