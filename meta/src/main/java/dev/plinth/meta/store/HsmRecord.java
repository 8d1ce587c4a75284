package dev.plinth.meta.store;

import dev.plinth.wire.messages.HsmMessages.ArchivedCopy;

/**
 * A file's HSM record beside its inode (the state bits are in the inode's flags, so that every
 * stat carries them): the archive it belongs to, its archived copy (null: none) and why its last
 * action failed (null: it did not). Components are only added at the end (RecordCodec).
 */
public record HsmRecord(int archiveId, ArchivedCopy copy, String lastError) {
    public HsmRecord withCopy(ArchivedCopy newCopy) {
        return new HsmRecord(newCopy == null ? archiveId : newCopy.archiveId(), newCopy, null);
    }

    public HsmRecord withError(String error) {
        return new HsmRecord(archiveId, copy, error);
    }
}
