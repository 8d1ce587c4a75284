package dev.plinth.cli;

import dev.plinth.client.Migration;
import dev.plinth.client.PlinthClient;
import dev.plinth.common.FileType;
import dev.plinth.common.Json;
import dev.plinth.common.Layout;
import dev.plinth.common.Sizes;
import dev.plinth.wire.messages.HsmMessages;
import dev.plinth.wire.messages.MetaMessages.Attributes;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

@Command(name = "migrate", mixinStandardHelpOptions = true,
        description = {"Rewrite files into another layout while they stay readable and writable (as `lfs migrate`): a directory with "
                + "everything below it. Flags as setstripe has them; what is not given stays as each file has it.",
                "Each file is copied beside itself and swapped in with one metadata change once nobody has it open (waiting up to "
                        + "10 s); a file that changes during its copy is copied again (up to " + Migration.ATTEMPTS + " times). Files "
                        + "still open or changing are reported busy (exit status 1). Size, times and HSM state stay; released files "
                        + "are skipped. Directories keep their default layout (see setstripe)."})
final class MigrateCommand implements Callable<Integer> {
    @Mixin
    ClientMixin client;

    @Mixin
    LayoutOptions layoutOptions;

    @Option(names = "--dry-run", description = "List what would move and how many bytes, and move nothing.")
    boolean dryRun;

    @Option(names = "--json", description = "Report as JSON: every file with its outcome, and the totals.")
    boolean json;

    @Parameters(paramLabel = "PATH", arity = "1..*")
    List<String> paths;

    @picocli.CommandLine.Spec
    picocli.CommandLine.Model.CommandSpec spec;

    /** A regular file found under the paths, with its attributes when it was found. */
    private record Found(String path, Attributes attributes) {}

    @Override
    public Integer call() {
        layoutOptions.check(spec.commandLine());
        if (!layoutOptions.any()) {
            throw new picocli.CommandLine.ParameterException(spec.commandLine(), "say what to change: -c, -S, --chunk-size, -p, -r or --ec");
        }
        try (PlinthClient plinth = client.connect()) {
            List<Found> files = new ArrayList<>();
            for (String path : paths) {
                collect(plinth, path, plinth.stat(path), files);
            }
            List<Map<String, Object>> report = new ArrayList<>();
            List<Found> moving = new ArrayList<>();
            List<Layout> targets = new ArrayList<>();
            long bytes = 0;
            for (Found file : files) {
                Layout current = file.attributes().layout();
                Layout target = Migration.targetLayout(current, layoutOptions.applyTo(current, plinth, current.mdtBytes(), spec.commandLine()));
                if (target == null) {
                    report.add(entry(file.path(), "unchanged", 0, current, current, null));
                } else if (HsmMessages.released(file.attributes())) {
                    report.add(entry(file.path(), "released", 0, current, target, "released: its bytes are in the archive; restore it to "
                            + "migrate it"));
                } else {
                    moving.add(file);
                    targets.add(target);
                    bytes += Math.max(0, file.attributes().sizeBytes() - current.mdtBytes());
                }
            }
            if (dryRun) {
                for (int i = 0; i < moving.size(); i++) {
                    Found file = moving.get(i);
                    report.add(entry(file.path(), "would migrate", Math.max(0, file.attributes().sizeBytes() - file.attributes().layout()
                            .mdtBytes()), file.attributes().layout(), targets.get(i), null));
                }
                return finish(report, bytes, true);
            }
            long moved = 0;
            boolean busy = false;
            try (Progress progress = json ? null : new Progress("migrate " + moving.size() + " file(s)", bytes)) {
                for (int i = 0; i < moving.size(); i++) {
                    Found file = moving.get(i);
                    Migration.Result result = Migration.migrate(plinth, file.path(), targets.get(i), progress == null ? b -> { } : progress::advance);
                    moved += result.bytes();
                    busy |= result.outcome() == Migration.Outcome.BUSY;
                    report.add(entry(file.path(), result.outcome().name().toLowerCase(Locale.ROOT), result.bytes(), result.from(), result.to(),
                            result.note()));
                }
            }
            finish(report, moved, false);
            return busy ? Main.EXIT_FAILED : 0;
        }
    }

    /** Every regular file at or below {@code path}. */
    private static void collect(PlinthClient plinth, String path, Attributes attributes, List<Found> files) {
        if (attributes.type() == FileType.FILE) {
            files.add(new Found(path, attributes));
        } else if (attributes.isDirectory()) {
            for (PlinthClient.Listed listed : plinth.listWithAttributes(path)) {
                collect(plinth, FsCommand.join(path, listed.entry().name()), listed.attributes(), files);
            }
        }
    }

    private static Map<String, Object> entry(String path, String outcome, long bytes, Layout from, Layout to, String note) {
        Map<String, Object> entry = new LinkedHashMap<>();
        entry.put("path", path);
        entry.put("outcome", outcome);
        entry.put("bytes", bytes);
        entry.put("from", from == null ? null : describe(from));
        entry.put("to", to == null ? null : describe(to));
        if (note != null) {
            entry.put("note", note);
        }
        return entry;
    }

    /** A layout in a few words: "4 x 1.0 MiB, 2 replicas, pool default" or "ec 4+2, 1.0 MiB cells, pool default". */
    static String describe(Layout layout) {
        String redundancy = layout.erasureCoded() ? "ec " + layout.dataCells() + "+" + layout.parityCells() + ", " + Sizes.format(
                layout.stripeSizeBytes()) + " cells" : layout.stripeCount() + " x " + Sizes.format(layout.stripeSizeBytes()) + ", "
                + layout.replicas() + (layout.replicas() == 1 ? " replica" : " replicas");
        return redundancy + ", pool " + layout.pool();
    }

    private int finish(List<Map<String, Object>> report, long bytes, boolean dry) {
        long counted = report.stream().filter(e -> e.get("outcome").equals(dry ? "would migrate" : "migrated")).count();
        if (json) {
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("dry_run", dry);
            out.put("files", report);
            out.put(dry ? "files_to_migrate" : "files_migrated", counted);
            out.put(dry ? "bytes_to_copy" : "bytes_copied", bytes);
            System.out.println(Json.write(out));
            return 0;
        }
        for (Map<String, Object> entry : report) {
            String outcome = (String) entry.get("outcome");
            if (outcome.equals("unchanged")) {
                continue;
            }
            System.out.printf("%-14s %s (%s)%s%s%n", outcome, entry.get("path"), Sizes.format((Long) entry.get("bytes")),
                    entry.get("to") == null ? "" : ": " + entry.get("from") + " -> " + entry.get("to"),
                    entry.containsKey("note") ? "; " + entry.get("note") : "");
        }
        System.out.printf("%s %d file(s), %s%n", dry ? "would migrate" : "migrated", counted, Sizes.format(bytes));
        return 0;
    }
}
