package dev.plinth.common.codec;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.plinth.common.Credentials;
import dev.plinth.common.ErrorCode;
import dev.plinth.common.FileType;
import dev.plinth.common.Layout;
import dev.plinth.common.PlinthException;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

class RecordCodecTest {
    record Sample(int number, long big, boolean flag, String text, byte[] bytes, FileType type, List<Integer> ints,
                  Layout layout, Credentials credentials, List<String> names) {}

    private static Sample sample() {
        return new Sample(-5, Long.MAX_VALUE, true, "héllo", new byte[] {1, 2, 3}, FileType.SYMLINK, List.of(1, 2, 3),
                new Layout(2, 65536, 1 << 20, "fast", 1, List.of(4, 5)), new Credentials(1000, 100, List.of(5, 6)), List.of("a", "b"));
    }

    record PointV1(int x, String label) {}

    record PointV2(int x, String label, long z, String note, List<Integer> tags) {}

    record ShapeV1(List<PointV1> points, String name) {}

    record ShapeV2(List<PointV2> points, String name) {}

    /** The compatibility rule holds: components appended later are skipped by old readers and default for new ones. */
    @Test
    void recordsThatGainTrailingComponentsStayReadable() {
        byte[] newer = RecordCodec.encode(new ShapeV2(List.of(new PointV2(1, "a", 7, "n", List.of(3)), new PointV2(2, "b", 8, null, List.of())), "s"));
        ShapeV1 readByOld = RecordCodec.decode(ShapeV1.class, newer);
        assertThat(readByOld).isEqualTo(new ShapeV1(List.of(new PointV1(1, "a"), new PointV1(2, "b")), "s"));

        byte[] older = RecordCodec.encode(new ShapeV1(List.of(new PointV1(5, "c")), "t"));
        ShapeV2 readByNew = RecordCodec.decode(ShapeV2.class, older);
        assertThat(readByNew).isEqualTo(new ShapeV2(List.of(new PointV2(5, "c", 0, null, List.of())), "t"));
    }

    @Test
    void roundTrips() {
        Sample original = sample();
        Sample decoded = RecordCodec.decode(Sample.class, RecordCodec.encode(original));
        assertThat(decoded.number()).isEqualTo(original.number());
        assertThat(decoded.big()).isEqualTo(original.big());
        assertThat(decoded.text()).isEqualTo(original.text());
        assertThat(decoded.bytes()).isEqualTo(original.bytes());
        assertThat(decoded.type()).isEqualTo(FileType.SYMLINK);
        assertThat(decoded.ints()).isEqualTo(original.ints());
        assertThat(decoded.layout()).isEqualTo(original.layout());
        assertThat(decoded.credentials()).isEqualTo(original.credentials());
        assertThat(decoded.names()).isEqualTo(original.names());
    }

    private record Boxes(double ratio, Integer count, Long big, Boolean flag, List<byte[]> blobs, List<PointV1> points) {}

    private record Positive(int value) {
        Positive {
            if (value <= 0) {
                throw new IllegalArgumentException("not positive: " + value);
            }
        }
    }

    /** The generated codecs reach private records and cover the component kinds the sample does not. */
    @Test
    void privateRecordsWithBoxesAndDoublesRoundTrip() {
        Boxes boxes = new Boxes(-2.5, 7, Long.MIN_VALUE, false, List.of(new byte[] {9}), List.of(new PointV1(1, null)));
        Boxes decoded = RecordCodec.decode(Boxes.class, RecordCodec.encode(boxes));
        assertThat(decoded.ratio()).isEqualTo(-2.5);
        assertThat(decoded.count()).isEqualTo(7);
        assertThat(decoded.big()).isEqualTo(Long.MIN_VALUE);
        assertThat(decoded.flag()).isFalse();
        assertThat(decoded.blobs()).singleElement().isEqualTo(new byte[] {9});
        assertThat(decoded.points()).containsExactly(new PointV1(1, null));
        Boxes empty = RecordCodec.decode(Boxes.class, RecordCodec.encode(new Boxes(0, null, null, null, List.of(), List.of())));
        assertThat(empty).isEqualTo(new Boxes(0, null, null, null, List.of(), List.of()));
    }

    /** A value its record's constructor refuses is bad input like any other: a typed error. */
    @Test
    void aValueTheConstructorRefusesIsAProtocolError() {
        byte[] zero = RecordCodec.encode(new PointV1(0, "x"));
        assertThatThrownBy(() -> RecordCodec.decode(Positive.class, zero))
                .isInstanceOfSatisfying(PlinthException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.PROTOCOL_ERROR));
    }

    @Test
    void nullsRoundTrip() {
        Sample withNulls = new Sample(0, 0, false, null, null, null, List.of(), null, Credentials.ROOT, List.of());
        Sample decoded = RecordCodec.decode(Sample.class, RecordCodec.encode(withNulls));
        assertThat(decoded.text()).isNull();
        assertThat(decoded.layout()).isNull();
    }

    /** Truncations, bit flips and random bytes must fail with a PlinthException, never anything else. */
    @Test
    void corruptInputFailsCleanly() {
        byte[] good = RecordCodec.encode(sample());
        long seed = System.nanoTime();
        Random random = new Random(seed);
        for (int i = 0; i < good.length; i++) {
            assertDecodeFailsCleanly(Arrays.copyOf(good, i), seed);
        }
        for (int round = 0; round < 20_000; round++) {
            byte[] mutated = good.clone();
            int flips = 1 + random.nextInt(4);
            for (int f = 0; f < flips; f++) {
                mutated[random.nextInt(mutated.length)] ^= (byte) (1 << random.nextInt(8));
            }
            assertDecodeFailsCleanly(mutated, seed);
            byte[] noise = new byte[random.nextInt(200)];
            random.nextBytes(noise);
            assertDecodeFailsCleanly(noise, seed);
        }
    }

    private static void assertDecodeFailsCleanly(byte[] input, long seed) {
        try {
            RecordCodec.decode(Sample.class, input);
        } catch (PlinthException expected) {
            // typed error: fine
        } catch (RuntimeException e) {
            throw new AssertionError("seed " + seed + ": untyped failure " + e, e);
        }
    }
}
