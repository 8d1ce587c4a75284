package dev.plinth.meta.store;

import dev.plinth.common.FileType;
import dev.plinth.common.Layout;
import dev.plinth.wire.messages.MetaMessages.Attributes;

/**
 * An inode as stored. {@code layout}: a file's layout with chains, or a directory's default
 * layout template (null: inherit). {@code parentId} is kept for directories only (they have one
 * parent), for ".." and rename cycle checks. {@code childCount} counts a directory's entries.
 * {@code rdev}: a device node's device number (0 for every other type). {@code flags}: the
 * {@code MetaMessages.FLAG_*} bits.
 */
public record InodeRecord(long inodeId, FileType type, int mode, int uid, int gid, int linkCount, long sizeBytes,
                          long atimeNanos, long mtimeNanos, long ctimeNanos, long generation, long parentId,
                          Layout layout, String symlinkTarget, long childCount, long rdev, int flags) {
    public static final int PERMISSION_BITS = 07777;

    public boolean isDirectory() {
        return type == FileType.DIRECTORY;
    }

    /** An inode of a type without a device number. */
    public InodeRecord(long inodeId, FileType type, int mode, int uid, int gid, int linkCount, long sizeBytes, long atimeNanos,
                       long mtimeNanos, long ctimeNanos, long generation, long parentId, Layout layout, String symlinkTarget,
                       long childCount) {
        this(inodeId, type, mode, uid, gid, linkCount, sizeBytes, atimeNanos, mtimeNanos, ctimeNanos, generation, parentId, layout,
                symlinkTarget, childCount, 0, 0);
    }

    /** An inode of a type with a device number, without flags. */
    public InodeRecord(long inodeId, FileType type, int mode, int uid, int gid, int linkCount, long sizeBytes, long atimeNanos,
                       long mtimeNanos, long ctimeNanos, long generation, long parentId, Layout layout, String symlinkTarget,
                       long childCount, long rdev) {
        this(inodeId, type, mode, uid, gid, linkCount, sizeBytes, atimeNanos, mtimeNanos, ctimeNanos, generation, parentId, layout,
                symlinkTarget, childCount, rdev, 0);
    }

    public boolean encrypted() {
        return (flags & dev.plinth.wire.messages.MetaMessages.FLAG_ENCRYPTED) != 0;
    }

    public InodeRecord withFlags(int newFlags) {
        return new InodeRecord(inodeId, type, mode, uid, gid, linkCount, sizeBytes, atimeNanos, mtimeNanos, ctimeNanos, generation,
                parentId, layout, symlinkTarget, childCount, rdev, newFlags);
    }

    public Attributes toAttributes() {
        long size = type == FileType.SYMLINK ? symlinkTarget.getBytes(java.nio.charset.StandardCharsets.UTF_8).length : sizeBytes;
        return new Attributes(inodeId, type, type.modeBits() | (mode & PERMISSION_BITS), uid, gid, linkCount, size,
                atimeNanos, mtimeNanos, ctimeNanos, generation, layout, rdev, flags);
    }

    public InodeRecord withSize(long size, long nowNanos) {
        return new InodeRecord(inodeId, type, mode, uid, gid, linkCount, size, atimeNanos, nowNanos, nowNanos, generation,
                parentId, layout, symlinkTarget, childCount, rdev, flags);
    }

    public InodeRecord withTimes(long atime, long mtime, long ctime) {
        return new InodeRecord(inodeId, type, mode, uid, gid, linkCount, sizeBytes, atime, mtime, ctime, generation,
                parentId, layout, symlinkTarget, childCount, rdev, flags);
    }

    public InodeRecord withOwner(int newMode, int newUid, int newGid, long nowNanos) {
        return new InodeRecord(inodeId, type, newMode & PERMISSION_BITS, newUid, newGid, linkCount, sizeBytes, atimeNanos,
                mtimeNanos, nowNanos, generation, parentId, layout, symlinkTarget, childCount, rdev, flags);
    }

    public InodeRecord withLinkCount(int links, long nowNanos) {
        return new InodeRecord(inodeId, type, mode, uid, gid, links, sizeBytes, atimeNanos, mtimeNanos, nowNanos, generation,
                parentId, layout, symlinkTarget, childCount, rdev, flags);
    }

    public InodeRecord withParent(long newParentId, long nowNanos) {
        return new InodeRecord(inodeId, type, mode, uid, gid, linkCount, sizeBytes, atimeNanos, mtimeNanos, nowNanos, generation,
                newParentId, layout, symlinkTarget, childCount, rdev, flags);
    }

    public InodeRecord withLayout(Layout newLayout, long nowNanos) {
        return new InodeRecord(inodeId, type, mode, uid, gid, linkCount, sizeBytes, atimeNanos, mtimeNanos, nowNanos, generation,
                parentId, newLayout, symlinkTarget, childCount, rdev, flags);
    }

    /** A directory after an entry was added (+1) or removed (-1): counts and times change. */
    public InodeRecord withChildDelta(int childDelta, int linkDelta, long nowNanos) {
        return new InodeRecord(inodeId, type, mode, uid, gid, linkCount + linkDelta, sizeBytes, atimeNanos, nowNanos, nowNanos,
                generation, parentId, layout, symlinkTarget, childCount + childDelta, rdev, flags);
    }
}
