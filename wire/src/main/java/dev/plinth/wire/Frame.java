package dev.plinth.wire;

import dev.plinth.common.ErrorCode;
import dev.plinth.common.PlinthException;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.util.ReferenceCounted;
import io.netty.util.AbstractReferenceCounted;

/**
 * One RPC frame. Layout (big-endian), after a 4-byte length of everything that follows it:
 * <pre>
 *   u16 magic 0x504C ("PL")   u8 protocol version   u8 flags (1 = response, 2 = error)
 *   u32 message type          u64 correlation id    u32 timeout millis (0 = none)
 *   u32 header length         header (a {@code RecordCodec} message)   bulk data (the rest)
 * </pre>
 * Bulk data rides in the same frame after the header, so a server can send it straight from a
 * file (zero copy) and a receiver can hand it on without re-encoding. Owns {@code header} and
 * {@code data}: release the frame when done.
 */
public final class Frame extends AbstractReferenceCounted {
    public static final int MAGIC = 0x504C;
    public static final int PROTOCOL_VERSION = 1;
    public static final int FLAG_RESPONSE = 1;
    public static final int FLAG_ERROR = 2;
    /** Bytes after the length prefix and before the header. */
    public static final int FIXED_BYTES = 2 + 1 + 1 + 4 + 8 + 4 + 4;
    /** A message record's bound: room for a file's whole Data-on-MDT part (up to 1 MiB) and the fields around it. */
    public static final int HEADER_BYTES_MAX = 2 << 20;

    private final int flags;
    private final int messageType;
    private final long correlationId;
    private final int timeoutMillis;
    private final ByteBuf header;
    private final ByteBuf data;

    Frame(int flags, int messageType, long correlationId, int timeoutMillis, ByteBuf header, ByteBuf data) {
        this.flags = flags;
        this.messageType = messageType;
        this.correlationId = correlationId;
        this.timeoutMillis = timeoutMillis;
        this.header = header;
        this.data = data;
    }

    /** Parses a frame body (length prefix already stripped); takes ownership of {@code body}. */
    static Frame parse(ByteBuf body) {
        try {
            if (body.readableBytes() < FIXED_BYTES) {
                throw new PlinthException(ErrorCode.PROTOCOL_ERROR, "frame of " + body.readableBytes() + " bytes is shorter than its fixed header");
            }
            int magic = body.readUnsignedShort();
            if (magic != MAGIC) {
                throw new PlinthException(ErrorCode.PROTOCOL_ERROR, String.format("bad magic 0x%04x", magic));
            }
            int version = body.readUnsignedByte();
            if (version != PROTOCOL_VERSION) {
                throw new PlinthException(ErrorCode.VERSION_MISMATCH, "protocol version " + version + ", this node speaks " + PROTOCOL_VERSION);
            }
            int flags = body.readUnsignedByte();
            int messageType = body.readInt();
            long correlationId = body.readLong();
            int timeoutMillis = body.readInt();
            int headerLength = body.readInt();
            if (headerLength < 0 || headerLength > HEADER_BYTES_MAX || headerLength > body.readableBytes()) {
                throw new PlinthException(ErrorCode.PROTOCOL_ERROR, "header length " + headerLength + " does not fit the frame");
            }
            if (timeoutMillis < 0) {
                throw new PlinthException(ErrorCode.PROTOCOL_ERROR, "negative timeout");
            }
            ByteBuf header = body.readRetainedSlice(headerLength);
            ByteBuf data = body.readRetainedSlice(body.readableBytes());
            return new Frame(flags, messageType, correlationId, timeoutMillis, header, data);
        } finally {
            body.release();
        }
    }

    /** Writes length prefix and fixed header; the caller then writes header bytes and data. */
    static ByteBuf encodePrefix(ByteBufAllocator allocator, int flags, int messageType, long correlationId,
                                int timeoutMillis, byte[] header, int headerLength, long dataLength) {
        long bodyLength = FIXED_BYTES + headerLength + dataLength;
        if (bodyLength > Integer.MAX_VALUE) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "frame too large: " + bodyLength);
        }
        ByteBuf prefix = allocator.buffer(4 + FIXED_BYTES + headerLength);
        prefix.writeInt((int) bodyLength);
        prefix.writeShort(MAGIC);
        prefix.writeByte(PROTOCOL_VERSION);
        prefix.writeByte(flags);
        prefix.writeInt(messageType);
        prefix.writeLong(correlationId);
        prefix.writeInt(timeoutMillis);
        prefix.writeInt(headerLength);
        prefix.writeBytes(header, 0, headerLength);
        return prefix;
    }

    public int flags() {
        return flags;
    }

    public boolean isResponse() {
        return (flags & FLAG_RESPONSE) != 0;
    }

    public boolean isError() {
        return (flags & FLAG_ERROR) != 0;
    }

    public int messageType() {
        return messageType;
    }

    public long correlationId() {
        return correlationId;
    }

    public int timeoutMillis() {
        return timeoutMillis;
    }

    public ByteBuf header() {
        return header;
    }

    public ByteBuf data() {
        return data;
    }

    @Override
    protected void deallocate() {
        header.release();
        data.release();
    }

    @Override
    public ReferenceCounted touch(Object hint) {
        return this;
    }
}
