package dev.plinth.wire.messages;

import dev.plinth.wire.messages.MetaMessages.OpHeader;
import java.util.List;

/**
 * Online backups of the metadata: each MDT's leader makes a consistent copy of its store (a
 * RocksDB checkpoint: hard links to its files, taken between two applied changes) that the
 * backup tool reads out and then releases; mgmt hands out its whole cluster state. Root only.
 */
public final class BackupMessages {
    private BackupMessages() {}

    /** Most bytes one {@link ReadBackupFile} returns. */
    public static final int READ_BYTES_MAX = 1 << 20;

    /** Makes a copy of the MDT's store; it stays until {@link EndMdtBackup} or an hour has passed. */
    public record StartMdtBackup(OpHeader header) {}

    /** A copy of MDT {@code mdtId}'s store as of log index {@code appliedIndex}: its files, by name. */
    public record MdtBackup(String backupId, int mdtId, long appliedIndex, List<BackupFile> files) {}

    public record BackupFile(String name, long sizeBytes) {}

    public record ReadBackupFile(OpHeader header, String backupId, String name, long offset, int length) {}

    public record BackupBytes(byte[] data) {}

    /** Removes the copy. */
    public record EndMdtBackup(OpHeader header, String backupId) {}

    /**
     * With several MDTs, so that their copies agree (design note 93): {@code hold} makes the MDT
     * take no new change across MDTs and waits until the ones it coordinates are finished, for
     * {@code leaseMillis} at most (then it lets go by itself); {@code hold} false lets go.
     */
    public record HoldIntents(OpHeader header, boolean hold, long leaseMillis) {}

    /** mgmt's cluster state as it keeps it on disk: nodes, targets, chains, pools, MDTs, S3 keys, encryption keys, archives. */
    public record GetMgmtState() {}

    public record MgmtState(byte[] state) {}
}
