package dev.plinth.meta.ops;

import dev.plinth.common.ErrorCode;
import dev.plinth.common.FileType;
import dev.plinth.common.PlinthException;
import dev.plinth.meta.Namespace;
import dev.plinth.meta.store.DentryRecord;
import dev.plinth.meta.store.InodeRecord;
import dev.plinth.wire.messages.MetaMessages;
import dev.plinth.wire.messages.MetaMessages.AttributesReply;

/**
 * Puts a file written under a temporary name, or without a name (O_TMPFILE), in place: close,
 * mtime, xattrs and rename (or link) in one change, so a crash or a failed step leaves either the
 * old entry or the new one, and the writer pays one log entry instead of four. {@link #apply} is
 * built from the same operations as their own requests.
 */
public final class Publish {
    private Publish() {}

    /**
     * A new file with all its bytes on the MDT, named at once: what {@link Create} of an unnamed
     * file and {@link #apply} would leave, written directly. A small S3 PUT is this one change, and
     * composing it from those steps wrote the inode five times and an open record and an orphan
     * record only to delete them, each a read and a write in the batch.
     */
    public static AttributesReply putWhole(Namespace namespace, MetaMessages.PutWhole request) {
        if (request.layout() == null || request.layout().chainIds().isEmpty()) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "a new file needs a placed layout");
        }
        InodeRecord parent = NewEntry.writableParent(namespace, request.parentId(), request.name());
        removeReplaced(namespace, parent, request.name(), request.noReplace(), request.onlyReplacing());
        InodeRecord inode = NewEntry.create(namespace, namespace.inode(parent.inodeId()), request.name(), FileType.FILE,
                request.mode(), request.layout().validate(), null);
        DataOnMdt.write(namespace, inode, new MetaMessages.InlineWrite(0, request.bytes()));
        for (MetaMessages.Xattr xattr : request.xattrs()) {
            inode = Xattrs.setOnNewFile(namespace, inode, xattr.name(), xattr.value());
        }
        long now = namespace.now();
        inode = inode.withSize(request.bytes().length, now).withTimes(inode.atimeNanos(), request.mtimeNanos(), now);
        namespace.putInode(inode);
        return new AttributesReply(inode.toAttributes());
    }

    public static AttributesReply apply(Namespace namespace, MetaMessages.Publish request) {
        InodeRecord inode = namespace.inode(request.inodeId());
        if (inode.type() != FileType.FILE) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "only a regular file can be published");
        }
        if (!namespace.caller().isRoot() && namespace.caller().uid() != inode.uid()) {
            throw new PlinthException(ErrorCode.OPERATION_NOT_PERMITTED, "only the owner publishes a file");
        }
        if (request.sourceName() == null) {
            linkUnnamed(namespace, request, inode); // first: the close below would remove it while it has no name
        } else if (request.onlyReplacing() != 0) {
            requireHolding(namespace, namespace.directory(request.parentId()), request.targetName(), request.onlyReplacing());
        }
        OpenClose.close(namespace, new MetaMessages.Close(request.header(), request.inodeId(), request.writtenEndBytes(), true, true,
                request.inline()));
        inode = namespace.inode(request.inodeId());
        namespace.putInode(inode.withTimes(inode.atimeNanos(), request.mtimeNanos(), inode.ctimeNanos()));
        for (MetaMessages.Xattr xattr : request.xattrs()) {
            Xattrs.set(namespace, new MetaMessages.SetXattr(request.header(), request.inodeId(), xattr.name(), xattr.value(), 0));
        }
        if (request.sourceName() != null) {
            Rename.apply(namespace, new MetaMessages.Rename(request.header(), request.sourceDirectoryId(), request.sourceName(), request.parentId(),
                    request.targetName(), request.noReplace()));
        }
        return new AttributesReply(namespace.inode(request.inodeId()).toAttributes());
    }

    /** Gives an unnamed file the name {@code targetName}, replacing a file there as rename does. */
    private static void linkUnnamed(Namespace namespace, MetaMessages.Publish request, InodeRecord inode) {
        if (inode.linkCount() != 0) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "the file has a name already");
        }
        InodeRecord parent = NewEntry.writableParent(namespace, request.parentId(), request.targetName());
        removeReplaced(namespace, parent, request.targetName(), request.noReplace(), request.onlyReplacing());
        long now = namespace.now();
        namespace.putDentry(parent.inodeId(), request.targetName(), new DentryRecord(inode.inodeId(), FileType.FILE));
        namespace.putInode(namespace.inode(parent.inodeId()).withChildDelta(1, 0, now));
        namespace.putInode(inode.withLinkCount(1, now));
        namespace.removeOrphan(inode);
    }

    /**
     * Removes the file named {@code name} in {@code parent}, if any, which a file about to take the
     * name replaces as rename does; with {@code onlyReplacing} not 0, only if it is that inode.
     */
    private static void removeReplaced(Namespace namespace, InodeRecord parent, String name, boolean noReplace, long onlyReplacing) {
        if (onlyReplacing != 0) {
            requireHolding(namespace, parent, name, onlyReplacing);
        }
        DentryRecord existing = namespace.dentry(parent.inodeId(), name);
        if (existing == null) {
            return;
        }
        if (noReplace) {
            throw new PlinthException(ErrorCode.ALREADY_EXISTS, "'" + name + "'");
        }
        if (existing.type() == dev.plinth.common.FileType.DIRECTORY) { // from the entry: the directory may be on another MDT
            throw new PlinthException(ErrorCode.IS_A_DIRECTORY, "'" + name + "'");
        }
        namespace.requireUnmarked(parent.inodeId(), name);
        InodeRecord target = namespace.inode(existing.inodeId());
        if (target.isDirectory()) {
            throw new PlinthException(ErrorCode.IS_A_DIRECTORY, "'" + name + "'");
        }
        namespace.checkSticky(parent, target);
        Rename.removeReplacedFile(namespace, parent, name, target, namespace.now());
    }

    /** Fails with CHANGED unless {@code name} in {@code parent} names inode {@code inodeId}: a write conditional on what it replaces. */
    private static void requireHolding(Namespace namespace, InodeRecord parent, String name, long inodeId) {
        DentryRecord existing = namespace.dentry(parent.inodeId(), name);
        if (existing == null || existing.inodeId() != inodeId) {
            throw new PlinthException(ErrorCode.CHANGED, "'" + name + "' no longer names the file the condition was checked against");
        }
    }
}
