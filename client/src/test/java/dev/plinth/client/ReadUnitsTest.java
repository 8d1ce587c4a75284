package dev.plinth.client;

import static org.assertj.core.api.Assertions.assertThat;

import dev.plinth.common.Layout;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Read-ahead units (design note 68): a unit is one stripe of stored bytes, one request to one target. */
class ReadUnitsTest {
    @Test
    void anUncompressedFilesUnitIsItsStripeWithinOneToFourMiB() {
        assertThat(PlinthFile.readUnitBytes(new Layout(4, 4 << 20, 4 << 20, "default", 1, List.of()))).isEqualTo(4 << 20);
        assertThat(PlinthFile.readUnitBytes(new Layout(4, 64 << 10, 4 << 20, "default", 1, List.of()))).isEqualTo(1 << 20);
        assertThat(PlinthFile.readUnitBytes(new Layout(4, 16 << 20, 16 << 20, "default", 1, List.of()))).isEqualTo(4 << 20);
        assertThat(PlinthFile.unitPhase(new Layout(4, 4 << 20, 4 << 20, "default", 1, List.of(), 64 << 10))).isZero();
    }

    @Test
    void aCompressedFilesUnitsBeginWhereTheirSlotsBeginAStripe() {
        for (int stripe : new int[] {1 << 20, 4 << 20, 8 << 20}) {
            for (int mdtBytes : new int[] {0, 64 << 10, 1 << 20}) {
                Layout layout = new Layout(4, stripe, 8 << 20, "default", 1, List.of(), mdtBytes).withCompression(Layout.Encoding.LZ4, 0);
                long unit = PlinthFile.readUnitBytes(layout);
                long storedUnit = Math.min(stripe, 4 << 20);
                assertThat(unit).isEqualTo(storedUnit / Layout.COMPRESSED_SLOT_BYTES * Layout.COMPRESSED_BLOCK_BYTES);
                long phase = PlinthFile.unitPhase(layout);
                for (long u = 0; u < 20; u++) {
                    long start = u * unit + phase;
                    if (start < mdtBytes) {
                        continue; // the Data-on-MDT part is not read from the targets
                    }
                    assertThat((start - mdtBytes) % Layout.COMPRESSED_BLOCK_BYTES).as("unit %d starts a block", u).isZero();
                    long stored = mdtBytes + (start - mdtBytes) / Layout.COMPRESSED_BLOCK_BYTES * Layout.COMPRESSED_SLOT_BYTES;
                    assertThat(stored % storedUnit).as("stripe %d, Data-on-MDT %d: unit %d's slots start a stored unit", stripe, mdtBytes, u)
                            .isZero();
                }
            }
        }
    }
}
