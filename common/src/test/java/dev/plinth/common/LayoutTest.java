package dev.plinth.common;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.plinth.common.codec.RecordCodec;
import java.util.List;
import org.junit.jupiter.api.Test;

class LayoutTest {
    /** A layout as stored before protection, encoding and version were fields. */
    record LayoutBeforeVersion2(int stripeCount, int stripeSizeBytes, int chunkSizeBytes, String pool, int replicas, List<Integer> chainIds,
                                int mdtBytes) {}

    @Test
    void aLayoutStoredBeforeProtectionAndEncodingReadsAsReplicatedVersion1() {
        byte[] stored = RecordCodec.encode(new LayoutBeforeVersion2(2, 1 << 20, 4 << 20, "fast", 2, List.of(7, 8), 64 << 10));
        Layout read = RecordCodec.decode(Layout.class, stored).validate();
        assertThat(read.protection()).isEqualTo(Layout.Protection.REPLICATED);
        assertThat(read.encoding()).isEqualTo(Layout.Encoding.NONE);
        assertThat(read.version()).isEqualTo(1);
        assertThat(read.compressed()).isFalse();
        assertThat(read.chainIds()).containsExactly(7, 8);
        assertThat(read.withChains(List.of(1, 2)).version()).as("a file keeps the format its layout had").isEqualTo(1);
        assertThat(new Layout(1, 1 << 20, 1 << 20, "default", 1, List.of()).version()).isEqualTo(Layout.VERSION);
    }

    @Test
    void erasureCodingAndEncodingAreValidated() {
        Layout ec = new Layout(6, 1 << 20, 1 << 20, "default", 1, List.of(), 0, Layout.Protection.ERASURE_CODED, 4, 2,
                Layout.Encoding.NONE, Layout.VERSION).validate();
        assertThat(ec.compressed()).isFalse();
        assertThatThrownBy(() -> new Layout(5, 1 << 20, 1 << 20, "default", 1, List.of(), 0, Layout.Protection.ERASURE_CODED, 4, 2,
                Layout.Encoding.NONE, Layout.VERSION).validate()).hasMessageContaining("over 6 targets");
        assertThatThrownBy(() -> new Layout(6, 3 << 20, 4 << 20, "default", 1, List.of(), 0, Layout.Protection.ERASURE_CODED, 4, 2,
                Layout.Encoding.NONE, Layout.VERSION).validate()).hasMessageContaining("multiple of its stripe size");
        assertThat(RecordCodec.decode(Layout.class, RecordCodec.encode(ec))).isEqualTo(ec);
        assertThatThrownBy(() -> new Layout(6, 1 << 20, 1 << 20, "default", 2, List.of(), 0, Layout.Protection.ERASURE_CODED, 4, 2,
                Layout.Encoding.NONE, Layout.VERSION).validate()).hasMessageContaining("no replicas");
        assertThatThrownBy(() -> new Layout(6, 1 << 20, 1 << 20, "default", 1, List.of(), 0, Layout.Protection.ERASURE_CODED, 0, 2,
                Layout.Encoding.NONE, Layout.VERSION).validate()).hasMessageContaining("data cells");
        assertThatThrownBy(() -> new Layout(1, 1 << 20, 1 << 20, "default", 1, List.of(), 0, Layout.Protection.REPLICATED, 0, 0,
                Layout.Encoding.ZSTD, Layout.VERSION + 1).validate()).isInstanceOf(PlinthException.class).hasMessageContaining("format");
        Layout zstd = new Layout(1, 1 << 20, 1 << 20, "default", 1, List.of()).withCompression(Layout.Encoding.ZSTD, 9).validate();
        assertThat(zstd.compressionName()).isEqualTo("zstd:9");
        assertThat(RecordCodec.decode(Layout.class, RecordCodec.encode(zstd.withChains(List.of(3)).withChunkOwner(77)))).isEqualTo(
                zstd.withChains(List.of(3)).withChunkOwner(77));
        assertThat(zstd.withErasureCoding(4, 2).template().compressionName()).as("the level goes with the layout").isEqualTo("zstd:9");
        assertThatThrownBy(() -> zstd.withCompression(Layout.Encoding.ZSTD, 23).validate()).hasMessageContaining("compression level");
        assertThatThrownBy(() -> zstd.withCompression(Layout.Encoding.LZ4, 3).validate()).hasMessageContaining("compression level");
    }
}
