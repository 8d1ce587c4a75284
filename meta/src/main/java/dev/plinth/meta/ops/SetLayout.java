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
        InodeRecord updated = inode.withLayout(request.layout().withStaleCells(0).validate(), namespace.now());
        DataOnMdt.truncate(namespace, inode.inodeId(), 0); // nothing written unsettled under the old layout survives it
        namespace.putInode(updated);
        return new AttributesReply(updated.toAttributes());
    }

    /** See {@link MetaMessages.SwapLayout}: a migrated file takes its copy's layout, and the copy the file's old one. */
    public static AttributesReply swap(Namespace namespace, MetaMessages.SwapLayout request) {
        InodeRecord file = namespace.inode(request.inodeId());
        InodeRecord donor = namespace.inode(request.donorId());
        namespace.requireOwner(file);
        namespace.requireOwner(donor);
        if (file.type() != FileType.FILE || donor.type() != FileType.FILE || donor.linkCount() != 0 || file.inodeId() == donor.inodeId()) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "a layout swap takes a regular file and an unnamed copy of it");
        }
        if (file.layout() == null || donor.layout() == null || file.layout().mdtBytes() != donor.layout().mdtBytes()) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "the copy keeps the file's Data-on-MDT part, so its layout must have the "
                    + "same one");
        }
        if ((Hsm.states(file) & dev.plinth.wire.messages.HsmMessages.RELEASED) != 0) {
            throw new PlinthException(ErrorCode.RELEASED, "the file is released: it has no bytes on the targets to migrate");
        }
        if (file.sizeBytes() != request.expectedSizeBytes() || file.mtimeNanos() != request.expectedMtimeNanos()) {
            throw new PlinthException(ErrorCode.CHANGED, "the file changed while it was copied");
        }
        if (namespace.isOpen(file.inodeId())) {
            throw new PlinthException(ErrorCode.WOULD_BLOCK, "the file is open: a handle opened before would go on with the old layout");
        }
        long now = namespace.now();
        // chunks are named by an inode id: each layout goes on naming the chunks it was written with
        InodeRecord migrated = file.withLayout(donor.layout().withChunkOwner(donor.layout().chunkOwner(donor.inodeId())), now);
        namespace.putInode(migrated);
        namespace.putInode(donor.withLayout(file.layout().withChunkOwner(file.layout().chunkOwner(file.inodeId())), now));
        namespace.delete(MetaKeys.id(MetaKeys.STALE_CELLS, file.inodeId())); // the copy was written whole; the donor goes at its close
        return new AttributesReply(migrated.toAttributes());
    }

    /** Moves an erasure-coded file's cells to other chains, once the rebuilder has written them there (see {@link MetaMessages.ReplaceCellChains}). */
    public static AttributesReply replaceCellChains(Namespace namespace, MetaMessages.ReplaceCellChains request) {
        InodeRecord file = namespace.inode(request.inodeId());
        namespace.requireOwner(file);
        dev.plinth.common.Layout layout = file.layout();
        if (file.type() != FileType.FILE || layout == null || !layout.erasureCoded()
                || request.chainIds().size() != layout.chainIds().size()) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "cells move only between chains of an erasure-coded file's width");
        }
        if (!layout.chainIds().equals(request.expectedChainIds()) || file.sizeBytes() != request.expectedSizeBytes()
                || file.mtimeNanos() != request.expectedMtimeNanos()) {
            throw new PlinthException(ErrorCode.CHANGED, "the file changed while its cells were rebuilt");
        }
        if (namespace.isOpen(file.inodeId())) {
            throw new PlinthException(ErrorCode.WOULD_BLOCK, "the file is open: a handle opened before would go on with the old chains");
        }
        long stale = layout.staleCells();
        for (int cell = 0; cell < layout.chainIds().size(); cell++) {
            if (!layout.chainIds().get(cell).equals(request.chainIds().get(cell))) {
                stale &= ~(1L << cell); // a moved cell was decoded from the others: whole, wherever it was stale
            }
        }
        InodeRecord moved = file.withLayout(layout.withChains(request.chainIds()).withStaleCells(stale), namespace.now());
        namespace.putInode(moved);
        indexStaleCells(namespace, moved);
        return new AttributesReply(moved.toAttributes());
    }

    /** See {@link MetaMessages.MarkCellsStale}: a writer goes on without cells whose targets are away. */
    public static AttributesReply markCellsStale(Namespace namespace, MetaMessages.MarkCellsStale request) {
        InodeRecord file = namespace.inode(request.inodeId());
        dev.plinth.common.Layout layout = file.layout();
        if (file.type() != FileType.FILE || layout == null || !layout.erasureCoded() || layout.chainIds().isEmpty()) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "only an erasure-coded file's cells can be stale");
        }
        boolean openHere = namespace.getRaw(MetaKeys.twoIds(MetaKeys.OPEN_BY_INODE, file.inodeId(), namespace.header().clientId())) != null;
        if (!openHere) { // a writer has it open (and may write through that handle whatever the mode says now)
            namespace.check(file, dev.plinth.common.Permissions.WRITE);
        }
        if ((layout.staleCells() | request.cells()) == layout.staleCells()) {
            return new AttributesReply(file.toAttributes()); // marked already (a retry, or another writer of the file)
        }
        // validate() refuses more stale cells than parity cells, or cells past the width
        InodeRecord marked = file.withLayout(layout.withStaleCells(layout.staleCells() | request.cells()).validate(), namespace.now());
        namespace.putInode(marked);
        indexStaleCells(namespace, marked);
        return new AttributesReply(marked.toAttributes());
    }

    /** See {@link MetaMessages.ClearStaleCells}: the upkeep rebuilt stale cells from the others. */
    public static AttributesReply clearStaleCells(Namespace namespace, MetaMessages.ClearStaleCells request) {
        InodeRecord file = namespace.inode(request.inodeId());
        namespace.requireOwner(file);
        dev.plinth.common.Layout layout = file.layout();
        if (file.type() != FileType.FILE || layout == null || !layout.erasureCoded()) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "only an erasure-coded file's cells can be stale");
        }
        if (file.sizeBytes() != request.expectedSizeBytes() || file.ctimeNanos() != request.expectedCtimeNanos()) {
            throw new PlinthException(ErrorCode.CHANGED, "the file changed while its stale cells were rebuilt");
        }
        if (namespace.isOpen(file.inodeId())) {
            throw new PlinthException(ErrorCode.WOULD_BLOCK, "the file is open: a writer may still be going on without those cells");
        }
        if (request.cells() == 0) {
            return new AttributesReply(file.toAttributes()); // the rebuilder asked whether a clear would be taken now
        }
        // the ctime stays: a clear changes no byte of the file, and a second rebuilder's expectation still holds
        InodeRecord cleared = file.withLayout(layout.withStaleCells(layout.staleCells() & ~request.cells()), file.ctimeNanos());
        namespace.putInode(cleared);
        indexStaleCells(namespace, cleared);
        return new AttributesReply(cleared.toAttributes());
    }

    /** Keeps the index of files with stale cells ({@link MetaKeys#STALE_CELLS}) in step with {@code file}'s layout. */
    private static void indexStaleCells(Namespace namespace, InodeRecord file) {
        byte[] key = MetaKeys.id(MetaKeys.STALE_CELLS, file.inodeId());
        if (file.layout() != null && file.layout().staleCells() != 0) {
            namespace.put(key, new byte[0]);
        } else if (namespace.getRaw(key) != null) {
            namespace.delete(key);
        }
    }

    /** The files of this MDT with stale cells (see {@link MetaMessages.ListStaleCellFiles}). */
    public static MetaMessages.StaleCellFiles staleCellFiles(Namespace namespace, MetaMessages.ListStaleCellFiles request) {
        List<Long> files = new ArrayList<>();
        byte[] from = MetaKeys.id(MetaKeys.STALE_CELLS, request.afterInodeId()); // exclusive
        for (byte[][] entry : namespace.scan(new byte[] {MetaKeys.STALE_CELLS}, from, Math.max(1, Math.min(request.limit(), 10_000)))) {
            files.add(MetaKeys.firstId(entry[0]));
        }
        return new MetaMessages.StaleCellFiles(files);
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
