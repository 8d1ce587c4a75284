package dev.plinth.common;

import static java.util.Objects.requireNonNull;

import java.util.function.Function;

/**
 * One declared configuration setting: key, type, default, unit and description. Every setting
 * in Plinth is declared once, in {@link Settings}; the reference doc is generated from there.
 */
public record Setting<T>(String key, Class<T> type, T defaultValue, String unit, String description,
                         Function<String, T> parser) {
    public Setting {
        requireNonNull(key, "key is null");
        requireNonNull(type, "type is null");
        requireNonNull(unit, "unit is null");
        requireNonNull(description, "description is null");
        requireNonNull(parser, "parser is null");
    }

    public T parse(String text) {
        try {
            return parser.apply(text.trim());
        } catch (RuntimeException e) {
            throw PlinthException.of(ErrorCode.INVALID_ARGUMENT, "setting %s: cannot parse '%s' as %s", key, text, unit);
        }
    }

    static Setting<Integer> ofInt(String key, int defaultValue, String unit, String description) {
        return new Setting<>(key, Integer.class, defaultValue, unit, description, Integer::parseInt);
    }

    static Setting<Long> ofLong(String key, long defaultValue, String unit, String description) {
        return new Setting<>(key, Long.class, defaultValue, unit, description, Long::parseLong);
    }

    static Setting<Long> ofBytes(String key, long defaultValue, String description) {
        return new Setting<>(key, Long.class, defaultValue, "bytes", description, Sizes::parseBytes);
    }

    static Setting<String> ofString(String key, String defaultValue, String description) {
        return new Setting<>(key, String.class, defaultValue, "text", description, Function.identity());
    }

    static Setting<Boolean> ofBoolean(String key, boolean defaultValue, String description) {
        return new Setting<>(key, Boolean.class, defaultValue, "true|false", description, text -> {
            if (!text.equals("true") && !text.equals("false")) {
                throw new IllegalArgumentException(text);
            }
            return Boolean.parseBoolean(text);
        });
    }
}
