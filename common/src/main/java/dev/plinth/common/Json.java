package dev.plinth.common;

import java.util.List;
import java.util.Map;

/**
 * Just enough JSON for --json flags, endpoint files, the status page and the manifests tools write:
 * maps, lists, strings, numbers, booleans. {@link #parse} reads what {@link #write} writes and any
 * other RFC 8259 text (objects as ordered maps, integers as Long, other numbers as Double).
 */
public final class Json {
    private Json() {}

    public static String write(Object value) {
        StringBuilder out = new StringBuilder();
        write(out, value);
        return out.toString();
    }

    private static void write(StringBuilder out, Object value) {
        switch (value) {
            case null -> out.append("null");
            case String text -> quote(out, text);
            case Number number -> out.append(number);
            case Boolean flag -> out.append(flag);
            case Map<?, ?> map -> {
                out.append('{');
                boolean first = true;
                for (Map.Entry<?, ?> entry : map.entrySet()) {
                    if (!first) {
                        out.append(',');
                    }
                    first = false;
                    quote(out, String.valueOf(entry.getKey()));
                    out.append(':');
                    write(out, entry.getValue());
                }
                out.append('}');
            }
            case List<?> list -> {
                out.append('[');
                for (int i = 0; i < list.size(); i++) {
                    if (i > 0) {
                        out.append(',');
                    }
                    write(out, list.get(i));
                }
                out.append(']');
            }
            default -> quote(out, value.toString());
        }
    }

    private static void quote(StringBuilder out, String text) {
        out.append('"');
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            switch (c) {
                case '"' -> out.append("\\\"");
                case '\\' -> out.append("\\\\");
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                case '\t' -> out.append("\\t");
                default -> {
                    if (c < 0x20) {
                        out.append(String.format("\\u%04x", (int) c));
                    } else {
                        out.append(c);
                    }
                }
            }
        }
        out.append('"');
    }

    /** Reads one JSON value; malformed text is an {@link ErrorCode#INVALID_ARGUMENT} that says where. */
    public static Object parse(String text) {
        Parser parser = new Parser(text);
        Object value = parser.value(0);
        parser.skipSpace();
        if (parser.at < text.length()) {
            throw parser.error("text after the value");
        }
        return value;
    }

    private static final int MAX_DEPTH = 64;

    private static final class Parser {
        private final String text;
        private int at;

        Parser(String text) {
            this.text = text;
        }

        PlinthException error(String what) {
            return new PlinthException(ErrorCode.INVALID_ARGUMENT, "malformed JSON at character " + at + ": " + what);
        }

        void skipSpace() {
            while (at < text.length() && " \t\r\n".indexOf(text.charAt(at)) >= 0) {
                at++;
            }
        }

        private void expect(char c) {
            skipSpace();
            if (at >= text.length() || text.charAt(at) != c) {
                throw error("expected '" + c + "'");
            }
            at++;
        }

        private boolean take(char c) {
            skipSpace();
            if (at < text.length() && text.charAt(at) == c) {
                at++;
                return true;
            }
            return false;
        }

        Object value(int depth) {
            if (depth > MAX_DEPTH) {
                throw error("nested deeper than " + MAX_DEPTH);
            }
            skipSpace();
            if (at >= text.length()) {
                throw error("unexpected end");
            }
            char c = text.charAt(at);
            switch (c) {
                case '{' -> {
                    at++;
                    java.util.LinkedHashMap<String, Object> map = new java.util.LinkedHashMap<>();
                    if (take('}')) {
                        return map;
                    }
                    do {
                        skipSpace();
                        String key = string();
                        expect(':');
                        map.put(key, value(depth + 1));
                    } while (take(','));
                    expect('}');
                    return map;
                }
                case '[' -> {
                    at++;
                    java.util.ArrayList<Object> list = new java.util.ArrayList<>();
                    if (take(']')) {
                        return list;
                    }
                    do {
                        list.add(value(depth + 1));
                    } while (take(','));
                    expect(']');
                    return list;
                }
                case '"' -> {
                    return string();
                }
                default -> {
                    if (text.startsWith("true", at)) {
                        at += 4;
                        return Boolean.TRUE;
                    }
                    if (text.startsWith("false", at)) {
                        at += 5;
                        return Boolean.FALSE;
                    }
                    if (text.startsWith("null", at)) {
                        at += 4;
                        return null;
                    }
                    return number();
                }
            }
        }

        private String string() {
            if (at >= text.length() || text.charAt(at) != '"') {
                throw error("expected a string");
            }
            at++;
            StringBuilder out = new StringBuilder();
            while (true) {
                if (at >= text.length()) {
                    throw error("unterminated string");
                }
                char c = text.charAt(at++);
                if (c == '"') {
                    return out.toString();
                }
                if (c < 0x20) {
                    throw error("control character in a string");
                }
                if (c != '\\') {
                    out.append(c);
                    continue;
                }
                if (at >= text.length()) {
                    throw error("unterminated escape");
                }
                char escaped = text.charAt(at++);
                switch (escaped) {
                    case '"', '\\', '/' -> out.append(escaped);
                    case 'b' -> out.append('\b');
                    case 'f' -> out.append('\f');
                    case 'n' -> out.append('\n');
                    case 'r' -> out.append('\r');
                    case 't' -> out.append('\t');
                    case 'u' -> {
                        if (at + 4 > text.length()) {
                            throw error("short \\u escape");
                        }
                        try {
                            out.append((char) Integer.parseInt(text.substring(at, at + 4), 16));
                        } catch (NumberFormatException e) {
                            throw error("bad \\u escape");
                        }
                        at += 4;
                    }
                    default -> throw error("bad escape \\" + escaped);
                }
            }
        }

        private Object number() {
            int start = at;
            while (at < text.length() && "+-0123456789.eE".indexOf(text.charAt(at)) >= 0) {
                at++;
            }
            String digits = text.substring(start, at);
            if (digits.isEmpty()) {
                throw error("unexpected character '" + text.charAt(start) + "'");
            }
            try {
                if (digits.matches("-?(0|[1-9][0-9]*)")) {
                    return Long.parseLong(digits);
                }
                if (digits.matches("-?(0|[1-9][0-9]*)(\\.[0-9]+)?([eE][+-]?[0-9]+)?")) {
                    return Double.parseDouble(digits);
                }
            } catch (NumberFormatException e) {
                // an integer beyond a long: reported below
            }
            at = start;
            throw error("bad number '" + digits + "'");
        }
    }
}
