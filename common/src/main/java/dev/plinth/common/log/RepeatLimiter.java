package dev.plinth.common.log;

import java.util.concurrent.ConcurrentHashMap;

/**
 * Keeps a message that repeats from flooding the log: of the lines with one key (logger, level
 * and message pattern), at most {@link #LINES_PER_WINDOW} are written per {@link #WINDOW_MILLIS};
 * the rest are counted, and the first line written after them says how many there were. A loop
 * that fails 50,000 times a second (a state machine retrying a write to a full disk) writes a
 * few lines a second, and the count says how hot it is. Thread-safe; holds at most
 * {@link #KEYS_MAX} keys (when full it forgets them all, which at worst lets a few more lines through).
 */
final class RepeatLimiter {
    static final int LINES_PER_WINDOW = 5;
    static final long WINDOW_MILLIS = 1000;
    static final int KEYS_MAX = 4096;

    /** One key's window: when it began, lines written in it, lines held back since the last written one. */
    private static final class Window {
        long startMillis;
        int written;
        long suppressed;
    }

    private final ConcurrentHashMap<String, Window> windows = new ConcurrentHashMap<>();

    /**
     * Whether a line with {@code key} is to be written at {@code nowMillis}: -1 if it is held
     * back (counted), else how many lines like it were held back before it (0 usually).
     */
    long admit(String key, long nowMillis) {
        if (windows.size() >= KEYS_MAX && !windows.containsKey(key)) {
            windows.clear();
        }
        Window window = windows.computeIfAbsent(key, k -> new Window());
        synchronized (window) {
            if (nowMillis - window.startMillis >= WINDOW_MILLIS) {
                window.startMillis = nowMillis;
                window.written = 0;
            }
            if (window.written >= LINES_PER_WINDOW) {
                window.suppressed++;
                return -1;
            }
            window.written++;
            long held = window.suppressed;
            window.suppressed = 0;
            return held;
        }
    }
}
