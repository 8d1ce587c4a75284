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
        InodeRecord inode;
        try {
            inode = resolve(namespace, request.startId(), request.path(), request.followLast());
        } catch (Redirect redirect) {
            return AttributesReply.redirect(redirect.inodeId, redirect.type, redirect.unresolved);
        }
        if (request.xattrName() != null && request.fileBytesMax() > 0 && DataOnMdt.hasPart(inode, request.fileBytesMax())) {
            // an S3 GET: its record and its Data-on-MDT bytes (all of a small object) in one read of the store
            namespace.prefetch(List.of(Xattrs.key(inode.inodeId(), request.xattrName()), Namespace.mdtDataKey(inode.inodeId())));
        }
        return new AttributesReply(inode.toAttributes(),
                request.xattrName() == null ? null : Xattrs.readableValue(namespace, inode, request.xattrName()),
                request.fileBytesMax() > 0 ? DataOnMdt.mdtPart(namespace, inode, request.fileBytesMax()) : null);
    }

    /**
     * Where a resolution must go on at another MDT: from inode {@code inodeId} (which that MDT
     * holds), with {@code unresolved} left of the path (written from it, "/" for none).
     */
    private static final class Redirect extends RuntimeException {
        final long inodeId;
        final FileType type;
        final String unresolved;

        Redirect(long inodeId, FileType type, Deque<String> remaining) {
            super(null, null, false, false);
            this.inodeId = inodeId;
            this.type = type;
            this.unresolved = "/" + String.join("/", remaining);
        }
    }

    /** {@code startId}: where a path is resolved from (0: the root). */
    private static InodeRecord resolve(Namespace namespace, long startId, String path, boolean followLast) {
        Deque<String> remaining = new ArrayDeque<>(Names.components(path));
        InodeRecord current = at(namespace, startId == 0 ? InodeId.ROOT : startId, remaining);
        int follows = 0;
        while (!remaining.isEmpty()) {
            String name = remaining.removeFirst();
            InodeRecord next;
            try {
                next = namespace.lookup(current, name);
            } catch (Namespace.RemoteInode remote) {
                throw new Redirect(remote.inodeId(), remote.type(), remaining);
            }
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
                    current = at(namespace, InodeId.ROOT, remaining);
                }
                continue;
            }
            current = next;
        }
        return current;
    }

    /** Inode {@code inodeId}, where {@code remaining} is left to resolve from it: a redirect if another MDT holds it. */
    private static InodeRecord at(Namespace namespace, long inodeId, Deque<String> remaining) {
        if (!namespace.isLocal(inodeId)) {
            throw new Redirect(inodeId, FileType.DIRECTORY, remaining);
        }
        return namespace.inode(inodeId);
    }
}
