package dev.plinth.client;

import java.nio.ByteBuffer;
import java.security.GeneralSecurityException;
import java.util.List;
import javax.crypto.Cipher;
import javax.crypto.spec.IvParameterSpec;
import javax.crypto.spec.SecretKeySpec;

/**
 * The keystream of an encrypted file ({@link ObjectEncryption}): AES-256-CTR per segment, applied
 * at any file position. Encrypting and decrypting are the same XOR, done in place. Thread-safe: a
 * cipher instance is made per call (a few microseconds; calls are per piece of up to a MiB).
 */
public final class ObjectCipher {
    private static final int BLOCK = 16;
    private final SecretKeySpec key;
    private final long[] starts;
    private final byte[][] ivs;

    public ObjectCipher(byte[] dataKey, List<ObjectEncryption.Segment> segments) {
        if (segments.isEmpty() || segments.getFirst().startOffset() != 0) {
            throw new IllegalArgumentException("the first segment starts at 0");
        }
        this.key = new SecretKeySpec(dataKey, "AES");
        this.starts = new long[segments.size()];
        this.ivs = new byte[segments.size()][];
        for (int i = 0; i < segments.size(); i++) {
            starts[i] = segments.get(i).startOffset();
            ivs[i] = segments.get(i).iv().clone();
            if (i > 0 && starts[i] <= starts[i - 1]) {
                throw new IllegalArgumentException("segments are in increasing order");
            }
        }
    }

    /** XORs the keystream for file positions {@code [position, position + length)} into {@code bytes[offset..]}. */
    public void apply(long position, byte[] bytes, int offset, int length) {
        apply(position, ByteBuffer.wrap(bytes, offset, length));
    }

    /** XORs the keystream for file positions from {@code position} into the buffer's remaining bytes, in place; the buffer's position is kept. */
    public void apply(long position, ByteBuffer buffer) {
        ByteBuffer rest = buffer.duplicate();
        long at = position;
        while (rest.hasRemaining()) {
            int segment = segmentAt(at);
            long segmentEnd = segment + 1 < starts.length ? starts[segment + 1] : Long.MAX_VALUE;
            int length = (int) Math.min(rest.remaining(), segmentEnd - at);
            ByteBuffer piece = rest.slice(rest.position(), length);
            applyInSegment(segment, at - starts[segment], piece);
            rest.position(rest.position() + length);
            at += length;
        }
    }

    private int segmentAt(long position) {
        int low = 0;
        int high = starts.length - 1;
        while (low < high) {
            int middle = (low + high + 1) >>> 1;
            if (starts[middle] <= position) {
                low = middle;
            } else {
                high = middle - 1;
            }
        }
        return low;
    }

    private void applyInSegment(int segment, long offsetInSegment, ByteBuffer piece) {
        try {
            Cipher ctr = Cipher.getInstance("AES/CTR/NoPadding");
            ctr.init(Cipher.ENCRYPT_MODE, key, new IvParameterSpec(counter(ivs[segment], offsetInSegment / BLOCK)));
            int skip = (int) (offsetInSegment % BLOCK);
            if (skip > 0) {
                ctr.update(new byte[skip]); // the start of the block the position is in
            }
            ctr.update(piece.duplicate(), piece.duplicate());
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("AES-CTR is part of every JDK", e);
        }
    }

    /** The IV plus {@code blocks}, as a 128-bit big-endian counter. */
    private static byte[] counter(byte[] iv, long blocks) {
        byte[] counter = iv.clone();
        long carry = blocks;
        for (int i = counter.length - 1; i >= 0 && carry != 0; i--) {
            long sum = (counter[i] & 0xff) + (carry & 0xff);
            counter[i] = (byte) sum;
            carry = (carry >>> 8) + (sum >>> 8);
        }
        return counter;
    }
}
