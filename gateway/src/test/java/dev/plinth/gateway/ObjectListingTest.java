package dev.plinth.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

class ObjectListingTest {
    @Test
    void keysCompareAsUtf8Bytes() {
        List<String> keys = new ArrayList<>(List.of("a/b", "a-b", "a.b", "a", "é", "z", "\uD83D\uDE00", "\uFFFD", "A"));
        keys.sort(ObjectListing::compareKeys);
        List<String> byBytes = new ArrayList<>(keys);
        byBytes.sort((x, y) -> Arrays.compareUnsigned(x.getBytes(StandardCharsets.UTF_8), y.getBytes(StandardCharsets.UTF_8)));
        assertThat(keys).isEqualTo(byBytes).startsWith("A", "a", "a-b", "a.b", "a/b");
    }

    @Test
    void resumingStartsAtTheFirstNameThatCanHoldLaterKeys() {
        assertThat(ObjectListing.readdirStart("", "")).isEmpty();
        assertThat(ObjectListing.readdirStart("", "abc")).isEqualTo("ab");
        // "a-b" sorts after "a/" as a key but before "a" as a name: resume from before "a"
        assertThat(ObjectListing.readdirStart("", "a-b")).isEmpty();
        assertThat(ObjectListing.readdirStart("d/", "d/xyz/1")).isEqualTo("xy");
        assertThat(ObjectListing.readdirStart("d/", "e/x")).isEmpty();
    }
}
