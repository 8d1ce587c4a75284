package dev.plinth.wire.messages;

import dev.plinth.wire.messages.MetaMessages.OpHeader;
import java.util.List;

/**
 * `plinth fsck`: an MDT checks its namespace against itself on one snapshot, and lists its files'
 * chains so that the tool can compare them with what the storage targets hold. Root only.
 */
public final class FsckMessages {
    private FsckMessages() {}

    /** Most findings one report carries; {@link FsckReport#findingsTotal} counts them all. */
    public static final int FINDINGS_MAX = 1000;

    public record CheckNamespace(OpHeader header) {}

    /**
     * What the check found: {@code kind} is one of link-count, orphan-inode, dangling-entry,
     * type-mismatch, child-count, directory-links, directory-parent.
     */
    public record Finding(String kind, long inodeId, String detail) {}

    /**
     * {@code remoteNames}: inodes of other MDTs that entries here name, with how many; {@code
     * awaited}: inodes here that need names on other MDTs to be right (a file with fewer entries
     * here than links, a directory whose parent is on another MDT), each with the finding it is
     * unless those names are there. {@link #crossMdtFindings} weighs one against the other.
     */
    public record FsckReport(int mdtId, long inodes, long entries, long findingsTotal, List<Finding> findings, List<NameCount> remoteNames,
                             List<Awaited> awaited) {}

    public record NameCount(long inodeId, long names) {}

    public record Awaited(long inodeId, long remoteNames, Finding unlessNamed) {}

    /** Cross-MDT names or awaited inodes one report carries at most; past it the check lists no more and says so. */
    public static final int CROSS_MDT_MAX = 100_000;

    /**
     * The findings of several MDTs' reports taken together: an inode that awaits names from
     * other MDTs has them (as many as it lacks here) or is its finding; an inode that other MDTs
     * name without its MDT awaiting it is named too often or does not exist (a dangling entry).
     */
    /** Every finding of {@code reports} (the MDTs of one namespace): each one's own (those it listed), then those across them. */
    public static List<Finding> findings(List<FsckReport> reports) {
        List<Finding> all = new java.util.ArrayList<>();
        reports.forEach(report -> all.addAll(report.findings()));
        all.addAll(crossMdtFindings(reports));
        return all;
    }

    public static List<Finding> crossMdtFindings(List<FsckReport> reports) {
        java.util.Map<Long, Long> named = new java.util.HashMap<>();
        for (FsckReport report : reports) {
            for (NameCount count : report.remoteNames()) {
                named.merge(count.inodeId(), count.names(), Long::sum);
            }
        }
        List<Finding> findings = new java.util.ArrayList<>();
        for (FsckReport report : reports) {
            for (Awaited awaited : report.awaited()) {
                long got = named.getOrDefault(awaited.inodeId(), 0L);
                named.remove(awaited.inodeId());
                if (got != awaited.remoteNames()) {
                    Finding finding = awaited.unlessNamed();
                    // with one MDT there is nowhere else a name could be: the finding as the MDT put it
                    findings.add(reports.size() < 2 ? finding : new Finding(finding.kind(), finding.inodeId(), finding.detail()
                            + "; named by " + got + " entries on other MDTs, " + awaited.remoteNames() + " expected"));
                }
            }
        }
        for (java.util.Map.Entry<Long, Long> left : named.entrySet()) {
            findings.add(new Finding("dangling-entry", left.getKey(), left.getValue()
                    + " entries on other MDTs name it, and its MDT does not hold it or expects no names there"));
        }
        return findings;
    }

    /**
     * The MDT's files with data on chains, in inode order after {@code afterInodeId}, at most
     * {@code limit}; with {@code removed}, the removed files whose chunks are being freed instead.
     */
    public record ListFileChains(OpHeader header, long afterInodeId, int limit, boolean removed) {}

    /**
     * One file as the storage check needs it: the chains its layout names; {@code expectsChunks}:
     * it has bytes beyond its Data-on-MDT part and is neither released nor open (written now);
     * {@code removed}: its last name is gone and its chunks are being freed; {@code chunkOwnerId}:
     * the inode id that names its chunks (a migrated file's copy's; 0: its own).
     */
    public record FileChains(long inodeId, List<Integer> chainIds, boolean expectsChunks, boolean removed, long chunkOwnerId) {
        public FileChains(long inodeId, List<Integer> chainIds, boolean expectsChunks, boolean removed) {
            this(inodeId, chainIds, expectsChunks, removed, 0);
        }

        /** The inode id its chunks are listed under. */
        public long chunksOf() {
            return chunkOwnerId != 0 ? chunkOwnerId : inodeId;
        }
    }

    /** {@code lastInodeId}: where the next page starts (files that need no check are left out of {@code files}). */
    public record FileChainList(List<FileChains> files, boolean truncated, long lastInodeId) {}
}
