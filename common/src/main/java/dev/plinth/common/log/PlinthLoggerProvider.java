package dev.plinth.common.log;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.ILoggerFactory;
import org.slf4j.IMarkerFactory;
import org.slf4j.Logger;
import org.slf4j.event.Level;
import org.slf4j.helpers.BasicMDCAdapter;
import org.slf4j.helpers.BasicMarkerFactory;
import org.slf4j.spi.MDCAdapter;
import org.slf4j.spi.SLF4JServiceProvider;

/**
 * Plinth's SLF4J backend: {@link PlinthLogger} lines on stderr. Levels: INFO, Ratis and Netty
 * at WARN (they are chatty at INFO); {@code -Dplinth.log.level=debug} changes the default, and
 * {@code -Dplinth.log.level.PREFIX=LEVEL} the level of loggers whose names start with PREFIX
 * (the longest prefix wins). Lines that repeat are counted, not rewritten ({@link RepeatLimiter}).
 */
public final class PlinthLoggerProvider implements SLF4JServiceProvider {
    private final Map<String, Logger> loggers = new ConcurrentHashMap<>();
    private final BasicMarkerFactory markers = new BasicMarkerFactory();
    private final BasicMDCAdapter mdc = new BasicMDCAdapter();
    private final RepeatLimiter repeats = new RepeatLimiter();
    private final ILoggerFactory factory = name -> loggers.computeIfAbsent(name, n -> new PlinthLogger(n, levelOf(n), System.err, repeats));

    static Level levelOf(String name) {
        String best = "";
        Level level = parse(System.getProperty("plinth.log.level"), Level.INFO);
        Map<String, Level> defaults = Map.of("org.apache.ratis", Level.WARN, "io.netty", Level.WARN);
        for (Map.Entry<String, Level> entry : defaults.entrySet()) {
            if (name.startsWith(entry.getKey()) && entry.getKey().length() > best.length()) {
                best = entry.getKey();
                level = entry.getValue();
            }
        }
        for (String key : System.getProperties().stringPropertyNames()) {
            if (key.startsWith("plinth.log.level.")) {
                String prefix = key.substring("plinth.log.level.".length());
                if (name.startsWith(prefix) && prefix.length() >= best.length()) {
                    best = prefix;
                    level = parse(System.getProperty(key), level);
                }
            }
        }
        return level;
    }

    private static Level parse(String text, Level fallback) {
        if (text == null || text.isBlank()) {
            return fallback;
        }
        try {
            return Level.valueOf(text.trim().toUpperCase(java.util.Locale.ROOT));
        } catch (IllegalArgumentException e) {
            return fallback;
        }
    }

    @Override
    public ILoggerFactory getLoggerFactory() {
        return factory;
    }

    @Override
    public IMarkerFactory getMarkerFactory() {
        return markers;
    }

    @Override
    public MDCAdapter getMDCAdapter() {
        return mdc;
    }

    @Override
    public String getRequestedApiVersion() {
        return "2.0.99";
    }

    @Override
    public void initialize() {
    }
}
