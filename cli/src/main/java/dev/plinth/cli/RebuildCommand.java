package dev.plinth.cli;

import dev.plinth.client.CellRebuild;
import dev.plinth.client.PlinthClient;
import dev.plinth.common.Json;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

@Command(name = "rebuild", mixinStandardHelpOptions = true,
        description = {"Move erasure-coded cells off targets that will not come back: each file's cells on them are decoded from its "
                + "other cells onto other targets (distinct nodes first), then the file's layout names the new targets.",
                "The mgmt leader does the same by itself for a target offline longer than mgmt.target-lost-millis; this command "
                        + "does it now. Replicated chains need nothing of this: mgmt replaces a lost member and resync copies the chain. A file with "
                        + "one replica on such a target cannot be rebuilt and is listed as lost. Files open for writing are retried "
                        + "for 10 s, then reported busy. Exit status 1 if any file was not rebuilt."})
final class RebuildCommand implements Callable<Integer> {
    @Mixin
    ClientMixin client;

    @Option(names = "--target", required = true, paramLabel = "ID", description = "A target that is gone (repeatable).")
    List<Integer> targets;

    @Option(names = "--dry-run", description = "List the files that would be rebuilt and the ones that are lost, and change nothing.")
    boolean dryRun;

    @Option(names = "--json", description = "Report as JSON: every file with its outcome, and the counts.")
    boolean json;

    @Override
    public Integer call() {
        Set<Integer> gone = new HashSet<>(targets);
        List<Map<String, Object>> report = new ArrayList<>();
        Map<String, Long> counts = new TreeMap<>();
        try (PlinthClient plinth = client.connect()) {
            CellRebuild.rebuildTargets(plinth, gone, dryRun, outcome -> {
                Map<String, Object> entry = new LinkedHashMap<>();
                entry.put("inode", outcome.inodeId());
                entry.put("outcome", outcome.outcome());
                if (outcome.note() != null) {
                    entry.put("note", outcome.note());
                }
                report.add(entry);
                counts.merge(outcome.outcome(), 1L, Long::sum);
            });
        }
        if (json) {
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("dry_run", dryRun);
            out.put("targets", targets);
            out.put("files", report);
            out.put("counts", counts);
            System.out.println(Json.write(out));
        } else {
            for (Map<String, Object> entry : report) {
                System.out.printf("%-14s inode %s%s%n", entry.get("outcome"), entry.get("inode"),
                        entry.containsKey("note") ? ": " + entry.get("note") : "");
            }
            System.out.println(counts.isEmpty() ? "no file has cells on targets " + targets : "files: " + counts);
        }
        boolean incomplete = counts.keySet().stream().anyMatch(outcome -> !outcome.equals("rebuilt") && !outcome.equals("would rebuild"));
        return incomplete ? Main.EXIT_FAILED : 0;
    }
}
