package dev.plinth.mgmt;

import static java.util.Objects.requireNonNull;

import dev.plinth.common.ErrorCode;
import dev.plinth.common.PlinthException;
import dev.plinth.common.codec.RecordCodec;
import dev.plinth.mgmt.MgmtService.State;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;
import org.apache.ratis.protocol.Message;
import org.apache.ratis.protocol.RaftGroupId;
import org.apache.ratis.server.RaftServer;
import org.apache.ratis.server.storage.RaftStorage;
import org.apache.ratis.statemachine.TransactionContext;
import org.apache.ratis.statemachine.impl.SingleFileSnapshotInfo;
import org.apache.ratis.thirdparty.com.google.protobuf.ByteString;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The cluster state of the management service and where it is kept: a file written atomically
 * (fsync, then rename) on every change. A single mgmt installs changes directly; a mgmt group
 * replicates them through Raft, and this class is also its state machine.
 *
 * <p>A log entry is the whole next state with the change count it was made from. It applies only
 * if the state still has that count, so a change computed from a state that another change has
 * overtaken (a leader that lost its leadership mid-change) is refused, and replaying entries that
 * the file already reflects (after a restart, from the last snapshot) changes nothing. States are
 * small (tens of kilobytes for hundreds of targets) and change rarely: on membership, chain and
 * pool changes, not on heartbeats.
 */
final class MgmtStateMachine extends dev.plinth.raft.FileSnapshotStateMachine {
    private static final Logger LOG = LoggerFactory.getLogger(MgmtStateMachine.class);
    private static final byte[] APPLIED = {1};
    private static final byte[] OVERTAKEN = {0};

    /** One log entry: the state {@code next}, valid only on top of a state with {@code baseChanges} changes. */
    record Change(long baseChanges, State next) {}

    private final Path stateFile;
    private volatile State state;
    private volatile Consumer<State> listener = state -> { };

    MgmtStateMachine(Path stateFile) {
        this.stateFile = requireNonNull(stateFile, "stateFile is null");
        this.state = load(stateFile);
    }

    private static State load(Path file) {
        try {
            if (!Files.exists(file)) {
                return State.empty();
            }
            State loaded = RecordCodec.decode(State.class, Files.readAllBytes(file));
            if (loaded.formatVersion() != MgmtService.FORMAT_VERSION) {
                throw new PlinthException(ErrorCode.NOT_SUPPORTED, file + " has format " + loaded.formatVersion());
            }
            return loaded;
        } catch (IOException e) {
            throw new PlinthException(ErrorCode.IO_ERROR, "cannot read cluster state " + file + ": " + e.getMessage(), e);
        }
    }

    State state() {
        return state;
    }

    /** Called with each state applied from the log (on the Raft thread; must not block on mgmt's lock). */
    void onApplied(Consumer<State> listener) {
        this.listener = requireNonNull(listener, "listener is null");
    }

    /** Makes {@code next} the state, without Raft (a single mgmt): saved before it is visible. */
    void install(State next) {
        save(stateFile, next);
        state = next;
    }

    /** The log entry that changes the current state {@code base} into {@code next}. */
    static byte[] entry(State base, State next) {
        return RecordCodec.encode(new Change(base.changes(), next));
    }

    /** Whether a result of {@link #applyTransaction} says the change took effect. */
    static boolean applied(byte[] result) {
        return result.length == 1 && result[0] == APPLIED[0];
    }

    @Override
    public void initialize(RaftServer server, RaftGroupId groupId, RaftStorage raftStorage) throws IOException {
        super.initialize(server, groupId, raftStorage);
        SingleFileSnapshotInfo snapshot = snapshots.getLatestSnapshot();
        if (snapshot != null) {
            // The state file is at least as new as the snapshot; entries after it replay as no-ops.
            updateLastAppliedTermIndex(snapshot.getTerm(), snapshot.getIndex());
        }
    }

    /** After a snapshot was installed from the leader (this replica was too far behind for the log). */
    @Override
    public void reinitialize() throws IOException {
        snapshots.loadLatestSnapshot();
        SingleFileSnapshotInfo snapshot = snapshots.getLatestSnapshot();
        if (snapshot == null) {
            return;
        }
        State installed = load(snapshot.getFile().getPath());
        install(installed);
        updateLastAppliedTermIndex(snapshot.getTerm(), snapshot.getIndex());
        listener.accept(installed);
    }

    @Override
    protected void writeSnapshot(Path file, long index) {
        save(file, state);
    }

    @Override
    public CompletableFuture<Message> applyTransaction(TransactionContext transaction) {
        var entry = transaction.getLogEntry();
        byte[] result = OVERTAKEN;
        Change change = null;
        try {
            change = RecordCodec.decode(Change.class, entry.getStateMachineLogEntry().getLogData().toByteArray());
        } catch (RuntimeException e) {
            // The leader built this entry; an undecodable one is a bug. Skip it rather than stop the group.
            LOG.error("cluster state log entry {} skipped", entry.getIndex(), e);
        }
        if (change != null && change.baseChanges() == state.changes() && change.next().changes() == state.changes() + 1) {
            try {
                save(stateFile, change.next());
            } catch (PlinthException e) {
                // The log holds the change; the file catches up with the next one (or a snapshot).
                LOG.error("cluster state change {} applied in memory only: {}", entry.getIndex(), e.getMessage());
            }
            state = change.next();
            result = APPLIED;
            listener.accept(change.next());
        }
        updateLastAppliedTermIndex(entry.getTerm(), entry.getIndex());
        return CompletableFuture.completedFuture(Message.valueOf(ByteString.copyFrom(result)));
    }

    /** Writes {@code state} to {@code file} atomically; the state holds S3 secret keys, so only the owner may read it. */
    private static void save(Path file, State state) {
        try {
            Path temporary = file.resolveSibling(file.getFileName() + ".tmp");
            Files.deleteIfExists(temporary);
            Files.createFile(temporary, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
            Files.write(temporary, RecordCodec.encode(state));
            try (FileChannel channel = FileChannel.open(temporary, StandardOpenOption.WRITE)) {
                channel.force(true);
            }
            Files.move(temporary, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } catch (IOException e) {
            throw new PlinthException(ErrorCode.IO_ERROR, "cannot save cluster state: " + e.getMessage(), e);
        }
    }
}
