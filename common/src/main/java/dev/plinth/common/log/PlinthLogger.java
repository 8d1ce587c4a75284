package dev.plinth.common.log;

import java.io.PrintStream;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import org.slf4j.MDC;
import org.slf4j.Marker;
import org.slf4j.event.Level;
import org.slf4j.helpers.LegacyAbstractLogger;
import org.slf4j.helpers.MessageFormatter;

/**
 * One line per event on stderr: time, level, node, logger, message, the request being served
 * (if any), and for a failure its causes, innermost last, with where the innermost was thrown.
 * A message that repeats is counted rather than written again ({@link RepeatLimiter}).
 * <pre>
 * 2026-12-04T01:40:00.123Z WARN  [storage-3] StorageNode: heartbeat to mgmt failed: ... {request=meta-0@10.0.0.2:51234#812}
 * </pre>
 */
final class PlinthLogger extends LegacyAbstractLogger {
    private static final DateTimeFormatter TIME = DateTimeFormatter.ofPattern("yyyy-MM-dd'T'HH:mm:ss.SSS'Z'").withZone(ZoneOffset.UTC);
    private final String shortName;
    private final int threshold;
    private final PrintStream out;
    private final RepeatLimiter repeats;

    PlinthLogger(String name, Level threshold, PrintStream out, RepeatLimiter repeats) {
        this.name = name;
        this.repeats = repeats;
        this.shortName = name.substring(name.lastIndexOf('.') + 1);
        this.threshold = threshold.toInt();
        this.out = out;
    }

    @Override
    public boolean isTraceEnabled() {
        return threshold <= Level.TRACE.toInt();
    }

    @Override
    public boolean isDebugEnabled() {
        return threshold <= Level.DEBUG.toInt();
    }

    @Override
    public boolean isInfoEnabled() {
        return threshold <= Level.INFO.toInt();
    }

    @Override
    public boolean isWarnEnabled() {
        return threshold <= Level.WARN.toInt();
    }

    @Override
    public boolean isErrorEnabled() {
        return threshold <= Level.ERROR.toInt();
    }

    @Override
    protected String getFullyQualifiedCallerName() {
        return null;
    }

    @Override
    protected void handleNormalizedLoggingCall(Level level, Marker marker, String pattern, Object[] arguments, Throwable failure) {
        Instant now = Instant.now();
        long held = repeats.admit(name + '\0' + level + '\0' + pattern, now.toEpochMilli());
        if (held < 0) {
            return;
        }
        String message = MessageFormatter.basicArrayFormat(pattern, arguments);
        if (held > 0) {
            message = "(" + held + " more like this were not logged) " + message;
        }
        out.println(format(now, level, LogContext.node(), shortName, message, MDC.get(LogContext.REQUEST), failure));
    }

    static String format(Instant time, Level level, String node, String logger, String message, String request, Throwable failure) {
        StringBuilder line = new StringBuilder(160);
        line.append(TIME.format(time)).append(' ').append(String.format("%-5s", level));
        if (!node.isEmpty()) {
            line.append(" [").append(node).append(']');
        }
        line.append(' ').append(logger).append(": ").append(message == null ? "" : oneLine(message));
        if (request != null) {
            line.append(" {request=").append(request).append('}');
        }
        if (failure != null) {
            Throwable innermost = failure;
            line.append(" | cause: ").append(oneLine(failure.toString()));
            for (Throwable cause = failure.getCause(); cause != null && cause != innermost; cause = cause.getCause()) {
                line.append(" <- ").append(oneLine(cause.toString()));
                innermost = cause;
            }
            StackTraceElement[] frames = innermost.getStackTrace();
            if (frames.length > 0) {
                line.append(" at ").append(frames[0]);
            }
        }
        return line.toString();
    }

    private static String oneLine(String text) {
        return text.indexOf('\n') < 0 ? text : text.replace("\r", "").replace('\n', ' ');
    }
}
