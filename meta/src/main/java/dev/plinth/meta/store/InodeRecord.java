package dev.plinth.meta.store;

import dev.plinth.common.FileType;
import dev.plinth.common.Layout;
import dev.plinth.wire.messages.MetaMessages.Attributes;

/**
 * An inode as stored. {@code layout}: a file's layout with chains, or a directory's default
 * layout template (null: inherit). {@code parentId} is kept for directories only (they have one
 * parent), for ".." and rename cycle checks. {@code childCount} counts a directory's entries.
 */
public record InodeRecord(long inodeId, FileType type, int mode, int uid, int gid, int linkCount, long sizeBytes,
                          long atimeNanos, long mtimeNanos, long ctimeNanos, long generation, long parentId,
                          Layout layout, String symlinkTarget, long childCount) {
    public static final int PERMISSION_BITS = 07777;

    public boolean isDirectory() {
        return type == FileType.DIRECTORY;
    }

    public Attributes toAttributes() {
        int typeBits = switch (type) {
            case FILE -> 0100000;
            case DIRECTORY -> 0040000;
            case SYMLINK -> 0120000;
        };
        long size = type == FileType.SYMLINK ? symlinkTarget.getBytes(java.nio.charset.StandardCharsets.UTF_8).length : sizeBytes;
        return new Attributes(inodeId, type, typeBits | (mode & PERMISSION_BITS), uid, gid, linkCount, size,
                atimeNanos, mtimeNanos, ctimeNanos, generation, layout);
    }

    public InodeRecord withSize(long size, long nowNanos) {
        return new InodeRecord(inodeId, type, mode, uid, gid, linkCount, size, atimeNanos, nowNanos, nowNanos, generation,
                parentId, layout, symlinkTarget, childCount);
    }

    public InodeRecord withTimes(long atime, long mtime, long ctime) {
        return new InodeRecord(inodeId, type, mode, uid, gid, linkCount, sizeBytes, atime, mtime, ctime, generation,
                parentId, layout, symlinkTarget, childCount);
    }

    public InodeRecord withOwner(int newMode, int newUid, int newGid, long nowNanos) {
        return new InodeRecord(inodeId, type, newMode & PERMISSION_BITS, newUid, newGid, linkCount, sizeBytes, atimeNanos,
                mtimeNanos, nowNanos, generation, parentId, layout, symlinkTarget, childCount);
    }

    public InodeRecord withLinkCount(int links, long nowNanos) {
        return new InodeRecord(inodeId, type, mode, uid, gid, links, sizeBytes, atimeNanos, mtimeNanos, nowNanos, generation,
                parentId, layout, symlinkTarget, childCount);
    }

    public InodeRecord withParent(long newParentId, long nowNanos) {
        return new InodeRecord(inodeId, type, mode, uid, gid, linkCount, sizeBytes, atimeNanos, mtimeNanos, nowNanos, generation,
                newParentId, layout, symlinkTarget, childCount);
    }

    public InodeRecord withLayout(Layout newLayout, long nowNanos) {
        return new InodeRecord(inodeId, type, mode, uid, gid, linkCount, sizeBytes, atimeNanos, mtimeNanos, nowNanos, generation,
                parentId, newLayout, symlinkTarget, childCount);
    }

    /** A directory after an entry was added (+1) or removed (-1): counts and times change. */
    public InodeRecord withChildDelta(int childDelta, int linkDelta, long nowNanos) {
        return new InodeRecord(inodeId, type, mode, uid, gid, linkCount + linkDelta, sizeBytes, atimeNanos, nowNanos, nowNanos,
                generation, parentId, layout, symlinkTarget, childCount + childDelta);
    }
}
