package dev.plinth.meta.ops;

import dev.plinth.common.ErrorCode;
import dev.plinth.common.PlinthException;
import dev.plinth.meta.Namespace;
import dev.plinth.meta.store.InodeRecord;
import dev.plinth.wire.messages.MetaMessages;
import dev.plinth.wire.messages.MetaMessages.DirEntry;
import dev.plinth.wire.messages.MetaMessages.ReadDirReply;
import java.util.List;

/**
 * One page of a directory in name order. The cursor is the last name returned, so a listing
 * that runs while entries are added or removed never repeats or skips an entry that stayed.
 */
public final class ReadDir {
    public static final int PAGE_ENTRIES_MAX = 4096;

    private ReadDir() {}

    public static ReadDirReply apply(Namespace namespace, MetaMessages.ReadDir request) {
        if (request.limit() < 1 || request.limit() > PAGE_ENTRIES_MAX) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "readdir limit must be 1.." + PAGE_ENTRIES_MAX);
        }
        InodeRecord directory = namespace.directory(request.inodeId());
        namespace.check(directory, Namespace.READ);
        List<DirEntry> entries = namespace.list(directory.inodeId(), request.afterName(), request.limit() + 1);
        boolean more = entries.size() > request.limit();
        return new ReadDirReply(more ? entries.subList(0, request.limit()) : entries, more);
    }
}
