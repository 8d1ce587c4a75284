package dev.plinth.common;

import java.io.IOException;
import java.io.Reader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;

/** Setting values of one process: declared defaults, overridden by a file and by --set. Immutable. */
public final class Config {
    private final Map<String, Object> values;

    private Config(Map<String, Object> values) {
        this.values = Map.copyOf(values);
    }

    public static Config defaults() {
        return new Config(Map.of());
    }

    public static Config load(Path file) {
        Properties properties = new Properties();
        try (Reader reader = Files.newBufferedReader(file)) {
            properties.load(reader);
        } catch (IOException e) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "cannot read config file " + file + ": " + e.getMessage(), e);
        }
        Config config = defaults();
        for (String key : properties.stringPropertyNames()) {
            config = config.with(key, properties.getProperty(key));
        }
        return config;
    }

    /** Returns a copy with {@code key} set; unknown keys and unparsable values are rejected. */
    public Config with(String key, String text) {
        Setting<?> setting = Settings.all().stream().filter(s -> s.key().equals(key)).findFirst()
                .orElseThrow(() -> PlinthException.of(ErrorCode.INVALID_ARGUMENT, "unknown setting '%s' (see `plinth settings`)", key));
        Map<String, Object> copy = new HashMap<>(values);
        copy.put(key, setting.parse(text));
        return new Config(copy);
    }

    public <T> Config with(Setting<T> setting, T value) {
        Map<String, Object> copy = new HashMap<>(values);
        copy.put(setting.key(), value);
        return new Config(copy);
    }

    public <T> T get(Setting<T> setting) {
        Object value = values.get(setting.key());
        return value == null ? setting.defaultValue() : setting.type().cast(value);
    }
}
