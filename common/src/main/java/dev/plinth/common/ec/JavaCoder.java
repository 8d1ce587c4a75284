package dev.plinth.common.ec;

import java.nio.ByteBuffer;

/**
 * The coder in Java: a product-table lookup per byte. Several times slower than ISA-L's SIMD
 * code, it is the fallback where the library is missing and the oracle ISA-L is tested against.
 */
public final class JavaCoder implements Coder {
    public static final JavaCoder INSTANCE = new JavaCoder();
    /** Bytes taken from each buffer at a time, so that the arrays stay in the CPU's cache. */
    private static final int SLICE = 16 * 1024;

    private JavaCoder() {}

    @Override
    public void apply(byte[] coefficients, ByteBuffer[] inputs, ByteBuffer[] outputs, int length) {
        int k = inputs.length;
        byte[][] in = new byte[k][SLICE];
        byte[] out = new byte[SLICE];
        for (int done = 0; done < length; done += SLICE) {
            int count = Math.min(SLICE, length - done);
            for (int j = 0; j < k; j++) {
                inputs[j].get(inputs[j].position() + done, in[j], 0, count);
            }
            for (int r = 0; r < outputs.length; r++) {
                java.util.Arrays.fill(out, 0, count, (byte) 0);
                for (int j = 0; j < k; j++) {
                    int coefficient = coefficients[r * k + j] & 0xFF;
                    if (coefficient == 0) {
                        continue;
                    }
                    byte[] source = in[j];
                    if (coefficient == 1) {
                        for (int x = 0; x < count; x++) {
                            out[x] ^= source[x];
                        }
                    } else {
                        byte[] products = Galois.PRODUCTS[coefficient];
                        for (int x = 0; x < count; x++) {
                            out[x] ^= products[source[x] & 0xFF];
                        }
                    }
                }
                outputs[r].put(outputs[r].position() + done, out, 0, count);
            }
        }
    }

    @Override
    public String name() {
        return "java";
    }
}
