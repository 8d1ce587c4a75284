package dev.plinth.cli;

import dev.plinth.client.PlinthClient;
import dev.plinth.common.InodeId;
import dev.plinth.common.Json;
import dev.plinth.wire.messages.FsckMessages;
import dev.plinth.wire.messages.FsckMessages.Finding;
import dev.plinth.wire.messages.MgmtMessages.ChainInfo;
import dev.plinth.wire.messages.MgmtMessages.ClusterMap;
import dev.plinth.wire.messages.MgmtMessages.MdtInfo;
import dev.plinth.wire.messages.StorageMessages.ChunkEntry;
import dev.plinth.wire.messages.StorageMessages.ChunkId;
import dev.plinth.wire.messages.StorageMessages.ChunkList;
import java.util.ArrayList;
import java.util.HashMap;
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

@Command(name = "fsck", mixinStandardHelpOptions = true,
        description = {"Check the namespace against itself and against the storage targets, while the cluster serves. Root only.",
                "Each MDT checks its own namespace on one snapshot: link counts, directories' links, child counts and parents, inodes",
                "no entry names (orphans; files unlinked while open are not), entries naming no inode. Then every chain's chunks",
                "(listed on one serving member) are matched with the files whose layouts name the chain: chunks of no file (nor of a",
                "removed file whose chunks are being freed) are orphan chunks; a closed, unreleased file with bytes beyond its",
                "Data-on-MDT part and no chunk on any of its chains has missing chunks (a sparse file that was never written past",
                "its first bytes looks the same). Released files keep no chunks by design and are not reported.",
                "Exit status: 0 nothing found, 1 findings (also when --repair fixed them), 2 the check could not run.",
                "--repair removes orphan chunks (the chunks are listed before the namespace is read, so a file made meanwhile is",
                "never taken for missing); namespace findings are reported for an operator to judge.",
                "--parity reads erasure-coded files whole and checks each stripe's parity against its data (with --repair: mends it)."})
final class FsckCommand implements Callable<Integer> {
    private static final int PAGE = 1000;

    @Mixin
    ClientMixin client;

    @Option(names = "--repair", description = "Remove orphan chunks from every member of their chains.")
    boolean repair;

    @Option(names = "--json", description = "Print the report as JSON.")
    boolean json;

    @Option(names = "--parity", description = {"Also read every erasure-coded file whole and check each stripe: all cells readable, of one "
            + "write, and parity matching data. With --repair, mend what is found (a stripe is looked at again a second later first: "
            + "a write in progress looks the same for a moment)."})
    boolean parity;

    @Override
    public Integer call() {
        List<Map<String, Object>> findings = new ArrayList<>();
        Map<String, Long> counts = new TreeMap<>();
        Map<String, Long> repaired = new TreeMap<>();
        List<Map<String, Object>> mdtSummaries = new ArrayList<>();
        long chunkFiles = 0;
        try (PlinthClient plinth = client.connect()) {
            ClusterMap map = plinth.refreshClusterMap();
            // chunks first: a file created after its chunks were listed is in the namespace read next, so never an orphan
            Map<Integer, Set<Long>> onChain = new HashMap<>();
            for (ChainInfo chain : map.chains()) {
                if (chain.targetIds().isEmpty()) {
                    add(findings, counts, "chain-unreadable", 0, "chain " + chain.chainId() + " has no serving member: its chunks were not checked", null);
                    continue;
                }
                Set<Long> inodes = inodesWithChunks(plinth, chain);
                onChain.put(chain.chainId(), inodes);
                chunkFiles += inodes.size();
            }
            Map<Integer, Set<Long>> referenced = new HashMap<>();
            List<FsckMessages.FsckReport> reports = new ArrayList<>();
            for (MdtInfo mdt : map.mdts()) {
                FsckMessages.FsckReport report = plinth.checkNamespace(mdt.mdtId());
                reports.add(report);
                Map<String, Object> summary = new LinkedHashMap<>();
                summary.put("mdt", mdt.mdtId());
                summary.put("inodes", report.inodes());
                summary.put("entries", report.entries());
                summary.put("findings", report.findingsTotal());
                mdtSummaries.add(summary);
                for (Finding finding : report.findings()) {
                    add(findings, counts, finding.kind(), finding.inodeId(), finding.detail(), null);
                }
                long unlisted = report.findingsTotal() - report.findings().size();
                if (unlisted > 0) {
                    counts.merge("more-namespace-findings", unlisted, Long::sum);
                }
                for (boolean removed : new boolean[] {false, true}) {
                    plinth.forEachFileChains(mdt.mdtId(), removed, file -> {
                        if (parity && !removed && file.expectsChunks()) {
                            checkParity(plinth, file.inodeId(), findings, counts, repaired);
                        }
                        boolean anyChunk = false;
                        for (int chainId : file.chainIds()) {
                            referenced.computeIfAbsent(chainId, c -> new HashSet<>()).add(file.chunksOf());
                            anyChunk |= onChain.getOrDefault(chainId, Set.of()).contains(file.chunksOf());
                        }
                        boolean checkable = file.chainIds().stream().allMatch(onChain::containsKey);
                        if (file.expectsChunks() && !anyChunk && checkable) {
                            add(findings, counts, "missing-chunks", file.inodeId(), "no chunk on its chains " + file.chainIds(), null);
                        }
                    });
                }
            }
            for (Finding finding : FsckMessages.crossMdtFindings(reports)) {
                add(findings, counts, finding.kind(), finding.inodeId(), finding.detail(), null);
            }
            for (ChainInfo chain : map.chains()) {
                Set<Long> orphans = new HashSet<>(onChain.getOrDefault(chain.chainId(), Set.of()));
                orphans.removeAll(referenced.getOrDefault(chain.chainId(), Set.of()));
                for (long inodeId : orphans) {
                    String repairedNote = null;
                    if (repair) {
                        for (int targetId : chain.writeTargets()) {
                            plinth.removeFileChunks(targetId, inodeId);
                        }
                        repaired.merge("orphan-chunks", 1L, Long::sum);
                        repairedNote = "removed";
                    }
                    add(findings, counts, "orphan-chunks", inodeId, "chunks on chain " + chain.chainId() + " of no file", repairedNote);
                }
            }
        }
        long total = counts.values().stream().mapToLong(Long::longValue).sum();
        if (json) {
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("mdts", mdtSummaries);
            out.put("files_with_chunks", chunkFiles);
            out.put("counts", counts);
            out.put("repaired", repaired);
            out.put("findings", findings);
            System.out.println(Json.write(out));
        } else {
            for (Map<String, Object> summary : mdtSummaries) {
                System.out.printf("MDT %s: %s inodes, %s entries%n", summary.get("mdt"), summary.get("inodes"), summary.get("entries"));
            }
            System.out.printf("chains: %d files with chunks%n", chunkFiles);
            for (Map<String, Object> finding : findings) {
                System.out.printf("%-17s %-22s %s%s%n", finding.get("kind"), finding.get("inode"), finding.get("detail"),
                        finding.containsKey("repair") ? " (" + finding.get("repair") + ")" : "");
            }
            if (total == 0) {
                System.out.println("no findings");
            } else {
                counts.forEach((kind, count) -> System.out.printf("%s: %d%n", kind, count));
                repaired.forEach((kind, count) -> System.out.printf("repaired %s: %d%n", kind, count));
            }
        }
        return total == 0 ? 0 : 1;
    }

    /** Checks one file's parity if it is erasure-coded, adding what is wrong to the findings. */
    private void checkParity(PlinthClient plinth, long inodeId, List<Map<String, Object>> findings, Map<String, Long> counts,
                             Map<String, Long> repaired) {
        dev.plinth.wire.messages.MetaMessages.Attributes file;
        try {
            file = plinth.getAttr(inodeId);
        } catch (dev.plinth.common.PlinthException e) {
            return; // removed since it was listed
        }
        if (file.layout() == null || !file.layout().erasureCoded()) {
            return;
        }
        PlinthClient.ParityReport report = plinth.checkParity(file, repair);
        for (String problem : report.problems()) {
            boolean fixed = problem.endsWith("(repaired)");
            add(findings, counts, "stripe-damaged", inodeId, problem, fixed ? "repaired" : null);
            if (fixed) {
                repaired.merge("stripe-damaged", 1L, Long::sum);
            }
        }
    }

    /** The files with chunks of {@code chain}, listed on its first serving member, skipping from one file to the next. */
    private static Set<Long> inodesWithChunks(PlinthClient plinth, ChainInfo chain) {
        Set<Long> inodes = new HashSet<>();
        int targetId = chain.targetIds().getFirst();
        ChunkId after = null;
        while (true) {
            ChunkList page = plinth.listChunks(chain, targetId, after, PAGE);
            for (ChunkEntry entry : page.chunks()) {
                inodes.add(entry.chunk().inodeId());
            }
            if (!page.truncated() || page.chunks().isEmpty()) {
                return inodes;
            }
            after = new ChunkId(page.chunks().getLast().chunk().inodeId(), Integer.MAX_VALUE, Long.MAX_VALUE); // on to the next file
        }
    }

    private static void add(List<Map<String, Object>> findings, Map<String, Long> counts, String kind, long inodeId, String detail, String repair) {
        counts.merge(kind, 1L, Long::sum);
        if (findings.size() < 10_000) {
            Map<String, Object> finding = new LinkedHashMap<>();
            finding.put("kind", kind);
            finding.put("inode", inodeId == 0 ? "" : InodeId.format(inodeId));
            finding.put("detail", detail);
            if (repair != null) {
                finding.put("repair", repair);
            }
            findings.add(finding);
        }
    }
}
