package dev.plinth.common;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import org.junit.jupiter.api.Test;

class NamesTest {
    @Test
    void rejectsInvalidNames() {
        for (String bad : new String[] {"", ".", "..", "a/b", "a\0b"}) {
            assertThatThrownBy(() -> Names.validateName(bad)).isInstanceOfSatisfying(PlinthException.class,
                    e -> assertThat(e.code()).isEqualTo(ErrorCode.INVALID_ARGUMENT));
        }
        assertThatThrownBy(() -> Names.validateName("x".repeat(256))).isInstanceOfSatisfying(PlinthException.class,
                e -> assertThat(e.code()).isEqualTo(ErrorCode.NAME_TOO_LONG));
        assertThat(Names.validateName("x".repeat(255))).hasSize(255);
        // 255 bytes is the limit, not 255 characters
        assertThatThrownBy(() -> Names.validateName("é".repeat(128))).isInstanceOf(PlinthException.class);
    }

    @Test
    void splitsPaths() {
        assertThat(Names.components("/")).isEmpty();
        assertThat(Names.components("//a/./b//c/")).isEqualTo(List.of("a", "b", "c"));
        assertThat(Names.components("/a/../b")).isEqualTo(List.of("a", "..", "b"));
        assertThat(Names.parent("/a/b")).isEqualTo("/a");
        assertThat(Names.parent("/a")).isEqualTo("/");
        assertThat(Names.lastName("/a/b")).isEqualTo("b");
        assertThatThrownBy(() -> Names.components("relative")).isInstanceOf(PlinthException.class);
    }

    @Test
    void parsesSizes() {
        assertThat(Sizes.parseBytes("4096")).isEqualTo(4096);
        assertThat(Sizes.parseBytes("64K")).isEqualTo(65536);
        assertThat(Sizes.parseBytes("4MiB")).isEqualTo(4 << 20);
        assertThat(Sizes.parseBytes("1g")).isEqualTo(1L << 30);
        assertThatThrownBy(() -> Sizes.parseBytes("-1")).isInstanceOf(PlinthException.class);
        assertThatThrownBy(() -> Sizes.parseBytes("lots")).isInstanceOf(PlinthException.class);
    }

    @Test
    void inodeIdsCarryTheirMdt() {
        long id = InodeId.of(7, 12345);
        assertThat(InodeId.mdtIndex(id)).isEqualTo(7);
        assertThat(InodeId.sequence(id)).isEqualTo(12345);
        assertThat(InodeId.mdtIndex(InodeId.ROOT)).isZero();
    }

    @Test
    void errorCodesRoundTripOnTheWire() {
        for (ErrorCode code : ErrorCode.values()) {
            assertThat(ErrorCode.fromWireCode(code.wireCode())).isEqualTo(code);
        }
        assertThat(ErrorCode.fromWireCode(999)).isEqualTo(ErrorCode.INTERNAL);
    }

    @Test
    void configRejectsUnknownKeysAndBadValues() {
        assertThat(Config.defaults().with("layout.stripe-count", "4").get(Settings.LAYOUT_STRIPE_COUNT)).isEqualTo(4);
        assertThat(Config.defaults().with("layout.chunk-size", "1M").get(Settings.LAYOUT_CHUNK_SIZE)).isEqualTo(1 << 20);
        assertThatThrownBy(() -> Config.defaults().with("no.such.key", "1")).isInstanceOf(PlinthException.class);
        assertThatThrownBy(() -> Config.defaults().with("layout.stripe-count", "many")).isInstanceOf(PlinthException.class);
    }
}
