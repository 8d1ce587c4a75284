package dev.plinth.raft;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.apache.ratis.protocol.RaftGroupId;
import org.apache.ratis.server.RaftServer;
import org.apache.ratis.server.protocol.TermIndex;
import org.apache.ratis.server.storage.FileInfo;
import org.apache.ratis.server.storage.RaftStorage;
import org.apache.ratis.statemachine.StateMachineStorage;
import org.apache.ratis.statemachine.impl.BaseStateMachine;
import org.apache.ratis.statemachine.impl.SimpleStateMachineStorage;
import org.apache.ratis.statemachine.impl.SingleFileSnapshotInfo;

/**
 * A Raft state machine whose snapshot is one file in Ratis's snapshot directory, named by the
 * term and index it covers: what the MDTs and the mgmt group share. Subclasses say what goes
 * into the file; Ratis purges the log up to it, and installs it on a replica too far behind.
 */
public abstract class FileSnapshotStateMachine extends BaseStateMachine {
    protected final SimpleStateMachineStorage snapshots = new SimpleStateMachineStorage();

    @Override
    public void initialize(RaftServer server, RaftGroupId groupId, RaftStorage raftStorage) throws IOException {
        super.initialize(server, groupId, raftStorage);
        snapshots.init(raftStorage);
    }

    @Override
    public StateMachineStorage getStateMachineStorage() {
        return snapshots;
    }

    @Override
    public SingleFileSnapshotInfo getLatestSnapshot() {
        return snapshots.getLatestSnapshot();
    }

    @Override
    public final long takeSnapshot() throws IOException {
        TermIndex last = getLastAppliedTermIndex();
        if (last == null || last.getIndex() <= 0) {
            return -1;
        }
        Path file = snapshots.getSnapshotFile(last.getTerm(), last.getIndex()).toPath();
        try {
            Files.createDirectories(file.getParent());
            writeSnapshot(file, last.getIndex());
            var md5 = org.apache.ratis.util.MD5FileUtil.computeAndSaveMd5ForFile(file.toFile());
            snapshots.updateLatestSnapshot(new SingleFileSnapshotInfo(new FileInfo(file, md5), last));
            return last.getIndex();
        } catch (IOException | RuntimeException e) {
            // Ratis retries a snapshot that throws without end, stopping included (a full disk looped forever at SIGTERM).
            // A snapshot is only a shortcut over the log, which keeps everything: none is taken, and the next trigger tries again.
            LOG.warn("no snapshot at index {}: {}", last.getIndex(), e.toString());
            try {
                Files.deleteIfExists(file);
            } catch (IOException ignored) {
                // a partial file Ratis never learned of: the next snapshot's cleanup removes it
            }
            return -1;
        }
    }

    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(FileSnapshotStateMachine.class);

    /** Writes to {@code file} what a snapshot of the state as applied through {@code index} needs. */
    protected abstract void writeSnapshot(Path file, long index) throws IOException;
}
