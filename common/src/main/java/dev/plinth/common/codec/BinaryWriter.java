package dev.plinth.common.codec;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/** A growable big-endian byte buffer with a hard size limit. Not thread-safe. */
public final class BinaryWriter {
    private static final VarHandle INT = MethodHandles.byteArrayViewVarHandle(int[].class, ByteOrder.BIG_ENDIAN);
    private static final VarHandle LONG = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.BIG_ENDIAN);
    private final int bytesMax;
    private byte[] bytes;
    private int length;

    public BinaryWriter(int initialBytes, int bytesMax) {
        this.bytes = new byte[Math.max(16, initialBytes)];
        this.bytesMax = bytesMax;
    }

    private void ensure(int more) {
        int needed = length + more;
        if (needed < 0 || needed > bytesMax) {
            throw new IllegalStateException("encoded value exceeds " + bytesMax + " bytes");
        }
        if (needed > bytes.length) {
            bytes = Arrays.copyOf(bytes, (int) Math.min(bytesMax, Math.max(needed, (long) bytes.length * 2)));
        }
    }

    public void writeByte(int value) {
        ensure(1);
        bytes[length++] = (byte) value;
    }

    public void writeBoolean(boolean value) {
        writeByte(value ? 1 : 0);
    }

    public void writeInt(int value) {
        ensure(4);
        INT.set(bytes, length, value);
        length += 4;
    }

    public void writeLong(long value) {
        ensure(8);
        LONG.set(bytes, length, value);
        length += 8;
    }

    public void writeDouble(double value) {
        writeLong(Double.doubleToRawLongBits(value));
    }

    /** Unsigned LEB128, for lengths and counts. */
    public void writeVarInt(int value) {
        if (value < 0) {
            throw new IllegalArgumentException("negative length " + value);
        }
        while ((value & ~0x7F) != 0) {
            writeByte((value & 0x7F) | 0x80);
            value >>>= 7;
        }
        writeByte(value);
    }

    public void writeBytes(byte[] value) {
        writeVarInt(value.length);
        writeRaw(value, 0, value.length);
    }

    public void writeRaw(byte[] value, int offset, int count) {
        ensure(count);
        System.arraycopy(value, offset, bytes, length, count);
        length += count;
    }

    public void writeString(String value) {
        writeBytes(value.getBytes(StandardCharsets.UTF_8));
    }

    /** Writes a placeholder int and returns where it is, for {@link #patchInt} once the value is known. */
    public int reserveInt() {
        int at = length;
        writeInt(0);
        return at;
    }

    public void patchInt(int at, int value) {
        INT.set(bytes, at, value);
    }

    public int length() {
        return length;
    }

    public byte[] toByteArray() {
        return Arrays.copyOf(bytes, length);
    }

    /** The internal array; valid up to {@link #length()}. */
    public byte[] array() {
        return bytes;
    }
}
