package dev.plinth.server;

import dev.plinth.client.CellRebuild;
import dev.plinth.client.ClientOptions;
import dev.plinth.client.PlinthClient;
import dev.plinth.common.Credentials;
import dev.plinth.common.ErrorCode;
import dev.plinth.common.PlinthException;
import dev.plinth.common.Settings;
import dev.plinth.mgmt.MgmtService;
import dev.plinth.wire.messages.FsckMessages.FileChains;
import dev.plinth.wire.messages.MetaMessages.Attributes;
import dev.plinth.wire.messages.MgmtMessages.ChainInfo;
import dev.plinth.wire.messages.MgmtMessages.ClusterMap;
import dev.plinth.wire.messages.MgmtMessages.MdtInfo;
import dev.plinth.wire.messages.MgmtMessages.TargetInfo;
import dev.plinth.wire.messages.MgmtMessages.TargetState;
import io.prometheus.metrics.core.metrics.Counter;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps erasure-coded files whole without an operator, on the mgmt replica that leads (design
 * note 89): the cells of targets mgmt has declared lost ({@code mgmt.target-lost-millis}) are
 * decoded onto other targets as {@code plinth rebuild} does ({@link CellRebuild}), and every
 * erasure-coded file's parity is checked against its data once per
 * {@code mgmt.parity-scrub-interval-millis}, paced to {@code mgmt.parity-scrub-bytes-per-second},
 * and mended where it is wrong, as {@code plinth fsck --parity --repair} does. Cells a writer went
 * on without while their targets were away (stale cells) are rebuilt from the others once every
 * target of the file is online again and nobody has it open. Replicated chains
 * need neither (mgmt replaces a lost member and resync copies the chain; each node's scrubber
 * checks CRCs), but an erasure-coded row spans targets no single node's scrubber can compare.
 *
 * <p>It works through a native client of its own process's listener, made when first needed.
 * The start of the last whole parity pass is kept in {@code DIR/mgmt/parity-scrub-last} (per
 * replica): a restart does not start a pass over, and a fresh cluster waits one interval.
 */
final class ErasureCodeUpkeep implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(ErasureCodeUpkeep.class);
    private static final long CHECK_MILLIS = 2_000;
    /** Files a rebuild left busy (open for writing) or failed are tried again after this long. */
    private static final long REBUILD_RETRY_MILLIS = 15_000;
    private static final int RETRIES_MAX = 10_000;

    private final MgmtService mgmt;
    private final ProcessHost host;
    private final Path lastParityPassFile;
    private final long parityIntervalMillis;
    private final long parityBytesPerSecond;
    private final Counter rebuildFiles;
    private final Counter parityGroups;
    private final Counter parityPasses;
    private final Counter staleCellMends;
    private final Thread worker;
    private volatile boolean closed;
    private PlinthClient client;
    /** Lost targets every file of which was dealt with while this replica led; a target no longer lost leaves it. */
    private final Set<Integer> settled = new HashSet<>();
    /** The lost targets the last rebuild worked on, and the files it left to try again. */
    private Set<Integer> rebuilding = Set.of();
    private List<Long> retries = List.of();
    private boolean retriesOverflowed;
    private long nextRebuildNanos;
    private long nextMendNanos;
    private long lastParityPassMillis;

    ErasureCodeUpkeep(MgmtService mgmt, ProcessHost host, Path mgmtDirectory) {
        this.mgmt = mgmt;
        this.host = host;
        this.lastParityPassFile = mgmtDirectory.resolve("parity-scrub-last");
        this.parityIntervalMillis = host.config().get(Settings.MGMT_PARITY_SCRUB_INTERVAL_MILLIS);
        this.parityBytesPerSecond = Math.max(1 << 20, host.config().get(Settings.MGMT_PARITY_SCRUB_BYTES_PER_SECOND));
        this.rebuildFiles = dev.plinth.wire.Metrics.counter(host.metrics(), "plinth_cell_rebuild_files",
                "Files with chunks on lost targets, by what the mgmt leader's rebuild did (rebuilt; lost: one replica was there; busy or "
                        + "failed: tried again later).", "outcome");
        this.parityGroups = dev.plinth.wire.Metrics.counter(host.metrics(), "plinth_parity_scrub_groups",
                "Chunk groups of erasure-coded files the parity scrub checked, by result (ok, repaired, unrepaired).", "result");
        this.parityPasses = dev.plinth.wire.Metrics.counter(host.metrics(), "plinth_parity_scrub_passes",
                "Parity scrub passes over every erasure-coded file that ran to the end.");
        this.staleCellMends = dev.plinth.wire.Metrics.counter(host.metrics(), "plinth_stale_cell_mends",
                "Erasure-coded files with stale cells (written around while their targets were away) the mgmt leader tried to rebuild, "
                        + "by outcome (mended; busy: open or written meanwhile, tried again; failed).", "outcome");
        this.worker = Thread.ofPlatform().name("ec-upkeep").daemon().unstarted(this::run);
    }

    void start() {
        worker.start();
    }

    private void run() {
        while (!closed) {
            try {
                Thread.sleep(CHECK_MILLIS);
                if (!mgmt.leads()) {
                    continue;
                }
                rebuildLostTargets();
                mendStaleCells();
                if (parityIntervalMillis > 0 && System.currentTimeMillis() - lastParityPass() >= parityIntervalMillis) {
                    parityPass();
                }
            } catch (InterruptedException e) {
                return;
            } catch (RuntimeException e) {
                if (closed) {
                    return;
                }
                LOG.warn("erasure-code upkeep: {}", e.toString());
            }
        }
    }

    /**
     * Rebuilds the files of targets declared lost that are not settled yet: all of them found
     * through the MDTs' file lists when a target joins the lost ones, then, every
     * {@link #REBUILD_RETRY_MILLIS}, the ones left busy or failed (a list of at most
     * {@link #RETRIES_MAX}; past that, the next try scans again).
     */
    private void rebuildLostTargets() {
        Set<Integer> lost = mgmt.lostTargets();
        settled.retainAll(lost);
        Set<Integer> pending = new HashSet<>(lost);
        pending.removeAll(settled);
        if (pending.isEmpty()) {
            retries = List.of();
            rebuilding = Set.of();
            return;
        }
        boolean newlyLost = !pending.equals(rebuilding);
        if (!newlyLost && System.nanoTime() - nextRebuildNanos < 0) {
            return;
        }
        boolean scan = newlyLost || retriesOverflowed;
        // until this try ends as it should: one that throws (an MDT away) scans again, after the delay
        rebuilding = Set.copyOf(pending);
        nextRebuildNanos = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(REBUILD_RETRY_MILLIS);
        retriesOverflowed = true;
        Map<String, Long> counts = new TreeMap<>();
        List<Long> unsettled = new ArrayList<>();
        long[] unsettledCount = {0};
        java.util.function.Consumer<CellRebuild.FileOutcome> record = outcome -> {
            rebuildFiles.labelValues(outcome.outcome()).inc();
            counts.merge(outcome.outcome(), 1L, Long::sum);
            if (!outcome.settled() && unsettledCount[0]++ < RETRIES_MAX) {
                unsettled.add(outcome.inodeId());
            }
            if (!outcome.outcome().equals("rebuilt")) {
                LOG.warn("rebuild of inode {} off lost targets {}: {}{}", outcome.inodeId(), pending, outcome.outcome(),
                        outcome.note() == null ? "" : " (" + outcome.note() + ")");
            }
        };
        PlinthClient plinth = client();
        if (scan) {
            CellRebuild.rebuildTargets(plinth, pending, false, record);
        } else {
            plinth.refreshClusterMap();
            for (long inodeId : retries) {
                CellRebuild.FileOutcome outcome = CellRebuild.rebuildFile(plinth, inodeId, pending, false);
                if (outcome != null) {
                    record.accept(outcome);
                }
            }
        }
        retriesOverflowed = unsettledCount[0] > RETRIES_MAX;
        retries = retriesOverflowed ? List.of() : unsettled;
        if (unsettledCount[0] == 0) {
            settled.addAll(pending);
            LOG.info("targets {} declared lost: their erasure-coded cells are on other targets now; files: {}", pending,
                    counts.isEmpty() ? "none had cells there" : counts);
        } else {
            LOG.warn("targets {} declared lost: files {}; trying {} again in {} s", pending, counts, unsettledCount[0],
                    REBUILD_RETRY_MILLIS / 1000);
        }
    }

    /**
     * Every {@link #REBUILD_RETRY_MILLIS}: the files each MDT lists with stale cells, rebuilt
     * where all of the file's targets are online (a cell on a lost target is moved by the
     * rebuild instead) and the file is not open; the others wait for the next round.
     */
    private void mendStaleCells() {
        if (System.nanoTime() - nextMendNanos < 0) {
            return;
        }
        nextMendNanos = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(REBUILD_RETRY_MILLIS);
        PlinthClient plinth = client();
        ClusterMap map = plinth.refreshClusterMap();
        for (MdtInfo mdt : map.mdts()) {
            long after = 0;
            for (int page = 0; page < RETRIES_MAX / STALE_PAGE; page++) { // bounded: the rest waits for the next round
                List<Long> files = plinth.staleCellFiles(mdt.mdtId(), after, STALE_PAGE);
                for (long inodeId : files) {
                    if (closed || !mgmt.leads()) {
                        return;
                    }
                    mendStaleCells(plinth, map, inodeId);
                    after = inodeId;
                }
                if (files.size() < STALE_PAGE) {
                    break;
                }
            }
        }
    }

    private static final int STALE_PAGE = 1000;

    private void mendStaleCells(PlinthClient plinth, ClusterMap map, long inodeId) {
        Attributes file;
        try {
            file = plinth.getAttr(inodeId);
        } catch (PlinthException e) {
            return; // removed since it was listed
        }
        if (file.layout() == null || file.layout().staleCells() == 0 || touchesOfflineTarget(map, file)) {
            return;
        }
        try {
            plinth.mendStaleCells(file);
            staleCellMends.labelValues("mended").inc();
            LOG.info("inode {}: stale cells {} rebuilt from the others", inodeId, file.layout().staleCellList());
        } catch (PlinthException e) {
            boolean busy = e.code() == ErrorCode.BUSY;
            staleCellMends.labelValues(busy ? "busy" : "failed").inc();
            if (busy) {
                LOG.debug("inode {}: stale cells wait: {}", inodeId, e.getMessage());
            } else {
                LOG.warn("inode {}: stale cells {} not rebuilt: {}", inodeId, file.layout().staleCellList(), e.getMessage());
            }
        }
    }

    /** One pass over every erasure-coded file; recorded as done only if it ran to the end while this replica led. */
    private void parityPass() throws InterruptedException {
        long startedMillis = System.currentTimeMillis();
        long[] results = new long[3]; // ok, repaired, unrepaired
        PlinthClient plinth = client();
        LOG.info("parity scrub: checking every erasure-coded file at {} MiB/s", parityBytesPerSecond >> 20);
        for (MdtInfo mdt : plinth.refreshClusterMap().mdts()) {
            try {
                plinth.forEachFileChains(mdt.mdtId(), false, file -> {
                    if (closed || !mgmt.leads()) {
                        throw new PassStopped();
                    }
                    try {
                        rebuildLostTargets(); // a target lost during a long pass does not wait for its end
                    } catch (RuntimeException e) {
                        LOG.warn("erasure-code upkeep: {}", e.toString());
                    }
                    checkFile(plinth, file, results);
                });
            } catch (PassStopped stopped) {
                return;
            }
        }
        parityPasses.inc();
        writeLastParityPass(startedMillis);
        LOG.info("parity scrub done in {} s: chunk groups ok {}, repaired {}, unrepaired {}",
                (System.currentTimeMillis() - startedMillis) / 1000, results[0], results[1], results[2]);
    }

    private void checkFile(PlinthClient plinth, FileChains file, long[] results) {
        // an erasure-coded file has K+M >= 3 one-replica chains: replicated files need no attributes fetched
        if (!file.expectsChunks() || file.chainIds().size() < 3
                || file.chainIds().stream().anyMatch(chain -> chain >= MgmtService.WIDE_CHAIN_ID_BASE)) {
            return;
        }
        Attributes attributes;
        try {
            attributes = plinth.getAttr(file.inodeId());
        } catch (PlinthException e) {
            return; // removed since it was listed
        }
        if (attributes.layout() == null || !attributes.layout().erasureCoded() || touchesOfflineTarget(plinth.clusterMap(), attributes)) {
            return; // a cell on a target that is away is read around and rebuilt if the target is lost; nothing to mend there now
        }
        PlinthClient.ParityReport report;
        try {
            report = plinth.checkParity(attributes, true, this::pace);
        } catch (PlinthException e) {
            if (e.code() == ErrorCode.INTERRUPTED) {
                throw new PassStopped();
            }
            LOG.warn("parity scrub of inode {}: {}", file.inodeId(), e.getMessage());
            return;
        }
        long ok = report.groups() - report.problems().size();
        long unrepaired = report.problems().size() - report.repaired();
        results[0] += ok;
        results[1] += report.repaired();
        results[2] += unrepaired;
        parityGroups.labelValues("ok").inc(ok);
        parityGroups.labelValues("repaired").inc(report.repaired());
        parityGroups.labelValues("unrepaired").inc(unrepaired);
        report.problems().forEach(problem -> LOG.warn("parity scrub of inode {}: {}", file.inodeId(), problem));
    }

    private static boolean touchesOfflineTarget(ClusterMap map, Attributes file) {
        for (int chainId : file.layout().chainIds()) {
            ChainInfo chain = map.chain(chainId);
            if (chain == null) {
                return true;
            }
            for (int target : chain.targetIds()) {
                TargetInfo info = map.target(target);
                if (info == null || info.state() != TargetState.ONLINE) {
                    return true;
                }
            }
        }
        return false;
    }

    /** Holds the check to its bandwidth: after each chunk group, as long as its bytes take at the allowed rate. */
    private void pace(long bytes) {
        if (closed) {
            throw new PassStopped();
        }
        long pauseMillis = bytes * 1000 / parityBytesPerSecond;
        if (pauseMillis > 0) {
            try {
                Thread.sleep(pauseMillis);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new PassStopped();
            }
        }
    }

    /** When the last whole pass started (wall clock), read from its file once. */
    private long lastParityPass() {
        if (lastParityPassMillis == 0) {
            try {
                lastParityPassMillis = Long.parseLong(Files.readString(lastParityPassFile, StandardCharsets.UTF_8).trim());
            } catch (IOException | NumberFormatException e) {
                writeLastParityPass(System.currentTimeMillis()); // never ran here: the first pass comes one interval from now
            }
        }
        return lastParityPassMillis;
    }

    private void writeLastParityPass(long startedMillis) {
        lastParityPassMillis = startedMillis;
        try {
            Path next = lastParityPassFile.resolveSibling(lastParityPassFile.getFileName() + ".tmp");
            Files.writeString(next, Long.toString(startedMillis), StandardCharsets.UTF_8);
            Files.move(next, lastParityPassFile, java.nio.file.StandardCopyOption.REPLACE_EXISTING, java.nio.file.StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException e) {
            LOG.warn("cannot record the parity scrub's last pass in {}: {}", lastParityPassFile, e.getMessage());
        }
    }

    private PlinthClient client() {
        if (client == null) {
            client = PlinthClient.connect(new ClientOptions(List.of(host.rpcAddress()), host.secret(), Credentials.ROOT, host.config(),
                    "ec-upkeep").withClock(host.clock()));
        }
        return client;
    }

    @Override
    public void close() {
        closed = true;
        worker.interrupt();
        try {
            worker.join(10_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (client != null) {
            client.close();
        }
    }

    /** Unwinds a parity pass that must stop: the process closes or this replica no longer leads. */
    private static final class PassStopped extends RuntimeException {
        PassStopped() {
            super(null, null, false, false);
        }
    }
}
