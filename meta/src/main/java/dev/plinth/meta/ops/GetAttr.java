package dev.plinth.meta.ops;

import dev.plinth.meta.Namespace;
import dev.plinth.wire.messages.MetaMessages;
import dev.plinth.wire.messages.MetaMessages.AttributesReply;

/** An inode's attributes; needs no permission on the inode itself (as stat). */
public final class GetAttr {
    private GetAttr() {}

    public static AttributesReply apply(Namespace namespace, MetaMessages.GetAttr request) {
        return new AttributesReply(namespace.inode(request.inodeId()).toAttributes());
    }
}
