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

    public record FsckReport(int mdtId, long inodes, long entries, long findingsTotal, List<Finding> findings) {}

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
