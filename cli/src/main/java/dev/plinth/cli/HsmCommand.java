package dev.plinth.cli;

import static dev.plinth.wire.messages.HsmMessages.*;

import dev.plinth.client.PlinthClient;
import dev.plinth.common.Credentials;
import dev.plinth.common.ErrorCode;
import dev.plinth.common.InodeId;
import dev.plinth.common.PlinthException;
import dev.plinth.hsm.HsmMover;
import dev.plinth.common.Json;
import dev.plinth.wire.messages.MetaMessages.Attributes;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

@Command(name = "hsm", mixinStandardHelpOptions = true,
        description = {"Hierarchical storage management, as Lustre's lfs hsm_*: files archived to a cold tier, released from the hot one,",
                "restored on access. Archive, restore and remove are queued for movers (plinth server runs one; plinth hsm agent runs",
                "more); release is done at once. See `plinth archive` for the archives."},
        subcommands = {HsmCommand.State.class, HsmCommand.Set.class, HsmCommand.Clear.class, HsmCommand.Archive.class,
                HsmCommand.Release.class, HsmCommand.Restore.class, HsmCommand.Remove.class, HsmCommand.Cancel.class,
                HsmCommand.Queue.class, HsmCommand.Policy.class, HsmCommand.Agent.class})
final class HsmCommand {
    private HsmCommand() {}

    /** A file's HSM fields as `hsm state --json` and `fs stat --json` print them. */
    static Map<String, Object> describe(String path, HsmState state) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("path", path);
        List<String> states = new ArrayList<>();
        int[] bits = {EXISTS, ARCHIVED, RELEASED, DIRTY, LOST};
        String[] names = {"exists", "archived", "released", "dirty", "lost"};
        for (int i = 0; i < bits.length; i++) {
            if ((state.states() & bits[i]) != 0) {
                states.add(names[i]);
            }
        }
        List<String> flags = new ArrayList<>();
        if ((state.states() & NOARCHIVE) != 0) {
            flags.add("noarchive");
        }
        if ((state.states() & NORELEASE) != 0) {
            flags.add("norelease");
        }
        out.put("states", states);
        out.put("flags", flags);
        out.put("archive_id", state.archiveId());
        out.put("object_key", state.copy() == null ? null : state.copy().objectKey());
        out.put("checksum", state.copy() == null ? null : checksum(state.copy()));
        if (state.action() != null) {
            out.put("action", kindName(state.action().kind()));
        }
        if (state.lastError() != null) {
            out.put("last_error", state.lastError());
        }
        return out;
    }

    /** The archived copy's checksum: CRC32C of its parts' CRC32C values, with the part count (as S3's composite checksums). */
    static String checksum(ArchivedCopy copy) {
        java.util.zip.CRC32C crc = new java.util.zip.CRC32C();
        ByteBuffer parts = ByteBuffer.allocate(4 * copy.partCrcs().size());
        copy.partCrcs().forEach(parts::putInt);
        crc.update(parts.flip());
        return String.format(Locale.ROOT, "crc32c:%08x-%d", crc.getValue(), copy.partCrcs().size());
    }

    /** `lfs hsm_state` form: {@code PATH: (0x0000000b) exists dirty archived, archive_id:1}. */
    static String lustreLine(String path, HsmState state) {
        StringBuilder line = new StringBuilder(String.format(Locale.ROOT, "%s: (0x%08x)", path, state.states()));
        lustreWords(state.states()).forEach(word -> line.append(' ').append(word));
        if (state.archiveId() != 0) {
            line.append(", archive_id:").append(state.archiveId());
        }
        return line.toString();
    }

    /** The regular files PATHs name, directories walked with {@code recursive} (else refused). */
    static List<Map.Entry<String, Attributes>> files(PlinthClient plinth, List<String> paths, boolean recursive) {
        List<Map.Entry<String, Attributes>> files = new ArrayList<>();
        for (String path : paths) {
            collect(plinth, path, plinth.stat(path), recursive, files);
        }
        return files;
    }

    private static void collect(PlinthClient plinth, String path, Attributes attributes, boolean recursive,
                                List<Map.Entry<String, Attributes>> files) {
        if (attributes.isDirectory()) {
            if (!recursive) {
                throw new PlinthException(ErrorCode.IS_A_DIRECTORY, path + " (use -R to act on the files under it)");
            }
            for (PlinthClient.Listed listed : plinth.listWithAttributes(path)) {
                collect(plinth, (path.endsWith("/") ? path : path + "/") + listed.entry().name(), listed.attributes(), true, files);
            }
        } else if (attributes.type() == dev.plinth.common.FileType.FILE) {
            files.add(Map.entry(path, attributes));
        }
    }

    @Command(name = "state", mixinStandardHelpOptions = true, description = "Show files' HSM state, as lfs hsm_state does.")
    static final class State implements Callable<Integer> {
        @Mixin
        ClientMixin client;

        @Option(names = "--json", description = "Print an array of {path, states[], flags[], archive_id, object_key, checksum}.")
        boolean json;

        @Parameters(paramLabel = "PATH", arity = "1..*")
        List<String> paths;

        @Override
        public Integer call() {
            List<Object> described = new ArrayList<>();
            try (PlinthClient plinth = client.connect()) {
                for (String path : paths) {
                    HsmState state = plinth.hsm().state(plinth.stat(path).inodeId());
                    if (json) {
                        described.add(describe(path, state));
                    } else {
                        System.out.println(lustreLine(path, state));
                    }
                }
            }
            if (json) {
                System.out.println(Json.write(described));
            }
            return 0;
        }
    }

    abstract static class FlagChange implements Callable<Integer> {
        @Mixin
        ClientMixin client;

        @Option(names = "--noarchive", description = "Never archive the file.")
        boolean noarchive;
        @Option(names = "--norelease", description = "Never release the file.")
        boolean norelease;
        @Option(names = "--exists", description = "(root) The archive holds a copy.")
        boolean exists;
        @Option(names = "--archived", description = "(root) The copy is complete.")
        boolean archived;
        @Option(names = "--dirty", description = "(root) The file changed since it was archived.")
        boolean dirty;
        @Option(names = "--lost", description = "(root) The copy is gone.")
        boolean lost;

        @Parameters(paramLabel = "PATH", arity = "1..*")
        List<String> paths;

        int bits() {
            return (noarchive ? NOARCHIVE : 0) | (norelease ? NORELEASE : 0) | (exists ? EXISTS : 0) | (archived ? ARCHIVED : 0)
                    | (dirty ? DIRTY : 0) | (lost ? LOST : 0);
        }

        abstract boolean set();

        @Override
        public Integer call() {
            if (bits() == 0) {
                throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "name a flag: --noarchive, --norelease (root also --exists, --archived, --dirty, --lost)");
            }
            try (PlinthClient plinth = client.connect()) {
                for (String path : paths) {
                    long inode = plinth.stat(path).inodeId();
                    plinth.hsm().setFlags(inode, set() ? bits() : 0, set() ? 0 : bits());
                }
            }
            return 0;
        }
    }

    @Command(name = "set", mixinStandardHelpOptions = true, description = "Set HSM flags (lfs hsm_set).")
    static final class Set extends FlagChange {
        @Override
        boolean set() {
            return true;
        }
    }

    @Command(name = "clear", mixinStandardHelpOptions = true, description = "Clear HSM flags (lfs hsm_clear).")
    static final class Clear extends FlagChange {
        @Override
        boolean set() {
            return false;
        }
    }

    /** Asks for one kind of action on every file named, and (unless --no-wait) waits for them with progress. */
    abstract static class ActionCommand implements Callable<Integer> {
        @Mixin
        ClientMixin client;

        @Option(names = "-R", description = "Act on the files under the directories named.")
        boolean recursive;

        @Parameters(paramLabel = "PATH", arity = "1..*")
        List<String> paths;

        abstract int kind();

        int archiveId() {
            return 0;
        }

        /** Whether the command waits for the actions it asked for (release and cancel are done when asked). */
        boolean waits() {
            return false;
        }

        @Override
        public Integer call() throws InterruptedException {
            try (PlinthClient plinth = client.connect()) {
                Map<Long, String> pending = new LinkedHashMap<>();
                Map<Long, Long> sizes = new HashMap<>();
                int failed = 0;
                for (Map.Entry<String, Attributes> file : files(plinth, paths, recursive)) {
                    long inode = file.getValue().inodeId();
                    try {
                        HsmState state = plinth.hsm().request(inode, kind(), archiveId());
                        if (state.action() != null) {
                            pending.put(inode, file.getKey());
                            sizes.put(inode, file.getValue().sizeBytes());
                        }
                    } catch (PlinthException e) {
                        System.err.println("plinth hsm " + kindName(kind()) + ": " + file.getKey() + ": " + e.getMessage());
                        failed++;
                    }
                }
                if (waits()) {
                    failed += await(plinth, pending, sizes);
                }
                return failed == 0 ? 0 : Main.EXIT_FAILED;
            }
        }

        private int await(PlinthClient plinth, Map<Long, String> pending, Map<Long, Long> sizes) throws InterruptedException {
            int failed = 0;
            long total = sizes.values().stream().mapToLong(Long::longValue).sum();
            long finishedBytes = 0;
            long shownBytes = 0;
            try (Progress progress = new Progress(kindName(kind()) + " " + pending.size() + " file(s)", total)) {
                while (!pending.isEmpty()) {
                    long running = 0;
                    for (var it = pending.entrySet().iterator(); it.hasNext(); ) {
                        Map.Entry<Long, String> file = it.next();
                        HsmState state = plinth.hsm().state(file.getKey());
                        if (state.action() != null) {
                            running += state.action().doneBytes();
                            continue;
                        }
                        it.remove();
                        finishedBytes += sizes.get(file.getKey());
                        boolean ok = switch (kind()) {
                            case ARCHIVE -> (state.states() & ARCHIVED) != 0 && (state.states() & DIRTY) == 0 && state.lastError() == null;
                            case RESTORE -> (state.states() & RELEASED) == 0;
                            case REMOVE -> (state.states() & ARCHIVED) == 0;
                            default -> state.lastError() == null;
                        };
                        if (!ok) {
                            System.err.println("plinth hsm " + kindName(kind()) + ": " + file.getValue() + ": "
                                    + (state.lastError() == null ? "did not complete" : state.lastError()));
                            failed++;
                        }
                    }
                    long done = finishedBytes + running;
                    progress.advance(Math.max(0, done - shownBytes));
                    shownBytes = Math.max(shownBytes, done);
                    if (!pending.isEmpty()) {
                        Thread.sleep(100);
                    }
                }
            }
            return failed;
        }
    }

    /** An action a mover runs: the command waits for it, with progress, unless --no-wait. */
    abstract static class QueuedActionCommand extends ActionCommand {
        @Option(names = "--no-wait", description = "Queue the actions and return.")
        boolean noWait;

        @Override
        boolean waits() {
            return !noWait;
        }
    }

    @Command(name = "archive", mixinStandardHelpOptions = true, description = "Copy files to an archive (lfs hsm_archive); waits unless --no-wait.")
    static final class Archive extends QueuedActionCommand {
        @Option(names = {"-a", "--archive"}, paramLabel = "ID", description = "Archive id (default 1; see `plinth archive list`).")
        int archive = 1;

        @Override
        int kind() {
            return ARCHIVE;
        }

        @Override
        int archiveId() {
            return archive;
        }
    }

    @Command(name = "release", mixinStandardHelpOptions = true,
            description = "Free the hot copy of archived, unchanged, closed files (lfs hsm_release); they are restored when next read.")
    static final class Release extends ActionCommand {
        @Override
        int kind() {
            return RELEASE;
        }
    }

    @Command(name = "restore", mixinStandardHelpOptions = true, description = "Bring released files back from their archive (lfs hsm_restore).")
    static final class Restore extends QueuedActionCommand {
        @Override
        int kind() {
            return RESTORE;
        }
    }

    @Command(name = "remove", mixinStandardHelpOptions = true, description = "Delete files' archived copies (lfs hsm_remove); not of released files.")
    static final class Remove extends QueuedActionCommand {
        @Override
        int kind() {
            return REMOVE;
        }
    }

    @Command(name = "cancel", mixinStandardHelpOptions = true, description = "Drop the actions queued or running on files (lfs hsm_cancel).")
    static final class Cancel extends ActionCommand {
        @Override
        int kind() {
            return CANCEL;
        }
    }

    @Command(name = "queue", mixinStandardHelpOptions = true, description = "Show waiting and running HSM actions, restores first.")
    static final class Queue implements Callable<Integer> {
        @Mixin
        ClientMixin client;

        @Option(names = "--json", description = "Print as JSON.")
        boolean json;

        @Override
        public Integer call() {
            List<Map<String, Object>> rows = new ArrayList<>();
            try (PlinthClient plinth = client.connect()) {
                for (int mdt : plinth.hsm().mdts()) {
                long after = 0;
                for (int page = 0; page < 1000; page++) { // the queue is bounded; so is this listing
                    ActionList list = plinth.hsm().actions(mdt, after, 1000);
                    for (Action action : list.actions()) {
                        Map<String, Object> row = new LinkedHashMap<>();
                        row.put("mdt", mdt);
                        row.put("action_id", action.actionId());
                        row.put("inode", InodeId.format(action.inodeId()));
                        row.put("kind", kindName(action.kind()));
                        row.put("archive_id", action.archiveId());
                        row.put("status", action.status() == RUNNING ? "running" : "waiting");
                        row.put("done_bytes", action.doneBytes());
                        row.put("total_bytes", action.totalBytes());
                        row.put("attempts", action.attempts());
                        rows.add(row);
                        after = action.actionId();
                    }
                    if (!list.more()) {
                        break;
                    }
                }
                }
            }
            if (json) {
                System.out.println(Json.write(rows));
                return 0;
            }
            System.out.printf("%-8s %-18s %-8s %-8s %-8s %s%n", "ID", "INODE", "KIND", "ARCHIVE", "STATUS", "PROGRESS");
            for (Map<String, Object> row : rows) {
                long total = (Long) row.get("total_bytes");
                long done = (Long) row.get("done_bytes");
                System.out.printf("%-8s %-18s %-8s %-8s %-8s %s%n", row.get("action_id"), row.get("inode"), row.get("kind"), row.get("archive_id"),
                        row.get("status"), total > 0 ? (100 * done / total) + "% of " + dev.plinth.common.Sizes.format(total) : "-");
            }
            return 0;
        }
    }

    @Command(name = "policy", mixinStandardHelpOptions = true,
            description = {"Rules that archive and release files by age, size and place (grammar in docs/hsm.md), e.g.",
                    "  archive, release when atime > 30d and size >= 1MiB under /datasets",
                    "A mover runs them every hsm.policy-interval-millis when hsm.policy-file is set."},
            subcommands = {PolicyRunCommand.class, PolicyCheck.class})
    static final class Policy {}

    @Command(name = "run", mixinStandardHelpOptions = true, description = "Evaluate the rules now and report what was (or would be) done.")
    static final class PolicyRunCommand implements Callable<Integer> {
        @Mixin
        ClientMixin client;

        @Option(names = "--rules", paramLabel = "FILE", description = "Rules file (default: the setting hsm.policy-file).")
        String rules;

        @Option(names = "--dry-run", description = "Ask for nothing: only report what would be asked for.")
        boolean dryRun;

        @Option(names = "--json", description = "Print the report as JSON.")
        boolean json;

        @Override
        public Integer call() throws Exception {
            String file = rules != null ? rules : client.config().get(dev.plinth.common.Settings.HSM_POLICY_FILE);
            if (file.isEmpty()) {
                throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "name the rules: --rules FILE, or the setting hsm.policy-file");
            }
            dev.plinth.hsm.PolicyRules parsed = dev.plinth.hsm.PolicyRules.parse(java.nio.file.Files.readString(java.nio.file.Path.of(file)));
            List<dev.plinth.hsm.PolicyRun.RuleReport> reports;
            try (PlinthClient plinth = client.connect(client.config(), Credentials.ROOT, "hsm-policy")) {
                dev.plinth.hsm.PolicyRun run = new dev.plinth.hsm.PolicyRun(plinth, dryRun,
                        client.config().get(dev.plinth.common.Settings.HSM_POLICY_SCAN_RATE));
                boolean terminal = System.console() != null && System.console().isTerminal();
                // a line every 5 s (redrawn in place on a terminal) for a scan that takes that long
                java.util.concurrent.ScheduledExecutorService ticker = java.util.concurrent.Executors.newSingleThreadScheduledExecutor(
                        Thread.ofPlatform().daemon().factory());
                long started = System.nanoTime();
                ticker.scheduleAtFixedRate(() -> System.err.print(String.format(Locale.ROOT, "%spolicy run: %,d entries scanned in %d s%s",
                        terminal ? "\r" : "", run.entriesScanned(), (System.nanoTime() - started) / 1_000_000_000L, terminal ? "" : "\n")),
                        5, terminal ? 1 : 5, java.util.concurrent.TimeUnit.SECONDS);
                try {
                    reports = run.run(parsed);
                } finally {
                    ticker.shutdownNow();
                    if (terminal && System.nanoTime() - started > 5_000_000_000L) {
                        System.err.println();
                    }
                }
            }
            if (json) {
                Map<String, Object> out = new LinkedHashMap<>();
                out.put("dry_run", dryRun);
                out.put("rules", reports.stream().map(dev.plinth.hsm.PolicyRun.RuleReport::toMap).toList());
                System.out.println(Json.write(out));
                return 0;
            }
            for (dev.plinth.hsm.PolicyRun.RuleReport report : reports) {
                System.out.println("line " + report.line + ": " + report.rule);
                System.out.println("  scanned " + report.scannedFiles + " files, matched " + report.matchedFiles + " ("
                        + dev.plinth.common.Sizes.format(report.matchedBytes) + ")");
                report.actions.forEach((action, counts) -> System.out.println("  " + action + (dryRun ? " (would ask)" : " asked") + ": "
                        + counts[0] + " files, " + dev.plinth.common.Sizes.format(counts[1])));
                report.skipped.forEach((reason, count) -> System.out.println("  skipped, " + reason + ": " + count));
                report.errors.forEach(error -> System.out.println("  error: " + error));
            }
            return 0;
        }
    }

    @Command(name = "check", mixinStandardHelpOptions = true, description = "Parse a rules file and print its rules, or the first error with its line.")
    static final class PolicyCheck implements Callable<Integer> {
        @Parameters(index = "0", paramLabel = "FILE")
        String file;

        @Override
        public Integer call() throws Exception {
            dev.plinth.hsm.PolicyRules parsed = dev.plinth.hsm.PolicyRules.parse(java.nio.file.Files.readString(java.nio.file.Path.of(file)));
            for (dev.plinth.hsm.PolicyRules.Rule rule : parsed.rules()) {
                System.out.println("line " + rule.line() + ": " + rule.text());
            }
            System.out.println(parsed.rules().size() + " rule(s)");
            return 0;
        }
    }

    @Command(name = "agent", mixinStandardHelpOptions = true,
            description = {"Run an HSM mover (Lustre's copytool) until stopped: takes archive, restore and remove actions from the cluster",
                    "and copies bytes to and from the archives, which must be reachable from this node. Acts as root (it holds the",
                    "cluster secret). plinth server runs one unless server.mover=false."})
    static final class Agent implements Callable<Integer> {
        @Mixin
        ClientMixin client;

        @Override
        public Integer call() throws InterruptedException {
            CountDownLatch stopped = new CountDownLatch(1);
            try (PlinthClient plinth = client.connect(client.config(), Credentials.ROOT, "hsm-agent");
                 HsmMover mover = new HsmMover(plinth, client.config()).start()) {
                dev.plinth.hsm.PolicySchedule policies = dev.plinth.hsm.PolicySchedule.startIfConfigured(plinth, client.config());
                Runtime.getRuntime().addShutdownHook(new Thread(stopped::countDown));
                System.err.println("plinth hsm agent: moving for " + client.serverAddress() + " (archives: "
                        + plinth.archives().stream().map(a -> a.archiveId() + "=" + a.uri()).toList() + ")");
                stopped.await();
                if (policies != null) {
                    policies.close();
                }
            }
            return 0;
        }
    }
}
