package dev.plinth.hsm;

import dev.plinth.common.ErrorCode;
import dev.plinth.common.PlinthException;
import dev.plinth.common.Sizes;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * HSM policy rules, one per line ({@code #} starts a comment):
 * <pre>
 *   RULE       := ACTIONS [ "when" CONDITION { "and" CONDITION } ] [ "under" PATH { "," PATH } ]
 *   ACTIONS    := ACTION { "," ACTION }
 *   ACTION     := "archive" [ "to" ARCHIVE-ID ] | "release"
 *   CONDITION  := ( "atime" | "mtime" | "ctime" ) OP AGE | "size" OP SIZE
 *   OP         := ">" | ">=" | "<" | "<="
 *   AGE        := NUMBER ( "s" | "m" | "h" | "d" | "w" )        (how long ago: atime > 30d is "not read for 30 days")
 *   SIZE       := NUMBER [ "K" | "M" | "G" | "T" ] [ "iB" | "B" ]  (binary units)
 *   PATH       := an absolute path, in double quotes if it holds spaces or commas
 * </pre>
 * For example {@code archive, release when atime > 30d and size >= 1MiB under /datasets}. A rule
 * without "under" applies to the whole namespace; without "when", to every file there.
 */
public record PolicyRules(List<Rule> rules) {
    private static final Pattern TOKEN = Pattern.compile("\"[^\"]*\"|,|>=|<=|>|<|=|[^\\s,<>=\"]+");
    private static final Pattern AGE = Pattern.compile("(\\d+)([smhdw])");

    public enum Field { ATIME, MTIME, CTIME, SIZE }

    /** {@code value}: nanoseconds of age for the times, bytes for size. */
    public record Condition(Field field, String op, long value) {
        boolean holds(long actual) {
            return switch (op) {
                case ">" -> actual > value;
                case ">=" -> actual >= value;
                case "<" -> actual < value;
                default -> actual <= value;
            };
        }
    }

    /** {@code archiveId} 0: the rule does not archive. */
    public record Rule(int line, String text, int archiveId, boolean release, List<Condition> conditions, List<String> paths) {}

    public static PolicyRules parse(String text) {
        List<Rule> rules = new ArrayList<>();
        String[] lines = text.split("\n", -1);
        for (int number = 1; number <= lines.length; number++) {
            String line = lines[number - 1];
            int hash = line.indexOf('#');
            String body = (hash >= 0 ? line.substring(0, hash) : line).trim();
            if (!body.isEmpty()) {
                rules.add(parseRule(number, body));
            }
        }
        return new PolicyRules(List.copyOf(rules));
    }

    private static Rule parseRule(int line, String body) {
        List<String> tokens = new ArrayList<>();
        Matcher matcher = TOKEN.matcher(body);
        while (matcher.find()) {
            tokens.add(matcher.group());
        }
        Cursor at = new Cursor(line, tokens);
        int archiveId = 0;
        boolean release = false;
        do {
            String action = at.next("an action (archive or release)").toLowerCase(Locale.ROOT);
            switch (action) {
                case "archive" -> {
                    archiveId = 1;
                    if (at.peekIs("to")) {
                        at.next("to");
                        String id = at.next("an archive id after 'to'");
                        try {
                            archiveId = Integer.parseInt(id);
                        } catch (NumberFormatException e) {
                            throw at.error("an archive id after 'to'", id);
                        }
                    }
                }
                case "release" -> release = true;
                default -> throw at.error("an action (archive or release)", action);
            }
        } while (at.skip(","));
        List<Condition> conditions = new ArrayList<>();
        if (at.skip("when")) {
            do {
                conditions.add(condition(at));
            } while (at.skip("and"));
        }
        List<String> paths = new ArrayList<>();
        if (at.skip("under")) {
            do {
                String path = at.next("a path after 'under'");
                path = path.startsWith("\"") ? path.substring(1, path.length() - 1) : path;
                if (!path.startsWith("/")) {
                    throw at.error("an absolute path", path);
                }
                paths.add(path);
            } while (at.skip(","));
        }
        if (at.hasNext()) {
            throw at.error("'when', 'and', 'under' or the end of the rule", at.next(""));
        }
        return new Rule(line, body, archiveId, release, List.copyOf(conditions), paths.isEmpty() ? List.of("/") : List.copyOf(paths));
    }

    private static Condition condition(Cursor at) {
        String name = at.next("atime, mtime, ctime or size").toLowerCase(Locale.ROOT);
        Field field = switch (name) {
            case "atime" -> Field.ATIME;
            case "mtime" -> Field.MTIME;
            case "ctime" -> Field.CTIME;
            case "size" -> Field.SIZE;
            default -> throw at.error("atime, mtime, ctime or size", name);
        };
        String op = at.next("a comparison (> >= < <=) after " + name);
        if (!List.of(">", ">=", "<", "<=").contains(op)) {
            throw at.error("a comparison (> >= < <=) after " + name, op);
        }
        String value = at.next(field == Field.SIZE ? "a size like 1MiB" : "an age like 30d");
        if (field == Field.SIZE) {
            try {
                return new Condition(field, op, Sizes.parseBytes(value));
            } catch (PlinthException e) {
                throw at.error("a size like 1MiB", value);
            }
        }
        Matcher age = AGE.matcher(value);
        if (!age.matches()) {
            throw at.error("an age like 30d (s, m, h, d or w)", value);
        }
        long seconds = Long.parseLong(age.group(1)) * switch (age.group(2)) {
            case "s" -> 1L;
            case "m" -> 60L;
            case "h" -> 3600L;
            case "d" -> 86_400L;
            default -> 604_800L;
        };
        return new Condition(field, op, Math.multiplyExact(seconds, 1_000_000_000L));
    }

    private static final class Cursor {
        private final int line;
        private final List<String> tokens;
        private int position;

        Cursor(int line, List<String> tokens) {
            this.line = line;
            this.tokens = tokens;
        }

        boolean hasNext() {
            return position < tokens.size();
        }

        boolean peekIs(String word) {
            return hasNext() && tokens.get(position).equalsIgnoreCase(word);
        }

        boolean skip(String word) {
            if (peekIs(word)) {
                position++;
                return true;
            }
            return false;
        }

        String next(String expected) {
            if (!hasNext()) {
                throw error(expected, null);
            }
            return tokens.get(position++);
        }

        PlinthException error(String expected, String found) {
            return new PlinthException(ErrorCode.INVALID_ARGUMENT, "rules line " + line + ": expected " + expected
                    + (found == null ? ", found the end of the line" : ", found '" + found + "'"));
        }
    }
}
