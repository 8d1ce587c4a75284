package dev.plinth.meta.ops;

import dev.plinth.meta.Namespace;
import dev.plinth.wire.messages.MetaMessages;
import dev.plinth.wire.messages.MetaMessages.AttributesReply;

/** A name in a directory. */
public final class Lookup {
    private Lookup() {}

    public static AttributesReply apply(Namespace namespace, MetaMessages.Lookup request) {
        return new AttributesReply(namespace.lookup(namespace.inode(request.parentId()), request.name()).toAttributes());
    }
}
