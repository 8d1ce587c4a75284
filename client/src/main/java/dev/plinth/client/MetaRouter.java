package dev.plinth.client;

import dev.plinth.common.InodeId;
import dev.plinth.wire.messages.HsmMessages;
import dev.plinth.wire.messages.MetaMessages;

/**
 * Which MDT a metadata request goes to: the one that owns the inode it acts on (the directory
 * for a name in it), read off the inode id, which carries its MDT ({@link InodeId}). Paths start
 * at the root, on MDT 0, or where a resolution goes on (its start); sessions begin at MDT 0 and
 * statfs is asked of it. With one MDT every request goes to 0; a second MDT is an entry in the
 * cluster map's MDT table, not a change here.
 */
final class MetaRouter {
    private MetaRouter() {}

    /** The MDT that serves {@code request}. */
    static int mdtOf(Record request) {
        return InodeId.mdtIndex(inodeOf(request));
    }

    /** The inode whose MDT decides: the one the request acts on, or the directory its name is in. */
    static long inodeOf(Record request) {
        return switch (request) {
            case MetaMessages.Lookup r -> r.parentId();
            case MetaMessages.ResolvePath r -> r.startId() == 0 ? InodeId.ROOT : r.startId();
            case MetaMessages.GetAttr r -> r.inodeId();
            case MetaMessages.ReadDir r -> r.inodeId();
            case MetaMessages.ReadDirPlus r -> r.inodeId();
            case MetaMessages.ReadLink r -> r.inodeId();
            case MetaMessages.GetXattr r -> r.inodeId();
            case MetaMessages.ListXattr r -> r.inodeId();
            case MetaMessages.ReadInline r -> r.inodeId();
            case MetaMessages.GetLock r -> r.inodeId();
            case MetaMessages.Create r -> r.parentId();
            case MetaMessages.Mkdir r -> r.parentId();
            case MetaMessages.Symlink r -> r.parentId();
            case MetaMessages.MakeNode r -> r.parentId();
            case MetaMessages.SetAttr r -> r.inodeId();
            case MetaMessages.Unlink r -> r.parentId();
            case MetaMessages.Rmdir r -> r.parentId();
            case MetaMessages.Rename r -> r.sourceParentId();
            case MetaMessages.Exchange r -> r.firstParentId();
            case MetaMessages.Link r -> r.parentId();
            case MetaMessages.SetXattr r -> r.inodeId();
            case MetaMessages.RemoveXattr r -> r.inodeId();
            case MetaMessages.Open r -> r.inodeId();
            case MetaMessages.Close r -> r.inodeId();
            case MetaMessages.WriteInline r -> r.inodeId();
            case MetaMessages.Publish r -> r.inodeId();
            case MetaMessages.PutWhole r -> r.parentId();
            case MetaMessages.SetLayout r -> r.inodeId();
            case MetaMessages.SwapLayout r -> r.inodeId();
            case MetaMessages.ReplaceCellChains r -> r.inodeId();
            case MetaMessages.MarkCellsStale r -> r.inodeId();
            case MetaMessages.ClearStaleCells r -> r.inodeId();
            case MetaMessages.SetLock r -> r.inodeId();
            case HsmMessages.GetHsmState r -> r.inodeId();
            case HsmMessages.SetHsmFlags r -> r.inodeId();
            case HsmMessages.RequestAction r -> r.inodeId();
            // paths from the root, sessions, statfs, purges: MDT 0; the HSM queues are asked of each MDT by name (HsmAccess)
            default -> InodeId.ROOT;
        };
    }
}
