package dev.plinth.meta.ops;

import dev.plinth.meta.Namespace;
import dev.plinth.meta.store.InodeRecord;
import dev.plinth.wire.messages.MetaMessages;
import dev.plinth.wire.messages.MetaMessages.AttributesReply;

/** A name in a directory. */
public final class Lookup {
    private Lookup() {}

    public static AttributesReply apply(Namespace namespace, MetaMessages.Lookup request) {
        InodeRecord directory = namespace.inode(request.parentId());
        try {
            return new AttributesReply(namespace.lookup(directory, request.name()).toAttributes());
        } catch (Namespace.RemoteInode remote) {
            return AttributesReply.redirect(remote.inodeId(), remote.type(), "/"); // the client asks its MDT
        }
    }
}
