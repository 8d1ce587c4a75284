package dev.plinth.meta.ops;

import dev.plinth.common.ErrorCode;
import dev.plinth.common.FileType;
import dev.plinth.common.InodeId;
import dev.plinth.common.Names;
import dev.plinth.common.PlinthException;
import dev.plinth.meta.Namespace;
import dev.plinth.meta.store.InodeRecord;
import dev.plinth.wire.messages.MetaMessages;
import dev.plinth.wire.messages.MetaMessages.AttributesReply;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;

/** An absolute path, resolved in one request, following symlinks as the kernel does (at most 40). */
public final class ResolvePath {
    public static final int SYMLINK_FOLLOWS_MAX = 40;

    private ResolvePath() {}

    public static AttributesReply apply(Namespace namespace, MetaMessages.ResolvePath request) {
        InodeRecord inode = resolve(namespace, request.path(), request.followLast());
        if (request.xattrName() != null && request.fileBytesMax() > 0 && DataOnMdt.hasPart(inode, request.fileBytesMax())) {
            // an S3 GET: its record and its Data-on-MDT bytes (all of a small object) in one read of the store
            namespace.prefetch(List.of(Xattrs.key(inode.inodeId(), request.xattrName()), Namespace.mdtDataKey(inode.inodeId())));
        }
        return new AttributesReply(inode.toAttributes(),
                request.xattrName() == null ? null : Xattrs.readableValue(namespace, inode, request.xattrName()),
                request.fileBytesMax() > 0 ? DataOnMdt.mdtPart(namespace, inode, request.fileBytesMax()) : null);
    }

    public static InodeRecord resolve(Namespace namespace, String path, boolean followLast) {
        Deque<String> remaining = new ArrayDeque<>(Names.components(path));
        InodeRecord current = namespace.inode(InodeId.ROOT);
        int follows = 0;
        while (!remaining.isEmpty()) {
            String name = remaining.removeFirst();
            InodeRecord next = namespace.lookup(current, name);
            if (next.type() == FileType.SYMLINK && (!remaining.isEmpty() || followLast)) {
                if (++follows > SYMLINK_FOLLOWS_MAX) {
                    throw new PlinthException(ErrorCode.SYMLINK_LOOP, path);
                }
                String target = next.symlinkTarget();
                List<String> parts = Names.components(target.startsWith("/") ? target : "/" + target);
                for (int i = parts.size() - 1; i >= 0; i--) {
                    remaining.addFirst(parts.get(i));
                }
                if (target.startsWith("/")) {
                    current = namespace.inode(InodeId.ROOT);
                }
                continue;
            }
            current = next;
        }
        return current;
    }
}
