package dev.plinth.meta.ops;

import dev.plinth.common.ErrorCode;
import dev.plinth.common.FileType;
import dev.plinth.common.Names;
import dev.plinth.common.PlinthException;
import dev.plinth.meta.Namespace;
import dev.plinth.meta.store.InodeRecord;
import dev.plinth.wire.messages.MetaMessages;
import dev.plinth.wire.messages.MetaMessages.AttributesReply;
import java.nio.charset.StandardCharsets;

public final class Symlink {
    private Symlink() {}

    public static AttributesReply apply(Namespace namespace, MetaMessages.Symlink request) {
        String target = request.target();
        if (target == null || target.isEmpty() || target.indexOf('\0') >= 0) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "empty symlink target");
        }
        if (target.getBytes(StandardCharsets.UTF_8).length > Names.PATH_BYTES_MAX) {
            throw new PlinthException(ErrorCode.NAME_TOO_LONG, "symlink target");
        }
        InodeRecord parent = NewEntry.writableParent(namespace, request.parentId(), request.name());
        if (namespace.dentry(parent.inodeId(), request.name()) != null) {
            throw new PlinthException(ErrorCode.ALREADY_EXISTS, "'" + request.name() + "'");
        }
        return new AttributesReply(NewEntry.create(namespace, parent, request.name(), FileType.SYMLINK, 0777, null, target).toAttributes());
    }
}
