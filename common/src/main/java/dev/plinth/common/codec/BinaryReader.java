package dev.plinth.common.codec;

import dev.plinth.common.ErrorCode;
import dev.plinth.common.PlinthException;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;

/**
 * Reads what {@link BinaryWriter} wrote, from bytes that came from outside: every length is
 * checked against what is left, so a truncated or hostile input fails with PROTOCOL_ERROR and
 * never allocates more than the input's size.
 */
public final class BinaryReader {
    private final ByteBuffer buffer;

    public BinaryReader(ByteBuffer buffer) {
        this.buffer = buffer.slice();
    }

    public BinaryReader(byte[] bytes) {
        this(ByteBuffer.wrap(bytes));
    }

    private void need(int count) {
        if (count < 0 || buffer.remaining() < count) {
            throw new PlinthException(ErrorCode.PROTOCOL_ERROR, "truncated input: need " + count + " bytes, have " + buffer.remaining());
        }
    }

    public int readByte() {
        need(1);
        return buffer.get() & 0xFF;
    }

    public boolean readBoolean() {
        int value = readByte();
        if (value > 1) {
            throw new PlinthException(ErrorCode.PROTOCOL_ERROR, "bad boolean " + value);
        }
        return value == 1;
    }

    public int readInt() {
        need(4);
        return buffer.getInt();
    }

    public long readLong() {
        need(8);
        return buffer.getLong();
    }

    public double readDouble() {
        return Double.longBitsToDouble(readLong());
    }

    public int readVarInt() {
        int value = 0;
        for (int shift = 0; shift < 35; shift += 7) {
            int b = readByte();
            value |= (b & 0x7F) << shift;
            if ((b & 0x80) == 0) {
                if (value < 0) {
                    break;
                }
                return value;
            }
        }
        throw new PlinthException(ErrorCode.PROTOCOL_ERROR, "malformed length");
    }

    public byte[] readBytes() {
        int count = readVarInt();
        need(count);
        byte[] result = new byte[count];
        buffer.get(result);
        return result;
    }

    public String readString() {
        int count = readVarInt();
        need(count);
        int start = buffer.position();
        buffer.position(start + count);
        if (buffer.hasArray() && isAscii(buffer.array(), buffer.arrayOffset() + start, count)) {
            // most names are ASCII, which is valid UTF-8: no decoder needed
            return new String(buffer.array(), buffer.arrayOffset() + start, count, StandardCharsets.ISO_8859_1);
        }
        ByteBuffer slice = buffer.slice(start, count);
        try {
            return StandardCharsets.UTF_8.newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(slice).toString();
        } catch (CharacterCodingException e) {
            throw new PlinthException(ErrorCode.PROTOCOL_ERROR, "string is not valid UTF-8");
        }
    }

    private static boolean isAscii(byte[] bytes, int offset, int count) {
        for (int i = offset; i < offset + count; i++) {
            if (bytes[i] < 0) {
                return false;
            }
        }
        return true;
    }

    /**
     * Limits reading to the next {@code count} bytes, until {@link #leave} skips what is left of
     * them; returns what {@link #leave} needs. Cheaper than a reader of its own for each nested record.
     */
    public int enter(int count) {
        need(count);
        int outerLimit = buffer.limit();
        buffer.limit(buffer.position() + count);
        return outerLimit;
    }

    /** Skips the unread rest of what {@link #enter} limited reading to, and lifts the limit. */
    public void leave(int outerLimit) {
        buffer.position(buffer.limit());
        buffer.limit(outerLimit);
    }

    public int remaining() {
        return buffer.remaining();
    }

    public void expectEnd() {
        if (buffer.hasRemaining()) {
            throw new PlinthException(ErrorCode.PROTOCOL_ERROR, buffer.remaining() + " unexpected trailing bytes");
        }
    }
}
