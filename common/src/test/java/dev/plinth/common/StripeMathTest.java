package dev.plinth.common;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

class StripeMathTest {
    private static Layout layout(int count, int stripeSize, int chunkSize) {
        return new Layout(count, stripeSize, chunkSize, "default", 1, List.of()).validate();
    }

    @Test
    void followsLustreFormula() {
        Layout layout = layout(3, 64 * 1024, 128 * 1024);
        long s = 64 * 1024;
        for (long offset : new long[] {0, 1, s - 1, s, 2 * s, 3 * s, 3 * s + 5, 10 * s + 17}) {
            assertThat(StripeMath.objectIndex(layout, offset)).isEqualTo((int) ((offset / s) % 3));
            assertThat(StripeMath.objectOffset(layout, offset)).isEqualTo((offset / (s * 3)) * s + offset % s);
        }
    }

    @Test
    void piecesCoverRangeExactlyAndStayInsideChunks() {
        Random random = new Random(42);
        for (int round = 0; round < 2000; round++) {
            Layout layout = layout(1 + random.nextInt(5), 64 * 1024 * (1 + random.nextInt(3)), 64 * 1024 << random.nextInt(3));
            long offset = random.nextInt(10_000_000);
            long length = random.nextInt(3_000_000);
            long expected = offset;
            for (StripeMath.Piece piece : StripeMath.pieces(layout, offset, length)) {
                assertThat(piece.fileOffset()).isEqualTo(expected);
                assertThat(piece.objectIndex()).isEqualTo(StripeMath.objectIndex(layout, piece.fileOffset()));
                long objectOffset = StripeMath.objectOffset(layout, piece.fileOffset());
                assertThat(piece.chunkIndex() * layout.chunkSizeBytes() + piece.chunkOffset()).isEqualTo(objectOffset);
                assertThat(piece.chunkOffset() + piece.length()).isLessThanOrEqualTo(layout.chunkSizeBytes());
                // the whole piece is contiguous in its object
                assertThat(StripeMath.objectOffset(layout, piece.fileOffset() + piece.length() - 1)).isEqualTo(objectOffset + piece.length() - 1);
                expected += piece.length();
            }
            assertThat(expected).isEqualTo(offset + length);
        }
    }

    @Test
    void objectLengthsSumToFileSize() {
        Random random = new Random(7);
        for (int round = 0; round < 1000; round++) {
            Layout layout = layout(1 + random.nextInt(6), 64 * 1024 * (1 + random.nextInt(4)), 1 << 20);
            long size = random.nextInt(20_000_000);
            long sum = 0;
            for (int i = 0; i < layout.stripeCount(); i++) {
                long length = StripeMath.objectLength(layout, size, i);
                sum += length;
                if (size > 0 && length > 0) {
                    // the last byte of the file maps into an object no longer than computed
                    assertThat(length).isGreaterThan(0);
                }
            }
            assertThat(sum).isEqualTo(size);
            if (size > 0) {
                int last = StripeMath.objectIndex(layout, size - 1);
                assertThat(StripeMath.objectLength(layout, size, last)).isEqualTo(StripeMath.objectOffset(layout, size - 1) + 1);
            }
        }
    }

    @Test
    void rejectsBadLayouts() {
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> layout(0, 65536, 65536)).isInstanceOf(PlinthException.class);
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> layout(1, 1000, 65536)).isInstanceOf(PlinthException.class);
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> layout(1, 65536, 100_000)).isInstanceOf(PlinthException.class);
    }
}
