package dev.plinth.common.ec;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.plinth.testing.Prerequisites;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

class ErasureCodeTest {
    private static final int[][] SHAPES = {{1, 1}, {2, 1}, {4, 2}, {6, 3}, {8, 3}, {10, 4}, {32, 16}};

    @Test
    void everyByteComesBackFromAnyKCellsWithTheJavaCoder() {
        Random random = new Random(7);
        for (int[] shape : SHAPES) {
            roundTrip(new ErasureCode(shape[0], shape[1], JavaCoder.INSTANCE), random, 1 + random.nextInt(70_000), false);
        }
    }

    @Test
    void isaLAndJavaMakeTheSameBytes() {
        Prerequisites.require(Prerequisites.ISA_L);
        assertThat(IsalCoder.available()).isTrue();
        Random random = new Random(11);
        for (int[] shape : SHAPES) {
            int k = shape[0];
            int m = shape[1];
            assertThat(ErasureCode.cauchyMatrix(k, m)).as("generator %d+%d", k, m).isEqualTo(IsalCoder.instance().cauchyMatrix(k, m));
            for (int round = 0; round < 5; round++) {
                int length = 1 + random.nextInt(200_000);
                ByteBuffer[] data = randomCells(random, k, length, round % 2 == 0);
                ByteBuffer[] javaParity = cells(m, length, false);
                ByteBuffer[] isalParity = cells(m, length, round % 2 == 1);
                new ErasureCode(k, m, JavaCoder.INSTANCE).encode(data, javaParity, length);
                new ErasureCode(k, m, IsalCoder.instance()).encode(data, isalParity, length);
                for (int r = 0; r < m; r++) {
                    assertThat(isalParity[r]).as("parity %d of %d+%d, %d bytes", r, k, m, length).isEqualTo(javaParity[r]);
                }
            }
            roundTrip(new ErasureCode(k, m, IsalCoder.instance()), random, 1 + random.nextInt(70_000), true);
        }
    }

    /** Encodes, then for a random choice of k present cells rebuilds every other cell and compares. */
    private static void roundTrip(ErasureCode code, Random random, int length, boolean direct) {
        int k = code.dataCells();
        int m = code.parityCells();
        ByteBuffer[] all = new ByteBuffer[k + m];
        ByteBuffer[] data = randomCells(random, k, length, direct);
        ByteBuffer[] parity = cells(m, length, direct);
        code.encode(data, parity, length);
        System.arraycopy(data, 0, all, 0, k);
        System.arraycopy(parity, 0, all, k, m);
        for (int round = 0; round < 4; round++) {
            List<Integer> order = new ArrayList<>();
            for (int i = 0; i < k + m; i++) {
                order.add(i);
            }
            Collections.shuffle(order, random);
            int[] present = order.subList(0, k).stream().mapToInt(Integer::intValue).toArray();
            int[] wanted = order.subList(k, k + m).stream().mapToInt(Integer::intValue).toArray();
            ByteBuffer[] inputs = new ByteBuffer[k];
            for (int i = 0; i < k; i++) {
                inputs[i] = all[present[i]];
            }
            ByteBuffer[] outputs = cells(m, length, direct);
            code.decode(present, inputs, wanted, outputs, length);
            for (int w = 0; w < m; w++) {
                assertThat(outputs[w]).as("cell %d of %d+%d (%s)", wanted[w], k, m, code.coder().name()).isEqualTo(all[wanted[w]]);
            }
        }
    }

    private static ByteBuffer[] randomCells(Random random, int count, int length, boolean direct) {
        ByteBuffer[] cells = cells(count, length, direct);
        byte[] bytes = new byte[length];
        for (ByteBuffer cell : cells) {
            random.nextBytes(bytes);
            cell.put(0, bytes);
        }
        return cells;
    }

    private static ByteBuffer[] cells(int count, int length, boolean direct) {
        ByteBuffer[] cells = new ByteBuffer[count];
        for (int i = 0; i < count; i++) {
            cells[i] = direct ? ByteBuffer.allocateDirect(length) : ByteBuffer.allocate(length);
        }
        return cells;
    }
}
