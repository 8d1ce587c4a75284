package dev.plinth.checkpoint;

import java.util.Locale;
import java.util.OptionalInt;
import java.util.OptionalLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The names of the checkpoint protocol (docs/checkpoints.md). A step is a directory
 * {@code step-000500}; a trainer writes it as {@code step-000500.tmp} and renames it, or, with
 * several ranks, writes {@code step-000500/rank-00003.tmp} and renames that to {@code rank-00003}.
 * On Plinth a step is uploaded into {@code .step-000500.partial} and renamed to its name once every
 * rank is there and verified. A name ending in {@code .tmp}, and a partial one, is never complete.
 */
public final class CheckpointNames {
    private CheckpointNames() {}

    /** A rank's list of files with their sizes and checksums; the last thing written into a rank's directory. */
    public static final String MANIFEST = "MANIFEST.json";
    /** The step's own marker on Plinth, written before the step is renamed to its name. */
    public static final String MARKER = "CHECKPOINT.json";
    public static final String TMP_SUFFIX = ".tmp";

    private static final Pattern STEP = Pattern.compile("step-(\\d{1,18})");
    private static final Pattern RANK = Pattern.compile("rank-(\\d{1,9})");
    private static final Pattern PARTIAL = Pattern.compile("\\.step-(\\d{1,18})\\.partial");

    public static String step(long step) {
        return String.format(Locale.ROOT, "step-%06d", step);
    }

    public static String rank(int rank) {
        return String.format(Locale.ROOT, "rank-%05d", rank);
    }

    public static String partial(long step) {
        return "." + step(step) + ".partial";
    }

    /** The step a committed step directory's name gives; empty for any other name (a .tmp one included). */
    public static OptionalLong parseStep(String name) {
        return number(STEP.matcher(name));
    }

    public static OptionalInt parseRank(String name) {
        Matcher matcher = RANK.matcher(name);
        return matcher.matches() ? OptionalInt.of(Integer.parseInt(matcher.group(1))) : OptionalInt.empty();
    }

    public static OptionalLong parsePartial(String name) {
        return number(PARTIAL.matcher(name));
    }

    /** The step a name still being written ({@code step-000500.tmp}) belongs to. */
    public static OptionalLong parseUncommittedStep(String name) {
        return name.endsWith(TMP_SUFFIX) ? parseStep(name.substring(0, name.length() - TMP_SUFFIX.length())) : OptionalLong.empty();
    }

    private static OptionalLong number(Matcher matcher) {
        return matcher.matches() ? OptionalLong.of(Long.parseLong(matcher.group(1))) : OptionalLong.empty();
    }
}
