package dev.plinth.common.log;

import java.util.Map;
import java.util.function.Supplier;
import org.slf4j.MDC;

/**
 * What every log line says about where it comes from: the process's node (set once when a role
 * starts, like {@code storage-3} or {@code mgmt}) and, while a request is being served, its id
 * (kept in the SLF4J MDC under {@link #REQUEST}; work handed to another thread takes it along
 * with {@link #carry}).
 */
public final class LogContext {
    public static final String REQUEST = "request";
    private static volatile String node = "";

    private LogContext() {}

    /** Names this process in every log line from now on. */
    public static void node(String name) {
        node = name == null ? "" : name;
    }

    public static String node() {
        return node;
    }

    /** {@code work}, run with the caller's request id in the MDC of whichever thread runs it. */
    public static <T> Supplier<T> carry(Supplier<T> work) {
        Map<String, String> context = MDC.getCopyOfContextMap();
        if (context == null || context.isEmpty()) {
            return work;
        }
        return () -> {
            Map<String, String> before = MDC.getCopyOfContextMap();
            MDC.setContextMap(context);
            try {
                return work.get();
            } finally {
                if (before == null) {
                    MDC.clear();
                } else {
                    MDC.setContextMap(before);
                }
            }
        };
    }

    /** Runs {@code work} with {@code requestId} as the current request's id. */
    public static <T> T withRequest(String requestId, Supplier<T> work) {
        String before = MDC.get(REQUEST);
        MDC.put(REQUEST, requestId);
        try {
            return work.get();
        } finally {
            if (before == null) {
                MDC.remove(REQUEST);
            } else {
                MDC.put(REQUEST, before);
            }
        }
    }
}
