package dev.plinth.meta.ops;

import dev.plinth.common.ErrorCode;
import dev.plinth.common.FileType;
import dev.plinth.common.PlinthException;
import dev.plinth.meta.Namespace;
import dev.plinth.meta.store.DentryRecord;
import dev.plinth.meta.store.InodeRecord;
import dev.plinth.wire.messages.MetaMessages;
import dev.plinth.wire.messages.MetaMessages.CreateReply;

/**
 * Creates a regular file, or returns the existing one unless exclusive (O_CREAT without
 * O_EXCL). The leader has already placed the file: the request's layout names its chains.
 * With {@code openForWrite} the file is also opened for writing by the caller's session, in the
 * same change (open(O_CREAT) is one round trip): a new file is writable by its creator whatever
 * its mode, an existing one needs write permission.
 */
public final class Create {
    private Create() {}

    public static CreateReply apply(Namespace namespace, MetaMessages.Create request) {
        if (request.unnamed()) {
            return unnamed(namespace, request);
        }
        InodeRecord parent = NewEntry.writableParent(namespace, request.parentId(), request.name());
        DentryRecord existing = namespace.dentry(parent.inodeId(), request.name());
        if (existing != null) {
            if (request.exclusive()) {
                throw new PlinthException(ErrorCode.ALREADY_EXISTS, "'" + request.name() + "'");
            }
            if (existing.type() == FileType.DIRECTORY) { // from the entry: the directory may be on another MDT
                throw new PlinthException(ErrorCode.IS_A_DIRECTORY, "'" + request.name() + "'");
            }
            InodeRecord inode = namespace.inode(existing.inodeId());
            if (inode.isDirectory()) {
                throw new PlinthException(ErrorCode.IS_A_DIRECTORY, "'" + request.name() + "'");
            }
            if (request.openForWrite()) {
                namespace.check(inode, Namespace.WRITE);
                OpenClose.refuseIfEncrypted(inode);
                inode = Hsm.beforeDataChange(namespace, inode);
                OpenClose.register(namespace, inode.inodeId());
            }
            return new CreateReply(inode.toAttributes(), false);
        }
        if (request.layout() == null || request.layout().chainIds().isEmpty()) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "a new file needs a placed layout");
        }
        InodeRecord inode = NewEntry.create(namespace, parent, request.name(), FileType.FILE, request.mode(),
                request.layout().validate(), null);
        if (request.openForWrite()) {
            OpenClose.register(namespace, inode.inodeId());
        }
        return new CreateReply(inode.toAttributes(), true);
    }

    /** O_TMPFILE: a file with no name, open for writing by the caller, needing write permission on the directory. */
    private static CreateReply unnamed(Namespace namespace, MetaMessages.Create request) {
        if (request.name() != null || !request.openForWrite()) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "an unnamed file has no name and is opened for writing");
        }
        InodeRecord parent = NewEntry.writableDirectory(namespace, request.parentId());
        if (request.layout() == null || request.layout().chainIds().isEmpty()) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "a new file needs a placed layout");
        }
        InodeRecord inode = NewEntry.create(namespace, parent, null, FileType.FILE, request.mode(), request.layout().validate(), null);
        OpenClose.register(namespace, inode.inodeId());
        return new CreateReply(inode.toAttributes(), true);
    }
}
