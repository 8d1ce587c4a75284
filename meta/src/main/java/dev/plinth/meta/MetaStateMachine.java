package dev.plinth.meta;

import static java.util.Objects.requireNonNull;

import dev.plinth.common.Credentials;
import dev.plinth.common.ErrorCode;
import dev.plinth.common.FileType;
import dev.plinth.common.InodeId;
import dev.plinth.common.Layout;
import dev.plinth.common.PlinthException;
import dev.plinth.meta.store.InodeRecord;
import dev.plinth.meta.store.MetaKeys;
import dev.plinth.meta.store.MetaStore;
import dev.plinth.wire.messages.MetaMessages.Mutation;
import dev.plinth.wire.messages.MetaMessages.OpHeader;
import dev.plinth.wire.messages.MetaMessages.Query;
import dev.plinth.wire.messages.MetaMessages.RemovedFile;
import java.io.IOException;
import java.nio.file.Files;
import dev.plinth.common.Fatal;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;
import org.apache.ratis.proto.RaftProtos.LogEntryProto;
import org.apache.ratis.protocol.Message;
import org.apache.ratis.protocol.RaftGroupId;
import org.apache.ratis.server.RaftServer;
import org.apache.ratis.server.protocol.TermIndex;
import org.apache.ratis.server.storage.RaftStorage;
import org.apache.ratis.statemachine.TransactionContext;
import org.apache.ratis.thirdparty.com.google.protobuf.ByteString;
import org.rocksdb.WriteBatchWithIndex;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The namespace of one MDT as a Raft state machine over RocksDB.
 *
 * <p>Apply: each log entry is one change, run by its operation class against a write batch that
 * also records the entry's index, then committed without RocksDB's WAL. An entry whose index is
 * at or below the index already in RocksDB is skipped, which makes replay after a crash exact.
 * A change that carries a client and request id stores its result under that id; the same id
 * again gets the stored result and changes nothing, so client retries apply once.
 *
 * <p>Snapshot: flush RocksDB's memtables and record the applied index; Ratis may then purge the
 * log up to it. Ratis applies entries on one thread; queries run concurrently on RocksDB.
 */
public final class MetaStateMachine extends dev.plinth.raft.FileSnapshotStateMachine {
    private static final Logger LOG = LoggerFactory.getLogger(MetaStateMachine.class);
    private static final int DEDUP_WINDOW_PER_CLIENT = 4096;

    private final Path storeDirectory;
    private final int mdtIndex;
    private final long leaseMillis;
    private final Layout rootLayout;
    /** The record cache's budget (meta.cache-bytes). */
    private final long cacheBytesMax;
    private volatile Consumer<List<RemovedFile>> removedFilesListener = files -> { };
    private volatile MetaStore store;
    private volatile long appliedInStore;

    public MetaStateMachine(Path storeDirectory, int mdtIndex, long leaseMillis, Layout rootLayout, long cacheBytesMax) {
        this.storeDirectory = requireNonNull(storeDirectory, "storeDirectory is null");
        this.cacheBytesMax = cacheBytesMax;
        this.mdtIndex = mdtIndex;
        this.leaseMillis = leaseMillis;
        this.rootLayout = requireNonNull(rootLayout, "rootLayout is null").validate().template();
    }

    /** The state machine of MDT {@code mdtIndex} with its store in {@code storeDirectory}, as {@code config} sets it up. */
    public static MetaStateMachine forMdt(Path storeDirectory, int mdtIndex, dev.plinth.common.Config config) {
        return new MetaStateMachine(storeDirectory, mdtIndex, config.get(dev.plinth.common.Settings.META_SESSION_LEASE_MILLIS),
                Layout.rootDefault(config), config.get(dev.plinth.common.Settings.META_CACHE_BYTES));
    }

    /** The Raft group of MDT {@code mdtIndex}; its name and peer ids are part of the on-disk format. */
    public static dev.plinth.raft.RaftReplica.GroupSpec groupSpec(int mdtIndex, dev.plinth.common.Config config) {
        return new dev.plinth.raft.RaftReplica.GroupSpec("plinth-mdt-" + mdtIndex, "mdt" + mdtIndex,
                config.get(dev.plinth.common.Settings.META_LOG_SYNC), 200_000, false);
    }

    /**
     * Writes a consistent copy of the store to {@code target} (which must not exist); returns
     * the log index it covers at least (changes applied while it is taken may be in it too).
     */
    public long checkpoint(Path target) {
        long applied = appliedInStore;
        store.checkpoint(target);
        return applied;
    }

    /**
     * Makes the store in {@code storeDirectory}, copied from a backup, ready to start a new Raft
     * log: it forgets the index it applied (the new log's indexes begin at 1) and the other MDTs'
     * leader terms it fenced intents by (their new logs' terms begin at 1 too), and skips the
     * inode ids files made after the backup may hold chunks under.
     */
    public static void prepareRestoredStore(Path storeDirectory, int mdtIndex) {
        try (MetaStore restored = MetaStore.open(storeDirectory, 0);
             WriteBatchWithIndex batch = new WriteBatchWithIndex(true)) {
            Namespace namespace = new Namespace(restored, batch, mdtIndex, new OpHeader(0, 0, Credentials.ROOT, 0));
            namespace.skipInodeIdsAfterRestore();
            dev.plinth.meta.ops.RemoteEntries.forgetCoordinatorTerms(namespace);
            restored.commit(batch, 0, 0); // applied through no entry of the new log
            restored.flush();
        }
    }

    /** `plinth fsck`'s namespace check of the store in {@code storeDirectory} (a copy from a backup), opened here. */
    public static dev.plinth.wire.messages.FsckMessages.FsckReport checkStore(Path storeDirectory, int mdtIndex) {
        try (MetaStore copy = MetaStore.open(storeDirectory, 0)) {
            return copy.readConsistently(() -> NamespaceCheck.check(new Namespace(copy, null, mdtIndex, new OpHeader(0, 0, Credentials.ROOT, 0)), mdtIndex));
        }
    }

    /** `plinth fsck`'s check of this MDT's namespace, on one snapshot. */
    public dev.plinth.wire.messages.FsckMessages.FsckReport checkNamespace() {
        return store.readConsistently(() -> NamespaceCheck.check(committed(), mdtIndex));
    }

    /** A page of this MDT's files with the chains they use, for `plinth fsck`'s storage check. */
    public dev.plinth.wire.messages.FsckMessages.FileChainList fileChains(long afterInodeId, int limit, boolean removed) {
        return store.readConsistently(() -> NamespaceCheck.fileChains(committed(), afterInodeId, Math.min(limit, 10_000), removed));
    }

    /** Where this MDT's RocksDB lives. */
    public Path storeDirectory() {
        return storeDirectory;
    }

    private volatile Runnable membershipListener = () -> { };

    /** Called (on Ratis's thread: do not block) when the group's members change, on every replica. */
    public void onMembershipChanged(Runnable listener) {
        this.membershipListener = requireNonNull(listener, "listener is null");
    }

    @Override
    public void notifyConfigurationChanged(long term, long index, org.apache.ratis.proto.RaftProtos.RaftConfigurationProto configuration) {
        membershipListener.run();
    }

    /** Called after each committed change that removed files, with their layouts. */
    public void onRemovedFiles(Consumer<List<RemovedFile>> listener) {
        this.removedFilesListener = requireNonNull(listener, "listener is null");
    }

    @Override
    public void initialize(RaftServer server, RaftGroupId groupId, RaftStorage raftStorage) throws IOException {
        super.initialize(server, groupId, raftStorage);
        store = MetaStore.open(storeDirectory, cacheBytesMax);
        long[] applied = store.appliedTermIndex();
        appliedInStore = applied[1];
        if (applied[1] > 0) {
            updateLastAppliedTermIndex(applied[0], applied[1]);
        }
        createRootIfMissing();
    }

    /** The root directory lives on MDT 0; other MDTs hold only what is made below directories placed on them. */
    private void createRootIfMissing() {
        if (mdtIndex != 0 || store.get(MetaKeys.id(MetaKeys.INODE, InodeId.ROOT)) != null) {
            return;
        }
        long now = System.currentTimeMillis() * 1_000_000;
        try (WriteBatchWithIndex batch = new WriteBatchWithIndex(true)) {
            Namespace namespace = new Namespace(store, batch, mdtIndex, new OpHeader(0, 0, Credentials.ROOT, now));
            namespace.putInode(new InodeRecord(InodeId.ROOT, FileType.DIRECTORY, 0755, 0, 0, 2, 0, now, now, now, 1,
                    InodeId.ROOT, rootLayout, null, 0));
            long[] applied = store.appliedTermIndex();
            store.commit(batch, applied[0], applied[1]);
        }
        store.flush();
    }

    private volatile long behindLogReported;

    /**
     * This replica needs entries the leader no longer logs. If its store already holds everything
     * before the leader's first logged entry (a replica rebuilt from a recent backup with
     * {@code plinth backup restore --rejoin}), that store is the snapshot: Ratis goes on from its
     * index. Otherwise (its store was lost, or it was away while the others purged their logs) no
     * snapshot is installed, since a snapshot file marks an index, not the state: the replica
     * stays behind and says so, and is rebuilt from a backup rather than serve a namespace it
     * lacks.
     */
    @Override
    public CompletableFuture<org.apache.ratis.server.protocol.TermIndex> notifyInstallSnapshotFromLeader(
            org.apache.ratis.proto.RaftProtos.RoleInfoProto roleInfo, org.apache.ratis.server.protocol.TermIndex firstTermIndexInLog) {
        TermIndex applied = getLastAppliedTermIndex();
        if (applied != null && appliedInStore > 0 && appliedInStore >= firstTermIndexInLog.getIndex() - 1) {
            LOG.info("MDT {} replica goes on from its store, applied through index {} (the leader's log starts at {})", mdtIndex,
                    appliedInStore, firstTermIndexInLog);
            return CompletableFuture.completedFuture(applied);
        }
        long now = System.nanoTime();
        if (now - behindLogReported > 60_000_000_000L || behindLogReported == 0) {
            behindLogReported = now;
            LOG.error("MDT {} replica has applied through index {}, but the leader's log starts at {}: this replica cannot catch up "
                    + "from the log; rebuild its directory from a newer backup (plinth backup restore --rejoin)", mdtIndex, appliedInStore,
                    firstTermIndexInLog);
        }
        return CompletableFuture.completedFuture(null);
    }

    /** RocksDB is the state: flushed, it holds everything applied; the file only marks the index. */
    @Override
    protected void writeSnapshot(Path file, long index) throws IOException {
        store.flush();
        Files.writeString(file, "rocksdb flushed through index " + index + "\n");
    }

    @Override
    public CompletableFuture<Message> applyTransaction(TransactionContext transaction) {
        LogEntryProto entry = transaction.getLogEntry();
        long index = entry.getIndex();
        long term = entry.getTerm();
        if (index <= appliedInStore) {
            advanceAppliedTo(term, index);
            return CompletableFuture.completedFuture(Message.valueOf(ByteString.copyFrom(MetaCodec.encodeResults(List.of()))));
        }
        byte[] result;
        try {
            result = apply(entry.getStateMachineLogEntry().getLogData().toByteArray(), term, index);
        } catch (IllegalStateException e) {
            // the store could not take a committed entry (a full or failed disk): going on would diverge from the log
            throw Fatal.halt("MDT " + mdtIndex + " cannot apply log entry " + index + " to its store in " + storeDirectory + ": "
                    + e.getMessage(), e);
        }
        appliedInStore = index;
        updateLastAppliedTermIndex(term, index);
        return CompletableFuture.completedFuture(Message.valueOf(ByteString.copyFrom(result)));
    }

    /**
     * Ratis replays the log after a restart from its last snapshot, entries the store applied
     * already included, and reports the ones that are not changes (configuration, leader
     * markers) here. The store's applied index, set at {@link #initialize}, is where the state
     * is: moving the applied index back to a replayed entry fails Ratis's own check and stops
     * the state machine (a restarted MDT then never became leader), so it only ever moves forward.
     */
    @Override
    public void notifyTermIndexUpdated(long term, long index) {
        advanceAppliedTo(term, index);
    }

    private void advanceAppliedTo(long term, long index) {
        TermIndex last = getLastAppliedTermIndex();
        if (last == null || index > last.getIndex()) {
            updateLastAppliedTermIndex(term, index);
        }
    }

    /** Changes per log entry at most; also bounds client ids made from an entry's index. */
    static final int BATCH_CHANGES_MAX = 256;

    private byte[] apply(byte[] entry, long term, long index) {
        List<Record> changes;
        try {
            changes = MetaCodec.decodeBatch(entry);
            if (changes.size() > BATCH_CHANGES_MAX) {
                throw new PlinthException(ErrorCode.PROTOCOL_ERROR, "batch of " + changes.size() + " changes");
            }
        } catch (RuntimeException e) {
            // The leader built this entry; an undecodable one is a bug. Skip it rather than stop the group.
            LOG.error("undecodable log entry {} skipped", index, e);
            try (WriteBatchWithIndex batch = new WriteBatchWithIndex(true)) {
                store.commit(batch, term, index);
            }
            return MetaCodec.encodeResults(List.of());
        }
        List<byte[]> results = new ArrayList<>(changes.size());
        List<RemovedFile> removed = new ArrayList<>();
        try (WriteBatchWithIndex batch = new WriteBatchWithIndex(true)) {
            for (int position = 0; position < changes.size(); position++) {
                Mutation mutation = (Mutation) changes.get(position);
                results.add(applyOne(batch, mutation, index * BATCH_CHANGES_MAX + position, removed));
            }
            store.commit(batch, term, index);
        }
        if (!removed.isEmpty()) {
            removedFilesListener.accept(removed);
        }
        return MetaCodec.encodeResults(results);
    }

    /**
     * Applies one change of a batch. It runs after a savepoint, so a change that fails leaves
     * nothing in the batch but its result; a change with a client and request id that was applied
     * before (in an earlier entry or earlier in this batch) returns the stored result.
     */
    private byte[] applyOne(WriteBatchWithIndex batch, Mutation mutation, long newClientId, List<RemovedFile> removed) {
        OpHeader header = mutation.header();
        byte[] dedupKey = header.clientId() != 0 && header.requestId() != 0
                ? MetaKeys.twoIds(MetaKeys.DEDUP, header.clientId(), header.requestId()) : null;
        if (dedupKey != null) {
            byte[] earlier = store.get(batch, dedupKey);
            if (earlier != null) {
                return earlier;
            }
        }
        byte[] result;
        boolean remember = true;
        batch.setSavePoint();
        Namespace namespace = new Namespace(store, batch, mdtIndex, header);
        try {
            result = MetaCodec.ok(Operations.mutate(namespace, mutation, newClientId, leaseMillis));
            removed.addAll(namespace.removedFiles());
        } catch (PlinthException e) {
            result = MetaCodec.failed(e.code(), e.detail());
            rollback(batch);
            // a client without a session here yet opens it and sends the change again, with the same request id
            remember = !dev.plinth.wire.messages.MetaMessages.noSession(e);
        } catch (RuntimeException e) {
            LOG.error("bug while applying {}", mutation.getClass().getSimpleName(), e);
            result = MetaCodec.failed(ErrorCode.INTERNAL, e.toString());
            rollback(batch);
        }
        if (dedupKey != null && remember) {
            try {
                batch.put(dedupKey, result);
                if (header.requestId() > DEDUP_WINDOW_PER_CLIENT) {
                    batch.delete(MetaKeys.twoIds(MetaKeys.DEDUP, header.clientId(), header.requestId() - DEDUP_WINDOW_PER_CLIENT));
                }
            } catch (org.rocksdb.RocksDBException e) {
                throw new IllegalStateException("metadata batch failed", e);
            }
        }
        return result;
    }

    private static void rollback(WriteBatchWithIndex batch) {
        try {
            batch.rollbackToSavePoint();
        } catch (org.rocksdb.RocksDBException e) {
            throw new IllegalStateException("cannot roll back a failed change", e);
        }
    }

    /** Serves a query from local state, encoded as Ratis carries it; the caller makes sure this replica may answer (leader, lease). */
    public byte[] queryLocal(Query query) {
        try {
            return MetaCodec.ok(queryRecord(query));
        } catch (PlinthException e) {
            return MetaCodec.failed(e.code(), e.detail());
        }
    }

    /**
     * As above, the response record itself (a failure throws its PlinthException): for a single
     * replica, which answers from its own state, so the response is not encoded only to be decoded.
     */
    public Record queryRecord(Query query) {
        Namespace namespace = new Namespace(store, null, mdtIndex, query.header());
        return store.readConsistently(() -> Operations.query(namespace, query));
    }

    @Override
    public CompletableFuture<Message> query(Message request) {
        try {
            Query query = (Query) MetaCodec.decodeRequest(request.getContent().toByteArray());
            return CompletableFuture.completedFuture(Message.valueOf(ByteString.copyFrom(queryLocal(query))));
        } catch (RuntimeException e) {
            return CompletableFuture.completedFuture(Message.valueOf(ByteString.copyFrom(
                    MetaCodec.failed(ErrorCode.PROTOCOL_ERROR, e.toString()))));
        }
    }

    /** Removed files whose chunks may still be on storage: the cleaner's work list after a restart. */
    public List<RemovedFile> pendingRemovedFiles(int limit) {
        Namespace namespace = new Namespace(store, null, mdtIndex, new OpHeader(0, 0, Credentials.ROOT, 0));
        List<RemovedFile> result = new ArrayList<>();
        for (byte[][] pair : namespace.scan(new byte[] {MetaKeys.REMOVED}, null, limit)) {
            result.add(new RemovedFile(MetaKeys.firstId(pair[0]), MetaStore.decode(Layout.class, pair[1])));
        }
        return result;
    }

    /** Whether the file is still listed as removed with chunks to free (its REMOVED key, until the cleaner's purge). */
    public boolean removalPending(long inodeId) {
        return committed().chunksBeingFreed(inodeId);
    }

    /** Whether cross-MDT intent {@code intentId} is open in this replica's state. */
    public boolean intentOpen(long intentId) {
        return dev.plinth.meta.ops.RemoteEntries.open(committed(), intentId);
    }

    /** The layout new files get where neither they nor their directory name one (the root's, on MDT 0). */
    public Layout defaultLayout() {
        return rootLayout;
    }

    public int mdtIndex() {
        return mdtIndex;
    }

    /** The index of the last log entry applied here (-1 before the first). */
    public long appliedIndex() {
        TermIndex last = getLastAppliedTermIndex();
        return last == null ? -1 : last.getIndex();
    }

    public long inodeCount() {
        return committed().inodeCount();
    }

    public long mdtDataBytes() {
        return committed().mdtDataBytes();
    }

    /** HSM actions queued or running on this MDT. */
    public long hsmQueuedActions() {
        return dev.plinth.meta.ops.Hsm.queued(committed());
    }

    /** The store's record cache: estimated bytes held, lookups answered and not (0 before the store opens). */
    public long cacheBytes() {
        return ofStore(MetaStore::cacheBytes);
    }

    public long cacheHits() {
        return ofStore(MetaStore::cacheHits);
    }

    public long cacheMisses() {
        return ofStore(MetaStore::cacheMisses);
    }

    private long ofStore(java.util.function.ToLongFunction<MetaStore> figure) {
        MetaStore current = store;
        return current == null ? 0 : figure.applyAsLong(current);
    }

    /** The namespace as committed, for reading counters (no batch, root's credentials). */
    private Namespace committed() {
        return new Namespace(store, null, mdtIndex, new OpHeader(0, 0, Credentials.ROOT, 0));
    }

    @Override
    public void close() throws IOException {
        super.close();
        MetaStore current = store;
        if (current != null) {
            current.flush();
            current.close();
            store = null;
        }
    }
}
