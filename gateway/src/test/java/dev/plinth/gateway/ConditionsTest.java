package dev.plinth.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class ConditionsTest {
    @Test
    void rangesAsRfc9110AndS3ReadThem() {
        assertThat(Conditions.range(null, 100)).isNull();
        assertThat(Conditions.range("bytes=0-9", 100)).containsExactly(0, 10);
        assertThat(Conditions.range("bytes=90-", 100)).containsExactly(90, 100);
        assertThat(Conditions.range("bytes=-10", 100)).containsExactly(90, 100);
        assertThat(Conditions.range("bytes=-1000", 100)).containsExactly(0, 100);
        assertThat(Conditions.range("bytes=50-1000", 100)).containsExactly(50, 100);
        // ignored (the whole object is served): not a byte range, several ranges, end before start, garbage
        assertThat(Conditions.range("items=0-9", 100)).isNull();
        assertThat(Conditions.range("bytes=0-1,5-6", 100)).isNull();
        assertThat(Conditions.range("bytes=9-0", 100)).isNull();
        assertThat(Conditions.range("bytes=x-y", 100)).isNull();
        // unsatisfiable: 416 InvalidRange
        assertThatThrownBy(() -> Conditions.range("bytes=100-", 100)).isInstanceOf(S3Exception.class)
                .satisfies(e -> assertThat(((S3Exception) e).error()).isEqualTo(S3Error.INVALID_RANGE));
        assertThatThrownBy(() -> Conditions.range("bytes=0-0", 0)).isInstanceOf(S3Exception.class);
        assertThatThrownBy(() -> Conditions.range("bytes=-0", 100)).isInstanceOf(S3Exception.class);
    }

    @Test
    void httpDatesUseTwoDigitDaysAndParseBothForms() {
        assertThat(Http.date(0)).isEqualTo("Thu, 01 Jan 1970 00:00:00 GMT");
        assertThat(Http.parseDate("Thu, 01 Jan 1970 00:00:10 GMT")).isEqualTo(10_000L);
        assertThat(Http.parseDate("Thu, 1 Jan 1970 00:00:10 GMT")).isEqualTo(10_000L);
        assertThat(Http.parseDate("yesterday")).isNull();
    }
}
