package dev.plinth.meta.ops;

import dev.plinth.common.ErrorCode;
import dev.plinth.common.PlinthException;
import dev.plinth.meta.Namespace;
import dev.plinth.meta.store.InodeRecord;
import dev.plinth.wire.messages.MetaMessages;
import dev.plinth.wire.messages.MetaMessages.DirEntry;
import dev.plinth.wire.messages.MetaMessages.Attributes;
import dev.plinth.wire.messages.MetaMessages.ReadDirPlusReply;
import dev.plinth.wire.messages.MetaMessages.ReadDirReply;
import java.util.ArrayList;
import java.util.List;

/**
 * One page of a directory in name order. The cursor is the last name returned, so a listing
 * that runs while entries are added or removed never repeats or skips an entry that stayed.
 */
public final class ReadDir {
    public static final int PAGE_ENTRIES_MAX = 4096;

    private ReadDir() {}

    public static ReadDirReply apply(Namespace namespace, MetaMessages.ReadDir request) {
        return page(namespace, request.inodeId(), request.afterName(), request.limit());
    }

    /** The same page with each entry's attributes, read in the same request. */
    public static ReadDirPlusReply plus(Namespace namespace, MetaMessages.ReadDirPlus request) {
        ReadDirReply page = page(namespace, request.inodeId(), request.afterName(), request.limit());
        List<Attributes> attributes = new ArrayList<>(page.entries().size());
        List<byte[]> values = new ArrayList<>();
        for (DirEntry entry : page.entries()) {
            if (!namespace.isLocal(entry.inodeId())) {
                attributes.add(MetaMessages.remoteStub(entry.inodeId(), entry.type())); // the client asks its MDT
                if (request.xattrName() != null) {
                    values.add(null);
                }
                continue;
            }
            InodeRecord inode = namespace.inode(entry.inodeId());
            attributes.add(inode.toAttributes());
            if (request.xattrName() != null) {
                values.add(Xattrs.readableValue(namespace, inode, request.xattrName()));
            }
        }
        return new ReadDirPlusReply(page.entries(), attributes, page.more(), values);
    }

    private static ReadDirReply page(Namespace namespace, long inodeId, String afterName, int limit) {
        if (limit < 1 || limit > PAGE_ENTRIES_MAX) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "readdir limit must be 1.." + PAGE_ENTRIES_MAX);
        }
        InodeRecord directory = namespace.directory(inodeId);
        namespace.check(directory, Namespace.READ);
        List<DirEntry> entries = namespace.list(directory.inodeId(), afterName, limit + 1);
        boolean more = entries.size() > limit;
        return new ReadDirReply(more ? entries.subList(0, limit) : entries, more);
    }
}
