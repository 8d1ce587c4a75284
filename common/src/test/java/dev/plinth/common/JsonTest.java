package dev.plinth.common;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class JsonTest {
    @Test
    void readsWhatItWrites() {
        Map<String, Object> value = new LinkedHashMap<>();
        value.put("text", "a \"quoted\" \\ line\nwith\ttabs and \u0001");
        value.put("number", 4294967295L);
        value.put("negative", -3L);
        value.put("fraction", 0.25);
        value.put("flag", true);
        value.put("nothing", null);
        value.put("list", List.of(1L, "two", List.of(), Map.of()));
        assertThat(Json.parse(Json.write(value))).isEqualTo(value);
    }

    @Test
    void readsOtherWritersText() {
        assertThat(Json.parse(" { \"a\" : [ 1 , 2.5e3 , \"\\u00e9\\/\" ] , \"b\" : false } "))
                .isEqualTo(Map.of("a", List.of(1L, 2500.0, "é/"), "b", false));
    }

    @Test
    void refusesMalformedText() {
        for (String bad : List.of("", "{", "[1,]", "{\"a\" 1}", "\"open", "01", "1 2", "{\"a\":tru}", "\"\\x\"", "[" .repeat(100) + "]".repeat(100),
                "99999999999999999999", "-", "\"a\u0001\"")) {
            assertThatThrownBy(() -> Json.parse(bad)).as(bad).isInstanceOf(PlinthException.class)
                    .satisfies(e -> assertThat(((PlinthException) e).code()).isEqualTo(ErrorCode.INVALID_ARGUMENT));
        }
    }
}
