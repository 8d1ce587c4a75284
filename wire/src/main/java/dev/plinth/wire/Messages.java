package dev.plinth.wire;

import dev.plinth.wire.messages.BackupMessages;
import dev.plinth.wire.messages.CrossMdtMessages;
import dev.plinth.wire.messages.FsckMessages;
import dev.plinth.wire.messages.MdtGroupMessages;
import dev.plinth.wire.messages.HandshakeMessages.Authenticate;
import dev.plinth.wire.messages.HandshakeMessages.Challenge;
import dev.plinth.wire.messages.HandshakeMessages.Empty;
import dev.plinth.wire.messages.HandshakeMessages.Hello;
import dev.plinth.wire.messages.HandshakeMessages.Welcome;
import dev.plinth.wire.messages.HsmMessages;
import dev.plinth.wire.messages.MetaMessages;
import dev.plinth.wire.messages.MgmtMessages;
import dev.plinth.wire.messages.StorageMessages;

/** Message numbers: 1-9 handshake, 10-19 mgmt, 20-49 storage, 100-199 meta. Never reuse a number. */
final class Messages {
    private Messages() {}

    interface Registry {
        void register(int type, Class<? extends Record> request, Class<? extends Record> response);
    }

    static void registerAll(Registry registry) {
        registry.register(1, Hello.class, Challenge.class);
        registry.register(2, Authenticate.class, Welcome.class);

        registry.register(10, MgmtMessages.GetClusterMap.class, MgmtMessages.ClusterMap.class);
        registry.register(11, MgmtMessages.UpdatePool.class, MgmtMessages.ClusterMap.class);
        registry.register(12, MgmtMessages.Heartbeat.class, MgmtMessages.HeartbeatReply.class);
        registry.register(13, MgmtMessages.CreateAccessKey.class, MgmtMessages.AccessKey.class);
        registry.register(14, MgmtMessages.ListAccessKeys.class, MgmtMessages.AccessKeyList.class);
        registry.register(15, MgmtMessages.DeleteAccessKey.class, Empty.class);
        registry.register(16, MgmtMessages.RegisterNode.class, MgmtMessages.ClusterMap.class);
        registry.register(17, MgmtMessages.RegisterMdt.class, MgmtMessages.ClusterMap.class);
        registry.register(18, MgmtMessages.AllocateIds.class, MgmtMessages.AllocatedIds.class);
        registry.register(19, MgmtMessages.ChainSynced.class, MgmtMessages.ClusterMap.class);
        registry.register(27, MgmtMessages.ReportJobStats.class, Empty.class);
        registry.register(28, MgmtMessages.GetJobStats.class, MgmtMessages.JobStatsReply.class);
        registry.register(29, MgmtMessages.ReportUnreachable.class, MgmtMessages.ClusterMap.class);
        registry.register(30, MgmtMessages.GetEncryptionKey.class, MgmtMessages.EncryptionKey.class);
        registry.register(31, MgmtMessages.ListArchives.class, MgmtMessages.ArchiveList.class);
        registry.register(32, MgmtMessages.AddArchive.class, MgmtMessages.ArchiveList.class);
        registry.register(33, MgmtMessages.RemoveArchive.class, MgmtMessages.ArchiveList.class);
        registry.register(34, MgmtMessages.ReportHsm.class, Empty.class);

        registry.register(20, StorageMessages.WriteChunk.class, StorageMessages.WriteChunkResult.class);
        registry.register(21, StorageMessages.ReadChunk.class, StorageMessages.ReadChunkResult.class);
        registry.register(22, StorageMessages.TruncateObject.class, Empty.class);
        registry.register(23, StorageMessages.RemoveFile.class, Empty.class);
        registry.register(24, StorageMessages.SyncFile.class, Empty.class);
        registry.register(25, StorageMessages.ListChunks.class, StorageMessages.ChunkList.class);
        registry.register(26, StorageMessages.RepairChunk.class, Empty.class);

        registry.register(100, MetaMessages.Lookup.class, MetaMessages.AttributesReply.class);
        registry.register(101, MetaMessages.ResolvePath.class, MetaMessages.AttributesReply.class);
        registry.register(102, MetaMessages.GetAttr.class, MetaMessages.AttributesReply.class);
        registry.register(103, MetaMessages.ReadDir.class, MetaMessages.ReadDirReply.class);
        registry.register(104, MetaMessages.ReadLink.class, MetaMessages.ReadLinkReply.class);
        registry.register(105, MetaMessages.GetXattr.class, MetaMessages.XattrValue.class);
        registry.register(106, MetaMessages.ListXattr.class, MetaMessages.XattrNames.class);
        registry.register(107, MetaMessages.StatFs.class, MetaMessages.StatFsReply.class);
        registry.register(108, MetaMessages.ReadDirPlus.class, MetaMessages.ReadDirPlusReply.class);
        registry.register(109, MetaMessages.GetLock.class, MetaMessages.LockReply.class);
        registry.register(110, MetaMessages.ReadInline.class, MetaMessages.InlineData.class);
        registry.register(111, MetaMessages.ForcedLayouts.class, MetaMessages.ForcedLayoutList.class);

        registry.register(120, MetaMessages.Create.class, MetaMessages.CreateReply.class);
        registry.register(121, MetaMessages.Mkdir.class, MetaMessages.AttributesReply.class);
        registry.register(122, MetaMessages.Symlink.class, MetaMessages.AttributesReply.class);
        registry.register(123, MetaMessages.SetAttr.class, MetaMessages.AttributesReply.class);
        registry.register(124, MetaMessages.Unlink.class, Empty.class);
        registry.register(125, MetaMessages.Rmdir.class, Empty.class);
        registry.register(126, MetaMessages.Rename.class, Empty.class);
        registry.register(127, MetaMessages.Link.class, MetaMessages.AttributesReply.class);
        registry.register(128, MetaMessages.SetXattr.class, Empty.class);
        registry.register(129, MetaMessages.RemoveXattr.class, Empty.class);
        registry.register(130, MetaMessages.Open.class, MetaMessages.AttributesReply.class);
        registry.register(131, MetaMessages.Close.class, MetaMessages.AttributesReply.class);
        registry.register(132, MetaMessages.SetLayout.class, MetaMessages.AttributesReply.class);
        registry.register(133, MetaMessages.OpenSession.class, MetaMessages.SessionReply.class);
        registry.register(134, MetaMessages.RenewSession.class, MetaMessages.SessionReply.class);
        registry.register(135, MetaMessages.CloseSession.class, Empty.class);
        registry.register(136, MetaMessages.ExpireSessions.class, Empty.class);
        registry.register(137, MetaMessages.PurgeRemoved.class, Empty.class);
        registry.register(138, MetaMessages.SetLock.class, MetaMessages.LockReply.class);
        registry.register(139, MetaMessages.Publish.class, MetaMessages.AttributesReply.class);
        registry.register(140, MetaMessages.WriteInline.class, Empty.class);
        registry.register(141, MetaMessages.PutWhole.class, MetaMessages.AttributesReply.class);
        registry.register(142, MetaMessages.MakeNode.class, MetaMessages.AttributesReply.class);
        registry.register(143, MetaMessages.TouchAtimes.class, Empty.class);

        registry.register(150, HsmMessages.GetHsmState.class, HsmMessages.HsmState.class);
        registry.register(151, HsmMessages.ListActions.class, HsmMessages.ActionList.class);
        registry.register(152, HsmMessages.SetHsmFlags.class, HsmMessages.HsmState.class);
        registry.register(153, HsmMessages.RequestAction.class, HsmMessages.HsmState.class);
        registry.register(154, HsmMessages.TakeActions.class, HsmMessages.ActionList.class);
        registry.register(155, HsmMessages.ReportProgress.class, HsmMessages.Action.class);
        registry.register(156, HsmMessages.FinishAction.class, HsmMessages.HsmState.class);
        registry.register(157, HsmMessages.ListRemovedCopies.class, HsmMessages.RemovedCopies.class);
        registry.register(158, HsmMessages.ForgetRemovedCopies.class, Empty.class);

        registry.register(35, BackupMessages.GetMgmtState.class, BackupMessages.MgmtState.class);
        registry.register(160, BackupMessages.StartMdtBackup.class, BackupMessages.MdtBackup.class);
        registry.register(161, BackupMessages.ReadBackupFile.class, BackupMessages.BackupBytes.class);
        registry.register(162, BackupMessages.EndMdtBackup.class, Empty.class);
        registry.register(163, FsckMessages.CheckNamespace.class, FsckMessages.FsckReport.class);
        registry.register(164, FsckMessages.ListFileChains.class, FsckMessages.FileChainList.class);
        registry.register(165, MdtGroupMessages.ChangeMdtReplicas.class, MdtGroupMessages.MdtReplicaList.class);
        registry.register(166, MetaMessages.SwapLayout.class, MetaMessages.AttributesReply.class);
        registry.register(167, MetaMessages.Exchange.class, Empty.class);
        registry.register(168, MetaMessages.ReplaceCellChains.class, MetaMessages.AttributesReply.class);
        registry.register(169, StorageMessages.FileUsage.class, StorageMessages.FileUsageResult.class);
        registry.register(170, CrossMdtMessages.PrepareRemoteMkdir.class, CrossMdtMessages.RemoteIntent.class);
        registry.register(171, CrossMdtMessages.PrepareRemoteRemoval.class, CrossMdtMessages.RemoteIntent.class);
        registry.register(172, CrossMdtMessages.FinishRemoteIntent.class, Empty.class);
        registry.register(173, CrossMdtMessages.ListRemoteIntents.class, CrossMdtMessages.RemoteIntentList.class);
        registry.register(174, CrossMdtMessages.MakeRemoteDirectory.class, MetaMessages.AttributesReply.class);
        registry.register(175, CrossMdtMessages.RemoveRemoteDirectory.class, Empty.class);
        registry.register(176, CrossMdtMessages.PrepareRemoteLink.class, CrossMdtMessages.RemoteIntent.class);
        registry.register(177, CrossMdtMessages.PrepareRemoteRename.class, CrossMdtMessages.RemoteIntent.class);
        registry.register(178, CrossMdtMessages.ListAncestors.class, CrossMdtMessages.AncestorList.class);
        registry.register(179, CrossMdtMessages.AdjustRemoteLinks.class, MetaMessages.AttributesReply.class);
        registry.register(180, CrossMdtMessages.EnterRenamed.class, Empty.class);
        registry.register(181, CrossMdtMessages.SetRemoteParent.class, Empty.class);
        registry.register(182, CrossMdtMessages.ForgetAppliedIntent.class, Empty.class);
        registry.register(183, BackupMessages.HoldIntents.class, Empty.class);
        registry.register(184, CrossMdtMessages.RenameLock.class, Empty.class);
        registry.register(185, MetaMessages.MarkCellsStale.class, MetaMessages.AttributesReply.class);
        registry.register(186, MetaMessages.ClearStaleCells.class, MetaMessages.AttributesReply.class);
        registry.register(187, MetaMessages.ListStaleCellFiles.class, MetaMessages.StaleCellFiles.class);
    }
}
