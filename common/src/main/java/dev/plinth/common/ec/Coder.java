package dev.plinth.common.ec;

import java.nio.ByteBuffer;

/**
 * The arithmetic of an erasure code: {@code outputs[r] = sum over j of coefficients[r * k + j] *
 * inputs[j]} in GF(2^8), byte by byte, over {@code length} bytes from each buffer's position
 * (positions do not move). Encoding and decoding are both this with different coefficients.
 */
public interface Coder {
    void apply(byte[] coefficients, ByteBuffer[] inputs, ByteBuffer[] outputs, int length);

    /** What does the arithmetic: "isa-l" or "java". */
    String name();

    /** ISA-L where libisal is installed (and works), Java otherwise. */
    static Coder best() {
        return IsalCoder.available() ? IsalCoder.INSTANCE : JavaCoder.INSTANCE;
    }
}
