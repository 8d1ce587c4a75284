package dev.plinth.checkpoint;

import dev.plinth.client.PlinthClient;
import dev.plinth.common.ErrorCode;
import dev.plinth.common.Layout;
import dev.plinth.common.PlinthException;
import dev.plinth.common.Sizes;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;

/**
 * Moves committed checkpoints from a node's staging directory to Plinth and down the tiers: uploads
 * each committed rank (hard-linking files unchanged since the previous step), completes the step
 * once every rank is there, notes it durable in staging, keeps the newest {@code keepLocal} steps
 * on local disk, archives every {@code archiveEvery}-th step through HSM, releases archived steps
 * beyond the newest {@code keepHot} from the hot tier, and removes steps beyond {@code keepCold}
 * (0: keep all). It keeps no state of its own: each pass reads staging and Plinth, so a restarted
 * agent resumes where the last one stopped and several agents (one per node) share a destination.
 */
public final class CheckpointAgent {
    /** The agent's settings; see {@code plinth checkpoint agent --help}. */
    /** How often the staging directory is looked at: a committed step waits this long, at most, for its upload to start. */
    public static final long POLL_MILLIS = 100;
    /** How long one upload pauses, in all, for trainers writing. */
    public static final long MAX_YIELD_MILLIS = 600_000;
    private static final long WRITING_RECENT_MILLIS = 1000;
    private static final long YIELD_CHECK_NANOS = 50_000_000L;

    /**
     * The agent's settings. {@code yieldToWriters}: uploads pause while a trainer is writing a step
     * into staging (a .tmp directory changed in the last second), so that the trainer, which GPUs
     * wait for, has the disk and the CPUs; the pause ends when the step is committed, or after
     * {@link #MAX_YIELD_MILLIS} so that uploads never starve.
     */
    public record Options(Path staging, String dest, int keepLocal, int keepHot, int keepCold, int archiveEvery, int archiveId,
                          int parallel, long pollMillis, boolean yieldToWriters) {
        public Options {
            if (keepLocal < 0 || keepHot < 1 || keepCold < 0 || archiveEvery < 0 || parallel < 1) {
                throw new PlinthException(ErrorCode.INVALID_ARGUMENT,
                        "--keep-local and --keep-cold must be 0 or more, --keep-hot and --parallel 1 or more, --archive-every 0 or more");
            }
        }

        public static Options defaults(Path staging, String dest) {
            return new Options(staging, dest, 2, 3, 0, 0, 1, 4, POLL_MILLIS, true);
        }
    }

    private final Options options;
    private final LocalStaging staging;
    private final PlinthCheckpoints store;
    private final Consumer<String> report;
    private static final long TIER_PASS_NANOS = 5_000_000_000L;
    private long lastTierPass = System.nanoTime() - TIER_PASS_NANOS;
    private static final long WARN_INTERVAL_NANOS = 60_000_000_000L;
    /** Problems reported, and when: bounded, the oldest forgotten first. */
    private final Map<String, Long> lastWarned = new LinkedHashMap<>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Long> eldest) {
            return size() > 1000;
        }
    };
    /** Steps seen fully archived: not walked for archiving again (an optimisation; a restarted agent walks them once). */
    private final Set<Long> archivedSteps = new HashSet<>();
    /** Steps beyond --keep-hot released as far as they can be, for the kept steps they were released beside. */
    private final Set<Long> settledSteps = new HashSet<>();
    private List<Long> settledFor = List.of();

    public CheckpointAgent(PlinthClient plinth, Options options, Consumer<String> report) {
        this.options = options;
        this.staging = new LocalStaging(options.staging());
        this.store = new PlinthCheckpoints(plinth, options.dest());
        this.report = report;
    }

    /** Runs passes until {@code stop} says so, a pass every pollMillis; a failed pass is reported and retried. */
    public void run(BooleanSupplier stop) throws InterruptedException {
        while (!stop.getAsBoolean()) {
            try {
                pass();
            } catch (PlinthException | IOException | java.io.UncheckedIOException e) {
                warn("pass", "checkpoint agent: " + e.getMessage() + " (retrying)");
                Thread.sleep(Math.max(options.pollMillis(), 1000));
            }
            Thread.sleep(options.pollMillis());
        }
    }

    /**
     * Makes the destination if it is missing, striped over every target of its pool in 4 MiB
     * stripes: a checkpoint is a burst of large files, written fastest by all targets at once.
     * An existing destination keeps the layout its owner gave it.
     */
    public void prepareDestination() {
        PlinthClient plinth = store.client();
        if (plinth.exists(options.dest())) {
            return;
        }
        plinth.mkdirs(options.dest(), 0755);
        Layout inherited = plinth.stat(options.dest()).layout();
        if (inherited == null) {
            inherited = plinth.stat("/").layout();
        }
        if (inherited == null) {
            return;
        }
        var pool = plinth.clusterMap().pool(inherited.pool());
        int targets = pool == null ? inherited.stripeCount() : Math.max(1, pool.targetIds().size());
        Layout burst = new Layout(Math.min(targets, Layout.STRIPE_COUNT_MAX), Math.max(inherited.stripeSizeBytes(), 4 << 20),
                inherited.chunkSizeBytes(), inherited.pool(), inherited.replicas(), List.of(), inherited.mdtBytes()).validate();
        plinth.setLayout(options.dest(), burst);
    }

    /** What one pass did. */
    public record Pass(List<Long> completed, int uploadedParts, int removedLocal, int archiveRequested, int released, int removed) {}

    public Pass pass() throws IOException {
        return pass(false);
    }

    /** One pass; {@code walkTiers} walks the tiers (archive, release, remove) now rather than when they are due. */
    public Pass pass(boolean walkTiers) throws IOException {
        prepareDestination();
        staging.removeLeftovers();
        List<String> problems = new ArrayList<>();
        List<LocalStaging.Part> parts = staging.committedParts(problems);
        problems.forEach(problem -> warn(problem, "skipping " + problem));
        List<Long> completed = new ArrayList<>();
        int uploaded = 0;
        // a step once, whatever the number of its ranks here: whether it is complete, the step before it, completing it
        Map<Long, List<LocalStaging.Part>> byStep = new java.util.TreeMap<>();
        parts.forEach(part -> byStep.computeIfAbsent(part.step(), ignored -> new ArrayList<>()).add(part));
        for (Map.Entry<Long, List<LocalStaging.Part>> step : byStep.entrySet()) {
            if (staging.durable(step.getKey())) {
                continue;
            }
            String stepName = CheckpointNames.step(step.getKey());
            boolean failed = false;
            try {
                PlinthCheckpoints.StoredStep complete = store.completeStep(step.getKey());
                if (complete == null) {
                    List<LocalStaging.Part> pending = new ArrayList<>();
                    for (LocalStaging.Part part : step.getValue()) {
                        if (!store.uploaded(part)) {
                            pending.add(part);
                        }
                    }
                    PlinthCheckpoints.StoredStep previous = pending.isEmpty() ? null : store.completeStepBefore(step.getKey());
                    for (LocalStaging.Part part : pending) {
                        try {
                            upload(part, previous);
                            uploaded++;
                        } catch (PlinthException | IOException | java.io.UncheckedIOException e) {
                            // one rank that cannot go (a staged file changed) does not hold up the others
                            String name = stepName + (part.worldSize() == 1 ? "" : " rank " + part.rank());
                            warn(name, name + ": not uploaded: " + e.getMessage());
                            failed = true;
                        }
                    }
                    complete = failed ? null : store.tryComplete(step.getKey(), options.archiveEvery());
                }
                if (complete != null) {
                    staging.markDurable(step.getKey());
                    completed.add(step.getKey());
                    report.accept(String.format(Locale.ROOT, "%s: complete on Plinth (%d rank(s), %s, sequence %d%s)", stepName,
                            complete.marker().worldSize(), Sizes.format(complete.marker().bytes()), complete.marker().sequence(),
                            complete.marker().archive() ? ", to be archived" : ""));
                }
            } catch (PlinthException | IOException | java.io.UncheckedIOException e) {
                // a step that cannot complete (ranks that disagree) does not hold up the others
                warn(stepName, stepName + ": not completed: " + e.getMessage());
            }
        }
        int removedLocal = pruneLocal(parts);
        // the tiers are walked file by file: after a step completes, and otherwise every few seconds (archives take a while)
        long now = System.nanoTime();
        if (!walkTiers && completed.isEmpty() && now - lastTierPass < TIER_PASS_NANOS) {
            return new Pass(completed, uploaded, removedLocal, 0, 0, 0);
        }
        lastTierPass = now;
        List<PlinthCheckpoints.StoredStep> steps = store.completeSteps();
        archivedSteps.retainAll(steps.stream().map(PlinthCheckpoints.StoredStep::step).toList());
        int archiving = archive(steps);
        int[] pruned = pruneTiers(steps);
        return new Pass(completed, uploaded, removedLocal, archiving, pruned[0], pruned[1]);
    }

    private void upload(LocalStaging.Part part, PlinthCheckpoints.StoredStep previous) throws IOException {
        long total = part.manifest().bytes();
        String name = CheckpointNames.step(part.step()) + (part.worldSize() == 1 ? "" : " rank " + part.rank());
        report.accept(String.format(Locale.ROOT, "%s: uploading %d file(s), %s", name, part.manifest().files().size(), Sizes.format(total)));
        AtomicLong done = new AtomicLong();
        long started = System.nanoTime();
        AtomicLong lastReport = new AtomicLong(started);
        Yield yield = new Yield();
        PlinthCheckpoints.UploadResult result = store.upload(part, previous, options.parallel(), bytes -> {
            long now = System.nanoTime();
            long sofar = done.addAndGet(bytes);
            long last = lastReport.get();
            if (now - last > 2_000_000_000L && lastReport.compareAndSet(last, now)) {
                report.accept(String.format(Locale.ROOT, "%s: %d%% (%s of %s)", name, total == 0 ? 100 : sofar * 100 / total,
                        Sizes.format(sofar), Sizes.format(total)));
            }
        }, yield::pauseWhileWriting);
        double seconds = Math.max(1e-9, (System.nanoTime() - started) / 1e9);
        report.accept(String.format(Locale.ROOT, "%s: uploaded in %.2f s: %s written (%s/s), %s linked to %s, %s verified from an earlier run%s",
                name, seconds, Sizes.format(result.writtenBytes()), Sizes.format((long) (result.writtenBytes() / seconds)),
                Sizes.format(result.linkedBytes()), previous == null ? "no earlier step" : CheckpointNames.step(previous.step()),
                Sizes.format(result.reusedBytes()), yield.pausedNanos == 0 ? ""
                        : String.format(Locale.ROOT, "; paused %.2f s for the trainer's writes", yield.pausedNanos / 1e9)));
    }

    /** Pauses an upload while the trainer writes a step (see {@link Options#yieldToWriters}); shared by an upload's threads. */
    private final class Yield {
        private long lastCheckNanos;
        private long pausedNanos;

        synchronized void pauseWhileWriting() {
            if (!options.yieldToWriters() || pausedNanos >= MAX_YIELD_MILLIS * 1_000_000L) {
                return;
            }
            long now = System.nanoTime();
            if (now - lastCheckNanos < YIELD_CHECK_NANOS) {
                return;
            }
            lastCheckNanos = now;
            try {
                while (staging.beingWritten(WRITING_RECENT_MILLIS) && pausedNanos < MAX_YIELD_MILLIS * 1_000_000L) {
                    Thread.sleep(YIELD_CHECK_NANOS / 1_000_000L);
                    long after = System.nanoTime();
                    pausedNanos += after - lastCheckNanos;
                    lastCheckNanos = after;
                }
            } catch (IOException e) {
                // staging unreadable for a moment: upload on
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new PlinthException(ErrorCode.INTERRUPTED, "upload interrupted");
            }
        }
    }

    /** Keeps the newest keepLocal committed steps in staging; older ones go once Plinth has them (never before). */
    private int pruneLocal(List<LocalStaging.Part> parts) throws IOException {
        List<Long> steps = parts.stream().map(LocalStaging.Part::step).distinct().sorted(Comparator.reverseOrder()).toList();
        int removed = 0;
        for (int i = options.keepLocal(); i < steps.size(); i++) {
            long step = steps.get(i);
            if (staging.durable(step)) {
                staging.remove(step);
                removed++;
            }
        }
        return removed;
    }

    private int archive(List<PlinthCheckpoints.StoredStep> steps) {
        int requested = 0;
        for (PlinthCheckpoints.StoredStep step : steps) {
            if (step.marker().archive() && !archivedSteps.contains(step.step())) {
                int pending = store.requestArchive(step, options.archiveId());
                requested += pending;
                if (pending == 0) {
                    archivedSteps.add(step.step()); // checkpoints do not change: archived stays archived
                }
            }
        }
        return requested;
    }

    /** Reports a problem once a minute at most, however often a pass meets it. */
    private void warn(String key, String message) {
        long now = System.nanoTime();
        Long last = lastWarned.get(key);
        if (last == null || now - last > WARN_INTERVAL_NANOS) {
            lastWarned.put(key, now);
            report.accept(message + (last == null ? "" : " (still)"));
        }
    }

    /**
     * The newest keepHot steps stay hot. An older step to be archived is released once archived
     * (it stays listed, restorable from cold); an older step never to be archived is removed, as
     * keepHot bounds what the hot tier holds. Beyond keepCold, steps are removed entirely.
     */
    private int[] pruneTiers(List<PlinthCheckpoints.StoredStep> steps) {
        List<PlinthCheckpoints.StoredStep> newestFirst = new ArrayList<>(steps);
        newestFirst.sort(Comparator.comparingLong(PlinthCheckpoints.StoredStep::step).reversed());
        if (newestFirst.size() <= options.keepHot()) {
            return new int[] {0, 0};
        }
        List<PlinthCheckpoints.StoredStep> kept = newestFirst.subList(0, options.keepHot());
        List<Long> keptSteps = kept.stream().map(PlinthCheckpoints.StoredStep::step).toList();
        if (!keptSteps.equals(settledFor)) { // files shared with a step that left the hot set may be released now
            settledSteps.clear();
            settledFor = keptSteps;
        }
        Set<Long> keptInodes = new HashSet<>(store.inodes(kept));
        int released = 0;
        int removed = 0;
        int toArchive = 0;
        for (int i = 0; i < newestFirst.size(); i++) {
            PlinthCheckpoints.StoredStep step = newestFirst.get(i);
            if (step.marker().archive()) {
                toArchive++;
            }
            if (i < options.keepHot()) {
                continue;
            }
            if (!step.marker().archive()) {
                store.remove(step.step());
                removed++;
                report.accept(CheckpointNames.step(step.step()) + ": removed (beyond --keep-hot, not to be archived)");
            } else if (options.keepCold() > 0 && toArchive > options.keepCold()) {
                store.remove(step.step());
                removed++;
                report.accept(CheckpointNames.step(step.step()) + ": removed (beyond --keep-cold)");
            } else if (!settledSteps.contains(step.step()) && store.archived(step)) {
                int count = store.release(step, keptInodes);
                settledSteps.add(step.step());
                if (count > 0) {
                    released += count;
                    report.accept(CheckpointNames.step(step.step()) + ": released " + count + " file(s) from the hot tier (archived)");
                }
            }
        }
        return new int[] {released, removed};
    }
}
