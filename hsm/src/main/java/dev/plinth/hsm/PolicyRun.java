package dev.plinth.hsm;

import static dev.plinth.wire.messages.HsmMessages.*;

import dev.plinth.client.PlinthClient;
import dev.plinth.common.FileType;
import dev.plinth.common.PlinthException;
import dev.plinth.wire.messages.MetaMessages;
import dev.plinth.wire.messages.MetaMessages.Attributes;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * One evaluation of policy rules: walks each rule's directories a page at a time (at most
 * {@code entriesPerSecond} entries a second, so a scan of millions of files does not hold the
 * metadata service), tests each regular file's times, size and HSM state, and asks for the
 * actions it qualifies for (or, as a dry run, only counts them). The client acts as root.
 */
public final class PolicyRun {
    private static final int PAGE = 1000;
    private static final int ERRORS_KEPT = 20;

    private final PlinthClient client;
    private final boolean dryRun;
    private final long entriesPerSecond;
    private final java.util.concurrent.atomic.AtomicLong entriesScanned = new java.util.concurrent.atomic.AtomicLong();

    public PolicyRun(PlinthClient client, boolean dryRun, long entriesPerSecond) {
        this.client = client;
        this.dryRun = dryRun;
        this.entriesPerSecond = Math.max(1, entriesPerSecond);
    }

    /** Directory entries read so far by {@link #run} (for progress, from any thread). */
    public long entriesScanned() {
        return entriesScanned.get();
    }

    /** What one rule found and did (or, as a dry run, would do). */
    public static final class RuleReport {
        public final int line;
        public final String rule;
        public long scannedFiles;
        public long matchedFiles;
        public long matchedBytes;
        /** Per action ("archive", "release"): files and bytes asked for (or that would be). */
        public final Map<String, long[]> actions = new TreeMap<>();
        /** Files matched but left, by reason. */
        public final Map<String, Long> skipped = new TreeMap<>();
        public final List<String> errors = new ArrayList<>();

        RuleReport(PolicyRules.Rule rule) {
            this.line = rule.line();
            this.rule = rule.text();
        }

        void did(String action, long bytes) {
            long[] counts = actions.computeIfAbsent(action, a -> new long[2]);
            counts[0]++;
            counts[1] += bytes;
        }

        void skip(String reason) {
            skipped.merge(reason, 1L, Long::sum);
        }

        public Map<String, Object> toMap() {
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("line", line);
            out.put("rule", rule);
            out.put("scanned_files", scannedFiles);
            out.put("matched_files", matchedFiles);
            out.put("matched_bytes", matchedBytes);
            Map<String, Object> done = new LinkedHashMap<>();
            actions.forEach((action, counts) -> done.put(action, Map.of("files", counts[0], "bytes", counts[1])));
            out.put("actions", done);
            out.put("skipped", skipped);
            out.put("errors", errors);
            return out;
        }
    }

    public List<RuleReport> run(PolicyRules rules) throws InterruptedException {
        List<RuleReport> reports = new ArrayList<>();
        long started = System.nanoTime();
        long entries = 0;
        for (PolicyRules.Rule rule : rules.rules()) {
            RuleReport report = new RuleReport(rule);
            reports.add(report);
            for (String root : rule.paths()) {
                Attributes top;
                try {
                    top = client.stat(root);
                } catch (PlinthException e) {
                    report.errors.add(root + ": " + e.getMessage());
                    continue;
                }
                Deque<Map.Entry<Long, String>> directories = new ArrayDeque<>();
                if (top.isDirectory()) {
                    directories.push(Map.entry(top.inodeId(), root));
                } else {
                    consider(rule, report, top, root);
                }
                while (!directories.isEmpty()) {
                    Map.Entry<Long, String> next = directories.pop();
                    long directory = next.getKey();
                    String prefix = next.getValue().endsWith("/") ? next.getValue() : next.getValue() + "/";
                    String after = "";
                    while (true) {
                        MetaMessages.ReadDirPlusReply page = client.readDirPlus(directory, after, PAGE);
                        for (int i = 0; i < page.entries().size(); i++) {
                            Attributes attributes = page.attributes().get(i);
                            if (attributes == null) {
                                continue; // removed between the listing and its attributes
                            }
                            String path = prefix + page.entries().get(i).name();
                            if (attributes.isDirectory()) {
                                directories.push(Map.entry(attributes.inodeId(), path));
                            } else if (attributes.type() == FileType.FILE) {
                                consider(rule, report, attributes, path);
                            }
                        }
                        entries += page.entries().size();
                        entriesScanned.set(entries);
                        // paced: no faster than entriesPerSecond over the run so far
                        long due = started + entries * 1_000_000_000L / entriesPerSecond;
                        long wait = due - System.nanoTime();
                        if (wait > 0) {
                            Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
                        }
                        if (!page.more() || page.entries().isEmpty()) {
                            break;
                        }
                        after = page.entries().getLast().name();
                    }
                }
            }
        }
        return reports;
    }

    private void consider(PolicyRules.Rule rule, RuleReport report, Attributes file, String path) {
        report.scannedFiles++;
        long now = client.clock().epochNanos();
        for (PolicyRules.Condition condition : rule.conditions()) {
            long actual = switch (condition.field()) {
                case ATIME -> now - file.atimeNanos();
                case MTIME -> now - file.mtimeNanos();
                case CTIME -> now - file.ctimeNanos();
                case SIZE -> file.sizeBytes();
            };
            if (!condition.holds(actual)) {
                return;
            }
        }
        report.matchedFiles++;
        report.matchedBytes += file.sizeBytes();
        int states = states(file);
        boolean archived = (states & ARCHIVED) != 0 && (states & (DIRTY | LOST)) == 0;
        if (rule.archiveId() != 0) {
            if ((states & NOARCHIVE) != 0) {
                report.skip("archive: noarchive");
            } else if ((states & RELEASED) != 0 || archived) {
                report.skip("archive: already archived");
            } else {
                ask(report, file, path, ARCHIVE, rule.archiveId(), "archive");
            }
        }
        if (rule.release()) {
            if ((states & RELEASED) != 0) {
                report.skip("release: already released");
            } else if ((states & NORELEASE) != 0) {
                report.skip("release: norelease");
            } else if (!archived) {
                report.skip(rule.archiveId() != 0 ? "release: waits for its archive (a later run releases it)" : "release: not archived");
            } else {
                ask(report, file, path, RELEASE, 0, "release");
            }
        }
    }

    private void ask(RuleReport report, Attributes file, String path, int kind, int archiveId, String action) {
        if (dryRun) {
            report.did(action, file.sizeBytes());
            return;
        }
        try {
            client.hsm().request(file.inodeId(), kind, archiveId);
            report.did(action, file.sizeBytes());
        } catch (PlinthException e) {
            report.skip(action + ": refused");
            if (report.errors.size() < ERRORS_KEPT) {
                report.errors.add(path + ": " + e.getMessage());
            }
        }
    }
}
