package dev.plinth.meta.ops;

import dev.plinth.common.ErrorCode;
import dev.plinth.common.FileType;
import dev.plinth.common.PlinthException;
import dev.plinth.meta.Namespace;
import dev.plinth.meta.store.InodeRecord;
import dev.plinth.wire.messages.MetaMessages;
import dev.plinth.wire.messages.MetaMessages.AttributesReply;

/** Creates a directory; it inherits its parent's default layout, as in Lustre. */
public final class Mkdir {
    private Mkdir() {}

    public static AttributesReply apply(Namespace namespace, MetaMessages.Mkdir request) {
        if (request.mdt() != MetaMessages.Mkdir.WITH_PARENT && request.mdt() != namespace.mdtIndex()) {
            // the service turns such a request into an intent (RemoteEntries) before it is logged
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "a directory on MDT " + request.mdt() + " is made through an intent");
        }
        InodeRecord parent = NewEntry.writableParent(namespace, request.parentId(), request.name());
        if (namespace.dentry(parent.inodeId(), request.name()) != null) {
            throw new PlinthException(ErrorCode.ALREADY_EXISTS, "'" + request.name() + "'");
        }
        if (parent.linkCount() >= Namespace.LINK_COUNT_MAX) {
            throw new PlinthException(ErrorCode.TOO_MANY_LINKS, "too many subdirectories");
        }
        InodeRecord directory = NewEntry.create(namespace, parent, request.name(), FileType.DIRECTORY, request.mode(),
                parent.layout(), null);
        return new AttributesReply(directory.toAttributes());
    }
}
