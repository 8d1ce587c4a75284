package dev.plinth.meta.ops;

import dev.plinth.common.ErrorCode;
import dev.plinth.common.FileType;
import dev.plinth.common.Layout;
import dev.plinth.common.Names;
import dev.plinth.common.PlinthException;
import dev.plinth.meta.Namespace;
import dev.plinth.meta.store.DentryRecord;
import dev.plinth.meta.store.InodeRecord;

/** What create, mkdir and symlink share: checks on the parent and the new inode's owner. */
final class NewEntry {
    private NewEntry() {}

    /** The parent, checked: a directory the caller may write and search, without an entry {@code name}. */
    static InodeRecord writableParent(Namespace namespace, long parentId, String name) {
        Names.validateName(name);
        return writableDirectory(namespace, parentId);
    }

    /** A directory the caller may add entries to (write and search permission), not removed. */
    static InodeRecord writableDirectory(Namespace namespace, long parentId) {
        InodeRecord parent = namespace.directory(parentId);
        namespace.check(parent, Namespace.WRITE | Namespace.EXECUTE);
        if (parent.linkCount() == 0) {
            throw new PlinthException(ErrorCode.NOT_FOUND, "directory was removed");
        }
        return parent;
    }

    /** The group of a new entry of {@code parent}: the parent's where it is set-group-ID (the BSD rule), else the caller's. */
    static int groupOf(Namespace namespace, InodeRecord parent) {
        return (parent.mode() & 02000) != 0 ? parent.gid() : namespace.caller().gid();
    }

    /**
     * The permission bits of a new entry of {@code type} asked for with {@code mode}: a directory
     * below a set-group-ID one is set-group-ID too, and a symlink's are 0777.
     */
    static int permissionsOf(InodeRecord parent, FileType type, int mode) {
        if (type == FileType.SYMLINK) {
            return 0777;
        }
        int permissions = mode & InodeRecord.PERMISSION_BITS;
        return type == FileType.DIRECTORY && (parent.mode() & 02000) != 0 ? permissions | 02000 : permissions;
    }

    /** A new inode named {@code name} in {@code parent}; with name null an unnamed file (see Create). */
    static InodeRecord create(Namespace namespace, InodeRecord parent, String name, FileType type, int mode, Layout layout,
                              String symlinkTarget) {
        return create(namespace, parent, name, type, mode, layout, symlinkTarget, 0);
    }

    /** As above, with a device node's number. */
    static InodeRecord create(Namespace namespace, InodeRecord parent, String name, FileType type, int mode, Layout layout,
                              String symlinkTarget, long rdev) {
        long now = namespace.now();
        int gid = groupOf(namespace, parent);
        int permissions = permissionsOf(parent, type, mode);
        long inodeId = namespace.allocateInodeId();
        int links = name == null ? 0 : type == FileType.DIRECTORY ? 2 : 1;
        InodeRecord inode = new InodeRecord(inodeId, type, permissions, namespace.caller().uid(), gid,
                links, 0, now, now, now, 1, type == FileType.DIRECTORY ? parent.inodeId() : 0,
                layout, symlinkTarget, 0, rdev);
        namespace.putInode(inode);
        if (name == null) {
            namespace.addOrphan(inode); // unnamed (O_TMPFILE): lives while it is open
            return inode;
        }
        namespace.putDentry(parent.inodeId(), name, new DentryRecord(inodeId, type));
        namespace.putInode(parent.withChildDelta(1, type == FileType.DIRECTORY ? 1 : 0, now));
        return inode;
    }
}
