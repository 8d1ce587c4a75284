package dev.plinth.meta.ops;

import dev.plinth.common.ErrorCode;
import dev.plinth.common.FileType;
import dev.plinth.common.PlinthException;
import dev.plinth.common.codec.RecordCodec;
import dev.plinth.meta.Namespace;
import dev.plinth.meta.store.InodeRecord;
import dev.plinth.meta.store.MetaKeys;
import dev.plinth.wire.messages.MetaMessages;
import dev.plinth.wire.messages.MetaMessages.AttributesReply;
import java.util.ArrayList;
import java.util.List;

/**
 * setstripe: a directory's default layout for new files and subdirectories, or the layout of a
 * file that holds no data yet (its chains already chosen by the leader). Owner or root only.
 */
public final class SetLayout {
    private SetLayout() {}

    public static AttributesReply apply(Namespace namespace, MetaMessages.SetLayout request) {
        InodeRecord inode = namespace.inode(request.inodeId());
        namespace.requireOwner(inode);
        if (inode.type() == FileType.SYMLINK) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "symlinks have no layout");
        }
        if (inode.isDirectory()) {
            InodeRecord updated = inode.withLayout(request.layout() == null ? null : request.layout().validate().template(), namespace.now());
            namespace.putInode(updated);
            rememberForced(namespace, request, updated.layout());
            return new AttributesReply(updated.toAttributes());
        }
        if (inode.sizeBytes() > 0) {
            throw new PlinthException(ErrorCode.BUSY, "a file's layout can only be set while it is empty (use migrate)");
        }
        if (request.layout() == null || request.layout().chainIds().isEmpty()) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "a file needs a placed layout");
        }
        InodeRecord updated = inode.withLayout(request.layout().validate(), namespace.now());
        DataOnMdt.truncate(namespace, inode.inodeId(), 0); // nothing written unsettled under the old layout survives it
        namespace.putInode(updated);
        return new AttributesReply(updated.toAttributes());
    }

    /**
     * Keeps a directory's layout set with force (the leader found it unplaceable, or may have), or
     * an erasure-coded one (its cells may have to share nodes), so that `plinth status` can say
     * which directories' creates fail or are less safe than asked; any other layout replaces the
     * record.
     */
    private static void rememberForced(Namespace namespace, MetaMessages.SetLayout request, dev.plinth.common.Layout layout) {
        byte[] key = MetaKeys.id(MetaKeys.FORCED_LAYOUT, request.inodeId());
        if (layout != null && (request.force() || layout.erasureCoded())) {
            namespace.put(key, RecordCodec.encode(new MetaMessages.ForcedLayout(request.inodeId(), request.path(), layout, null)));
        } else if (namespace.getRaw(key) != null) {
            namespace.delete(key);
        }
    }

    /**
     * The directories whose layouts were set with force and still are (at most {@code limit}),
     * without the problem: the service checks each against the cluster map.
     */
    public static MetaMessages.ForcedLayoutList forced(Namespace namespace, int limit) {
        List<MetaMessages.ForcedLayout> forced = new ArrayList<>();
        for (byte[][] entry : namespace.scan(new byte[] {MetaKeys.FORCED_LAYOUT}, null, limit)) {
            MetaMessages.ForcedLayout record = RecordCodec.decode(MetaMessages.ForcedLayout.class, entry[1]);
            InodeRecord inode = namespace.inodeOrNull(record.inodeId());
            if (inode != null && inode.isDirectory() && record.layout().equals(inode.layout())) {
                forced.add(record); // a removed directory, or one whose layout changed since, needs no warning
            }
        }
        return new MetaMessages.ForcedLayoutList(forced);
    }
}
