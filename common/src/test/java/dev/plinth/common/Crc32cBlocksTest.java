package dev.plinth.common;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Random;
import org.junit.jupiter.api.Test;

class Crc32cBlocksTest {
    @Test
    void combiningTheCrcsOfTwoPartsGivesTheCrcOfBoth() {
        Random random = new Random(11);
        for (int round = 0; round < 200; round++) {
            byte[] bytes = new byte[1 + random.nextInt(3 * Crc32cBlocks.BLOCK_BYTES)];
            random.nextBytes(bytes);
            int split = round < 3 ? new int[] {0, bytes.length, 1}[round] : random.nextInt(bytes.length + 1);
            int first = Crc32cBlocks.crc(bytes, 0, split);
            int second = Crc32cBlocks.crc(bytes, split, bytes.length - split);
            assertThat(Crc32cBlocks.combine(first, second, bytes.length - split)).as("split %d of %d", split, bytes.length)
                    .isEqualTo(Crc32cBlocks.crc(bytes, 0, bytes.length));
        }
    }
}
