package dev.plinth.common.ec;

import dev.plinth.common.ErrorCode;
import dev.plinth.common.PlinthException;
import java.nio.ByteBuffer;
import java.util.Arrays;

/**
 * A systematic Reed-Solomon code of {@code k} data and {@code m} parity cells over GF(2^8), with
 * ISA-L's {@code gf_gen_cauchy1_matrix} as its generator: the identity on top, then
 * {@code 1 / (i ^ j)} for parity row {@code i} (k..k+m-1) and data column {@code j}. Any k of the
 * k+m cells give back the others. The matrix is part of the stored format (a layout records its
 * name, {@link #MATRIX}); the arithmetic is {@link Coder}'s, ISA-L's where the library is
 * installed and Java's otherwise, which produce the same bytes.
 *
 * <p>Thread-safe; decoding matrices are computed per call (k is small).
 */
public final class ErasureCode {
    /** The generator matrix's name, as ISA-L calls the function that makes it. */
    public static final String MATRIX = "gf_gen_cauchy1_matrix";

    private final int dataCells;
    private final int parityCells;
    /** (k + m) x k, row-major: row i is how cell i is made from the data cells. */
    private final byte[] generator;
    private final byte[] parityRows;
    private final Coder coder;

    public ErasureCode(int dataCells, int parityCells, Coder coder) {
        if (dataCells < 1 || parityCells < 1 || dataCells + parityCells > 255) {
            throw PlinthException.of(ErrorCode.INVALID_ARGUMENT, "erasure code %d+%d: needs k >= 1, m >= 1, k + m <= 255", dataCells, parityCells);
        }
        this.dataCells = dataCells;
        this.parityCells = parityCells;
        this.generator = cauchyMatrix(dataCells, parityCells);
        this.parityRows = Arrays.copyOfRange(generator, dataCells * dataCells, generator.length);
        this.coder = coder;
    }

    /** The code with the best coder this machine has. */
    public static ErasureCode of(int dataCells, int parityCells) {
        return new ErasureCode(dataCells, parityCells, Coder.best());
    }

    /** ISA-L's gf_gen_cauchy1_matrix(a, k + m, k), computed here. */
    static byte[] cauchyMatrix(int k, int m) {
        byte[] matrix = new byte[(k + m) * k];
        for (int i = 0; i < k; i++) {
            matrix[i * k + i] = 1;
        }
        for (int i = k; i < k + m; i++) {
            for (int j = 0; j < k; j++) {
                matrix[i * k + j] = (byte) Galois.inverse(i ^ j);
            }
        }
        return matrix;
    }

    public int dataCells() {
        return dataCells;
    }

    public int parityCells() {
        return parityCells;
    }

    public Coder coder() {
        return coder;
    }

    /**
     * Computes the m parity cells of {@code length} bytes from the k data cells; each buffer is
     * read or written from its position, which does not move.
     */
    public void encode(ByteBuffer[] data, ByteBuffer[] parity, int length) {
        if (data.length != dataCells || parity.length != parityCells) {
            throw new IllegalArgumentException("encode takes " + dataCells + " data and " + parityCells + " parity cells");
        }
        coder.apply(parityRows, data, parity, length);
    }

    /**
     * Rebuilds cells {@code wanted} (indices 0..k+m-1; data cells first) from k cells
     * {@code present} (distinct indices, in any order) whose bytes are {@code inputs}, into
     * {@code outputs}.
     */
    public void decode(int[] present, ByteBuffer[] inputs, int[] wanted, ByteBuffer[] outputs, int length) {
        if (present.length != dataCells || inputs.length != dataCells || wanted.length != outputs.length) {
            throw new IllegalArgumentException("decode takes " + dataCells + " present cells");
        }
        byte[] rows = new byte[dataCells * dataCells];
        for (int r = 0; r < dataCells; r++) {
            System.arraycopy(generator, present[r] * dataCells, rows, r * dataCells, dataCells);
        }
        byte[] inverse = Galois.invert(rows, dataCells);
        if (inverse == null) {
            throw new IllegalArgumentException("cells " + Arrays.toString(present) + " are not independent");
        }
        // wanted cell w = generator[w] x data = generator[w] x inverse x present
        byte[] coefficients = new byte[wanted.length * dataCells];
        for (int w = 0; w < wanted.length; w++) {
            for (int j = 0; j < dataCells; j++) {
                int sum = 0;
                for (int t = 0; t < dataCells; t++) {
                    sum ^= Galois.multiply(generator[wanted[w] * dataCells + t] & 0xFF, inverse[t * dataCells + j] & 0xFF);
                }
                coefficients[w * dataCells + j] = (byte) sum;
            }
        }
        coder.apply(coefficients, inputs, outputs, length);
    }
}
