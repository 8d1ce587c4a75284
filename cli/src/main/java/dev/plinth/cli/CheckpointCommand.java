package dev.plinth.cli;

import dev.plinth.checkpoint.CheckpointAgent;
import dev.plinth.checkpoint.CheckpointCatalog;
import dev.plinth.checkpoint.LocalStaging;
import dev.plinth.checkpoint.PlinthCheckpoints;
import dev.plinth.checkpoint.RankManifest;
import dev.plinth.client.PlinthClient;
import dev.plinth.common.ErrorCode;
import dev.plinth.common.Json;
import dev.plinth.common.PlinthException;
import dev.plinth.common.Sizes;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

@Command(name = "checkpoint", mixinStandardHelpOptions = true,
        description = {"Checkpoints staged on local disk, moved to Plinth and the cold tier in the background, never half-written.",
                "A trainer writes step-N.tmp/ (or step-N/rank-R.tmp/) in a staging directory and commits it by renaming it",
                "(`plinth checkpoint commit`, python/plinth_checkpoint.py); the agent does the rest. See docs/checkpoints.md."},
        subcommands = {CheckpointCommand.Agent.class, CheckpointCommand.Commit.class, CheckpointCommand.ListSteps.class,
                CheckpointCommand.Restore.class, CheckpointCommand.Verify.class, CheckpointCommand.Delete.class})
final class CheckpointCommand {
    private CheckpointCommand() {}

    @Command(name = "agent", mixinStandardHelpOptions = true,
            description = {"Watch a staging directory: upload each committed step to Plinth (files unchanged since the previous step are",
                    "hard-linked, not written), complete it once every rank is there, then keep N steps locally, archive every K-th",
                    "to the cold tier, release archived steps beyond --keep-hot and remove steps beyond --keep-cold."})
    static final class Agent implements Callable<Integer> {
        @Mixin
        ClientMixin client;

        @Option(names = "--staging", required = true, paramLabel = "DIR", description = "The trainer's staging directory (fast local disk).")
        Path staging;
        @Option(names = "--dest", required = true, paramLabel = "PLINTH_PATH",
                description = "Where steps go in the cluster; made (striped over every target, 4 MiB stripes) if missing.")
        String dest;
        @Option(names = "--keep-local", paramLabel = "N", description = "Committed steps kept in staging once on Plinth (default 2).")
        int keepLocal = 2;
        @Option(names = "--keep-hot", paramLabel = "N", description = "Steps kept in the hot tier (default 3); older ones are released once archived, or removed if never to be archived.")
        int keepHot = 3;
        @Option(names = "--keep-cold", paramLabel = "N", description = "Archived steps kept (default 0: all); older ones are removed.")
        int keepCold = 0;
        @Option(names = "--archive-every", paramLabel = "K", description = "Archive every K-th step committed (1: all; default 0: none).")
        int archiveEvery = 0;
        @Option(names = {"-a", "--archive"}, paramLabel = "ID", description = "Archive id for archived steps (default 1).")
        int archiveId = 1;
        @Option(names = "--parallel", paramLabel = "N", description = "Files uploaded at once (default 4).")
        int parallel = 4;
        @Option(names = "--once", description = "Do one pass (upload, complete, prune) and exit.")
        boolean once;
        @Option(names = "--no-yield", description = {"Upload even while a trainer writes a step into staging. By default uploads pause",
                "then (up to 10 minutes each), so that the trainer, which the GPUs wait for, has the disk and the CPUs."})
        boolean noYield;

        @Override
        public Integer call() throws Exception {
            CheckpointAgent.Options options = new CheckpointAgent.Options(staging, dest, keepLocal, keepHot, keepCold, archiveEvery,
                    archiveId, parallel, CheckpointAgent.POLL_MILLIS, !noYield);
            try (PlinthClient plinth = client.connect()) {
                CheckpointAgent agent = new CheckpointAgent(plinth, options, line -> System.err.println("plinth checkpoint: " + line));
                if (once) {
                    agent.prepareDestination();
                    agent.pass(true);
                    return 0;
                }
                CountDownLatch stopped = new CountDownLatch(1);
                Runtime.getRuntime().addShutdownHook(new Thread(stopped::countDown));
                System.err.println("plinth checkpoint agent: " + staging + " -> " + dest + " on " + client.serverAddress());
                Thread worker = Thread.ofPlatform().name("checkpoint-agent").start(() -> {
                    try {
                        agent.run(() -> stopped.getCount() == 0);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                });
                stopped.await();
                worker.interrupt();
                worker.join(10_000);
            }
            return 0;
        }
    }

    @Command(name = "commit", mixinStandardHelpOptions = true,
            description = {"Commit what a trainer wrote into STAGING/step-N.tmp/ (or, with --world-size, STAGING/step-N/rank-R.tmp/):",
                    "list every file with its size and CRC32C in MANIFEST.json, fsync, and rename the directory to its committed name."})
    static final class Commit implements Callable<Integer> {
        @Parameters(index = "0", paramLabel = "STAGING")
        Path staging;
        @Option(names = "--step", required = true, paramLabel = "N")
        long step;
        @Option(names = "--rank", paramLabel = "R", description = "This rank (default 0).")
        int rank = 0;
        @Option(names = "--world-size", paramLabel = "W", description = "Ranks in the job (default 1).")
        int worldSize = 1;

        @Override
        public Integer call() throws Exception {
            RankManifest manifest = new LocalStaging(staging).commit(step, rank, worldSize);
            System.err.printf(Locale.ROOT, "plinth checkpoint: committed step %d rank %d of %d: %d file(s), %s%n", step, rank, worldSize,
                    manifest.files().size(), Sizes.format(manifest.bytes()));
            return 0;
        }
    }

    @Command(name = "list", mixinStandardHelpOptions = true, description = "Show every checkpoint with its state and tiers (local, hot, cold).")
    static final class ListSteps implements Callable<Integer> {
        @Mixin
        ClientMixin client;
        @Parameters(paramLabel = "PLINTH_PATH")
        String dest;
        @Option(names = "--staging", paramLabel = "DIR", description = "Also look at this staging directory (the local tier).")
        Path staging;
        @Option(names = "--json", description = "Print an array of {step, state, tiers[], durable, uploading, world_size, local_ranks[], files, bytes}.")
        boolean json;

        @Override
        public Integer call() throws Exception {
            try (PlinthClient plinth = client.connect()) {
                List<CheckpointCatalog.Entry> entries = catalog(plinth, dest, staging).list();
                if (json) {
                    List<Object> out = new ArrayList<>();
                    entries.forEach(entry -> out.add(entry.toMap()));
                    System.out.println(Json.write(out));
                    return 0;
                }
                System.out.printf("%-14s %-10s %-16s %5s %6s %10s%n", "STEP", "STATE", "TIERS", "RANKS", "FILES", "SIZE");
                for (CheckpointCatalog.Entry entry : entries) {
                    String tiers = entry.tiers().isEmpty() ? "-" : String.join(",", entry.tiers());
                    if (entry.uploading()) {
                        tiers += tiers.equals("-") ? "" : " ";
                        tiers = tiers.equals("-") ? "uploading" : tiers + "(uploading)";
                    }
                    System.out.printf(Locale.ROOT, "%-14s %-10s %-16s %5d %6d %10s%n", dev.plinth.checkpoint.CheckpointNames.step(entry.step()),
                            entry.state(), tiers, entry.worldSize(), entry.files(), Sizes.format(entry.bytes()));
                }
            }
            return 0;
        }
    }

    static CheckpointCatalog catalog(PlinthClient plinth, String dest, Path staging) {
        return new CheckpointCatalog(new PlinthCheckpoints(plinth, dest), staging == null ? null : new LocalStaging(staging));
    }

    static final class Which {
        @Option(names = "--step", paramLabel = "N", description = "This step.")
        Long step;
        @Option(names = "--latest", description = "The newest complete step (the default).")
        boolean latest;
    }

    @Command(name = "restore", mixinStandardHelpOptions = true,
            description = {"Fetch a complete checkpoint into DIR from the nearest tier that has it (local staging, then Plinth, then the",
                    "cold tier through HSM), checking every file's CRC32C against its manifest."})
    static final class Restore implements Callable<Integer> {
        @Mixin
        ClientMixin client;
        @Parameters(paramLabel = "PLINTH_PATH")
        String dest;
        @ArgGroup(exclusive = true)
        Which which = new Which();
        @Option(names = "--rank", paramLabel = "R", description = "Only this rank's part (straight into DIR).")
        Integer rank;
        @Option(names = "--to", required = true, paramLabel = "DIR")
        Path to;
        @Option(names = "--staging", paramLabel = "DIR", description = "A staging directory to restore from when it has the step.")
        Path staging;
        @Option(names = "--timeout", paramLabel = "SECONDS", description = "How long to wait for files restored from the cold tier (default 3600).")
        long timeoutSeconds = 3600;
        @Option(names = "--json", description = "Print {step, tier, files, bytes} on stdout.")
        boolean json;

        @Override
        public Integer call() throws Exception {
            try (PlinthClient plinth = client.connect()) {
                CheckpointCatalog catalog = catalog(plinth, dest, staging);
                long step = which.step != null ? which.step : catalog.latest();
                CheckpointCatalog.Restored restored;
                try (Progress progress = new Progress("restore " + dev.plinth.checkpoint.CheckpointNames.step(step), -1)) {
                    restored = catalog.restore(step, rank, to, timeoutSeconds * 1000, progress::advance);
                }
                if (json) {
                    java.util.Map<String, Object> out = new java.util.LinkedHashMap<>();
                    out.put("step", restored.step());
                    out.put("tier", restored.tier());
                    out.put("files", restored.files());
                    out.put("bytes", restored.bytes());
                    System.out.println(Json.write(out));
                } else {
                    System.err.printf(Locale.ROOT, "plinth checkpoint: restored %s from the %s tier into %s: %d file(s), %s, checksums match%n",
                            dev.plinth.checkpoint.CheckpointNames.step(step), restored.tier(), to, restored.files(), Sizes.format(restored.bytes()));
                }
            }
            return 0;
        }
    }

    @Command(name = "verify", mixinStandardHelpOptions = true,
            description = "Read back complete checkpoints on Plinth and check every file against its manifest (released files are counted, not read).")
    static final class Verify implements Callable<Integer> {
        @Mixin
        ClientMixin client;
        @Parameters(paramLabel = "PLINTH_PATH")
        String dest;
        @Option(names = "--step", paramLabel = "N", description = "Only this step (default: every complete step).")
        Long step;

        @Override
        public Integer call() {
            int failed = 0;
            try (PlinthClient plinth = client.connect()) {
                PlinthCheckpoints store = new PlinthCheckpoints(plinth, dest);
                CheckpointCatalog catalog = new CheckpointCatalog(store, null);
                List<Long> steps = step != null ? List.of(step) : store.completeSteps().stream().map(PlinthCheckpoints.StoredStep::step).toList();
                for (long each : steps) {
                    CheckpointCatalog.Verified verified = catalog.verify(each, ignored -> {});
                    String name = dev.plinth.checkpoint.CheckpointNames.step(each);
                    if (verified.problems().isEmpty()) {
                        System.out.printf(Locale.ROOT, "%s: ok (%d file(s) read back and matched, %d in the cold tier only)%n", name,
                                verified.checked(), verified.cold());
                    } else {
                        failed++;
                        verified.problems().forEach(problem -> System.out.println(name + ": FAILED: " + problem));
                    }
                }
            }
            return failed == 0 ? 0 : Main.EXIT_FAILED;
        }
    }

    @Command(name = "delete", mixinStandardHelpOptions = true,
            description = "Remove steps from Plinth entirely (every tier there; archived copies go with HSM's removal of deleted files).")
    static final class Delete implements Callable<Integer> {
        @Mixin
        ClientMixin client;
        @Parameters(paramLabel = "PLINTH_PATH")
        String dest;
        @Option(names = "--step", required = true, arity = "1..*", paramLabel = "N")
        List<Long> steps;

        @Override
        public Integer call() {
            try (PlinthClient plinth = client.connect()) {
                PlinthCheckpoints store = new PlinthCheckpoints(plinth, dest);
                for (long step : steps) {
                    if (store.steps().stream().noneMatch(s -> s.step() == step)) {
                        throw new PlinthException(ErrorCode.NOT_FOUND, dev.plinth.checkpoint.CheckpointNames.step(step) + " in " + dest);
                    }
                    store.remove(step);
                }
            }
            return 0;
        }
    }
}
