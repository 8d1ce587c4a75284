package dev.plinth.meta;

import dev.plinth.meta.ops.Create;
import dev.plinth.meta.ops.DataOnMdt;
import dev.plinth.meta.ops.GetAttr;
import dev.plinth.meta.ops.Hsm;
import dev.plinth.meta.ops.Link;
import dev.plinth.meta.ops.Locks;
import dev.plinth.meta.ops.Lookup;
import dev.plinth.meta.ops.Mkdir;
import dev.plinth.meta.ops.OpenClose;
import dev.plinth.meta.ops.Publish;
import dev.plinth.meta.ops.ReadDir;
import dev.plinth.meta.ops.ReadLink;
import dev.plinth.meta.ops.RemoteEntries;
import dev.plinth.meta.ops.Rename;
import dev.plinth.meta.ops.ResolvePath;
import dev.plinth.meta.ops.Rmdir;
import dev.plinth.meta.ops.Sessions;
import dev.plinth.meta.ops.SetAttr;
import dev.plinth.meta.ops.SetLayout;
import dev.plinth.meta.ops.MakeNode;
import dev.plinth.meta.ops.Symlink;
import dev.plinth.meta.ops.Unlink;
import dev.plinth.meta.ops.Xattrs;
import dev.plinth.meta.store.MetaKeys;
import dev.plinth.wire.messages.CrossMdtMessages;
import dev.plinth.wire.messages.HandshakeMessages;
import dev.plinth.wire.messages.HsmMessages;
import dev.plinth.wire.messages.MetaMessages;
import dev.plinth.wire.messages.MetaMessages.Mutation;
import dev.plinth.wire.messages.MetaMessages.Query;

/** Which class runs which request: the one switch over the metadata API (the compiler checks it is complete). */
final class Operations {
    private Operations() {}

    static Record mutate(Namespace namespace, Mutation mutation, long newClientId, long leaseMillis) {
        return switch (mutation) {
            case MetaMessages.Create request -> Create.apply(namespace, request);
            case MetaMessages.Mkdir request -> Mkdir.apply(namespace, request);
            case MetaMessages.Symlink request -> Symlink.apply(namespace, request);
            case MetaMessages.MakeNode request -> MakeNode.apply(namespace, request);
            case MetaMessages.SetAttr request -> SetAttr.apply(namespace, request);
            case MetaMessages.Unlink request -> Unlink.apply(namespace, request);
            case MetaMessages.Rmdir request -> Rmdir.apply(namespace, request);
            case MetaMessages.Rename request -> Rename.apply(namespace, request);
            case MetaMessages.Exchange request -> Rename.exchange(namespace, request);
            case MetaMessages.Link request -> Link.apply(namespace, request);
            case MetaMessages.SetXattr request -> Xattrs.set(namespace, request);
            case MetaMessages.RemoveXattr request -> Xattrs.remove(namespace, request);
            case MetaMessages.Open request -> OpenClose.open(namespace, request);
            case MetaMessages.Close request -> OpenClose.close(namespace, request);
            case MetaMessages.SetLayout request -> SetLayout.apply(namespace, request);
            case MetaMessages.SwapLayout request -> SetLayout.swap(namespace, request);
            case MetaMessages.ReplaceCellChains request -> SetLayout.replaceCellChains(namespace, request);
            case MetaMessages.MarkCellsStale request -> SetLayout.markCellsStale(namespace, request);
            case MetaMessages.ClearStaleCells request -> SetLayout.clearStaleCells(namespace, request);
            case CrossMdtMessages.PrepareRemoteMkdir request -> RemoteEntries.prepareMkdir(namespace, request);
            case CrossMdtMessages.PrepareRemoteRemoval request -> RemoteEntries.prepareRemoval(namespace, request);
            case CrossMdtMessages.PrepareRemoteLink request -> RemoteEntries.prepareLink(namespace, request);
            case CrossMdtMessages.PrepareRemoteRename request -> RemoteEntries.prepareRename(namespace, request);
            case CrossMdtMessages.FinishRemoteIntent request -> RemoteEntries.finish(namespace, request);
            case CrossMdtMessages.MakeRemoteDirectory request -> RemoteEntries.make(namespace, request);
            case CrossMdtMessages.RemoveRemoteDirectory request -> RemoteEntries.remove(namespace, request);
            case CrossMdtMessages.AdjustRemoteLinks request -> RemoteEntries.adjustLinks(namespace, request);
            case CrossMdtMessages.EnterRenamed request -> RemoteEntries.enterRenamed(namespace, request);
            case CrossMdtMessages.SetRemoteParent request -> RemoteEntries.setParent(namespace, request);
            case CrossMdtMessages.ForgetAppliedIntent request -> RemoteEntries.forgetApplied(namespace, request);
            case CrossMdtMessages.RenameLock request -> RemoteEntries.renameLock(namespace, request);
            case MetaMessages.OpenSession request -> Sessions.open(namespace, request, newClientId, leaseMillis);
            case MetaMessages.RenewSession request -> Sessions.renew(namespace, request, leaseMillis);
            case MetaMessages.CloseSession request -> Sessions.close(namespace, request);
            case MetaMessages.ExpireSessions request -> Sessions.expire(namespace, request);
            case MetaMessages.SetLock request -> Locks.set(namespace, request);
            case MetaMessages.Publish request -> Publish.apply(namespace, request);
            case MetaMessages.WriteInline request -> DataOnMdt.apply(namespace, request);
            case MetaMessages.PutWhole request -> Publish.putWhole(namespace, request);
            case HsmMessages.SetHsmFlags request -> Hsm.setFlags(namespace, request);
            case HsmMessages.RequestAction request -> Hsm.request(namespace, request);
            case HsmMessages.TakeActions request -> Hsm.take(namespace, request);
            case HsmMessages.ReportProgress request -> Hsm.progress(namespace, request);
            case HsmMessages.FinishAction request -> Hsm.finish(namespace, request);
            case HsmMessages.ForgetRemovedCopies request -> Hsm.forgetRemovedCopies(namespace, request);
            case MetaMessages.TouchAtimes request -> {
                for (long inodeId : request.inodeIds().subList(0, Math.min(request.inodeIds().size(), 4096))) {
                    dev.plinth.meta.store.InodeRecord inode = namespace.inodeOrNull(inodeId);
                    if (inode != null && MetaMessages.relatimeDue(inode.atimeNanos(), inode.mtimeNanos(), inode.ctimeNanos(), namespace.now())) {
                        namespace.putInode(inode.withTimes(namespace.now(), inode.mtimeNanos(), inode.ctimeNanos()));
                    }
                }
                yield HandshakeMessages.EMPTY;
            }
            case MetaMessages.PurgeRemoved request -> {
                request.inodeIds().forEach(inodeId -> namespace.delete(MetaKeys.id(MetaKeys.REMOVED, inodeId)));
                yield HandshakeMessages.EMPTY;
            }
        };
    }

    /** Forced layouts status lists at most (each is one directory an operator set by hand). */
    static final int FORCED_LAYOUTS_MAX = 1000;

    static Record query(Namespace namespace, Query query) {
        return switch (query) {
            case MetaMessages.Lookup request -> Lookup.apply(namespace, request);
            case MetaMessages.ResolvePath request -> ResolvePath.apply(namespace, request);
            case MetaMessages.GetAttr request -> GetAttr.apply(namespace, request);
            case MetaMessages.ReadDir request -> ReadDir.apply(namespace, request);
            case MetaMessages.ReadDirPlus request -> ReadDir.plus(namespace, request);
            case MetaMessages.ReadLink request -> ReadLink.apply(namespace, request);
            case MetaMessages.GetXattr request -> Xattrs.get(namespace, request);
            case MetaMessages.ListXattr request -> Xattrs.list(namespace, request);
            case MetaMessages.GetLock request -> Locks.get(namespace, request);
            case MetaMessages.ReadInline request -> DataOnMdt.read(namespace, request);
            case HsmMessages.GetHsmState request -> Hsm.state(namespace, request);
            case HsmMessages.ListActions request -> Hsm.list(namespace, request);
            case HsmMessages.ListRemovedCopies request -> Hsm.removedCopies(namespace, request);
            case MetaMessages.StatFs request -> throw new IllegalStateException("statfs is answered by the service");
            case MetaMessages.ForcedLayouts request -> SetLayout.forced(namespace, FORCED_LAYOUTS_MAX);
            case MetaMessages.ListStaleCellFiles request -> SetLayout.staleCellFiles(namespace, request);
            case CrossMdtMessages.ListRemoteIntents request -> RemoteEntries.list(namespace);
            case CrossMdtMessages.ListAncestors request -> RemoteEntries.ancestors(namespace, request);
        };
    }
}
