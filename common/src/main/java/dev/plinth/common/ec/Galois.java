package dev.plinth.common.ec;

/**
 * Arithmetic in GF(2^8) with the polynomial x^8 + x^4 + x^3 + x^2 + 1 (0x11D) and generator 2,
 * the field ISA-L and most Reed-Solomon codes use, so that the Java coder and ISA-L produce the
 * same bytes. Addition is XOR; multiplication goes through log and exp tables, and a full
 * 256 x 256 product table for the coder's inner loop.
 */
final class Galois {
    private Galois() {}

    static final int POLYNOMIAL = 0x11D;
    private static final int[] LOG = new int[256];
    private static final int[] EXP = new int[512];
    /** {@code PRODUCTS[a][b]} = a * b. */
    static final byte[][] PRODUCTS = new byte[256][256];

    static {
        int value = 1;
        for (int power = 0; power < 255; power++) {
            EXP[power] = value;
            LOG[value] = power;
            value <<= 1;
            if (value >= 256) {
                value ^= POLYNOMIAL;
            }
        }
        for (int power = 255; power < EXP.length; power++) {
            EXP[power] = EXP[power - 255];
        }
        for (int a = 0; a < 256; a++) {
            for (int b = 0; b < 256; b++) {
                PRODUCTS[a][b] = (byte) multiply(a, b);
            }
        }
    }

    static int multiply(int a, int b) {
        return a == 0 || b == 0 ? 0 : EXP[LOG[a] + LOG[b]];
    }

    /** The multiplicative inverse; 0 for 0, as ISA-L's gf_inv. */
    static int inverse(int a) {
        return a == 0 ? 0 : EXP[255 - LOG[a]];
    }

    /** The inverse of the n x n matrix {@code matrix} (row-major), or null where it is singular. */
    static byte[] invert(byte[] matrix, int n) {
        byte[] work = matrix.clone();
        byte[] inverse = new byte[n * n];
        for (int i = 0; i < n; i++) {
            inverse[i * n + i] = 1;
        }
        for (int column = 0; column < n; column++) {
            int pivot = column;
            while (pivot < n && work[pivot * n + column] == 0) {
                pivot++;
            }
            if (pivot == n) {
                return null;
            }
            if (pivot != column) {
                swapRows(work, n, pivot, column);
                swapRows(inverse, n, pivot, column);
            }
            int scale = inverse(work[column * n + column] & 0xFF);
            for (int j = 0; j < n; j++) {
                work[column * n + j] = (byte) multiply(work[column * n + j] & 0xFF, scale);
                inverse[column * n + j] = (byte) multiply(inverse[column * n + j] & 0xFF, scale);
            }
            for (int row = 0; row < n; row++) {
                int factor = work[row * n + column] & 0xFF;
                if (row == column || factor == 0) {
                    continue;
                }
                for (int j = 0; j < n; j++) {
                    work[row * n + j] ^= (byte) multiply(factor, work[column * n + j] & 0xFF);
                    inverse[row * n + j] ^= (byte) multiply(factor, inverse[column * n + j] & 0xFF);
                }
            }
        }
        return inverse;
    }

    private static void swapRows(byte[] matrix, int n, int a, int b) {
        for (int j = 0; j < n; j++) {
            byte kept = matrix[a * n + j];
            matrix[a * n + j] = matrix[b * n + j];
            matrix[b * n + j] = kept;
        }
    }
}
