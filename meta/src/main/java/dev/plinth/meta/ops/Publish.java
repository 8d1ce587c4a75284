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
 * old entry or the new one, and the writer pays one log entry instead of four. Built from the same
 * operations as their own requests.
 */
public final class Publish {
    private Publish() {}

    /** A new file with all its bytes on the MDT, published at once: {@link Create} of an unnamed file, then {@link #apply}. */
    public static AttributesReply putWhole(Namespace namespace, MetaMessages.PutWhole request) {
        MetaMessages.CreateReply created = Create.apply(namespace, new MetaMessages.Create(request.header(), request.parentId(), null,
                request.mode(), false, request.layout(), true, true));
        return apply(namespace, new MetaMessages.Publish(request.header(), created.attributes().inodeId(), request.bytes().length,
                request.mtimeNanos(), request.xattrs(), request.parentId(), null, request.name(), request.noReplace(),
                new MetaMessages.InlineWrite(0, request.bytes())));
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
        }
        OpenClose.close(namespace, new MetaMessages.Close(request.header(), request.inodeId(), request.writtenEndBytes(), true, true,
                request.inline()));
        inode = namespace.inode(request.inodeId());
        namespace.putInode(inode.withTimes(inode.atimeNanos(), request.mtimeNanos(), inode.ctimeNanos()));
        for (MetaMessages.Xattr xattr : request.xattrs()) {
            Xattrs.set(namespace, new MetaMessages.SetXattr(request.header(), request.inodeId(), xattr.name(), xattr.value(), 0));
        }
        if (request.sourceName() != null) {
            Rename.apply(namespace, new MetaMessages.Rename(request.header(), request.parentId(), request.sourceName(), request.parentId(),
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
        DentryRecord existing = namespace.dentry(parent.inodeId(), request.targetName());
        long now = namespace.now();
        if (existing != null) {
            if (request.noReplace()) {
                throw new PlinthException(ErrorCode.ALREADY_EXISTS, "'" + request.targetName() + "'");
            }
            InodeRecord target = namespace.inode(existing.inodeId());
            if (target.isDirectory()) {
                throw new PlinthException(ErrorCode.IS_A_DIRECTORY, "'" + request.targetName() + "'");
            }
            namespace.checkSticky(parent, target);
            Rename.removeReplacedFile(namespace, parent, request.targetName(), target, now);
        }
        namespace.putDentry(parent.inodeId(), request.targetName(), new DentryRecord(inode.inodeId(), FileType.FILE));
        namespace.putInode(namespace.inode(parent.inodeId()).withChildDelta(1, 0, now));
        namespace.putInode(inode.withLinkCount(1, now));
        namespace.removeOrphan(inode);
    }
}
