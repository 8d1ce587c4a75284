package dev.plinth.raft;

import static java.util.Objects.requireNonNull;

import dev.plinth.common.ErrorCode;
import dev.plinth.common.PlinthException;
import dev.plinth.wire.HostPort;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.ratis.RaftConfigKeys;
import org.apache.ratis.conf.RaftProperties;
import org.apache.ratis.netty.NettyConfigKeys;
import org.apache.ratis.protocol.ClientId;
import org.apache.ratis.protocol.Message;
import org.apache.ratis.protocol.RaftClientAsynchronousProtocol;
import org.apache.ratis.protocol.RaftClientReply;
import org.apache.ratis.protocol.RaftClientRequest;
import org.apache.ratis.protocol.RaftGroup;
import org.apache.ratis.protocol.RaftGroupId;
import org.apache.ratis.protocol.RaftPeer;
import org.apache.ratis.protocol.RaftPeerId;
import org.apache.ratis.rpc.SupportedRpcType;
import org.apache.ratis.server.RaftServer;
import org.apache.ratis.server.RaftServerConfigKeys;
import org.apache.ratis.server.storage.RaftStorage;
import org.apache.ratis.statemachine.impl.BaseStateMachine;
import org.apache.ratis.thirdparty.com.google.protobuf.ByteString;
import org.apache.ratis.util.SizeInBytes;
import org.apache.ratis.util.TimeDuration;

/**
 * One replica of a Raft group on Apache Ratis: an MDT's namespace, or the management service's
 * cluster state. Changes are submitted to the local Raft server in-process (no extra network
 * hop); only Raft's own replication uses its port. A replica that does not lead answers
 * {@link ErrorCode#NOT_LEADER}, and its caller's client tries another.
 */
public final class RaftReplica implements AutoCloseable {
    private final RaftServer server;
    private final RaftGroup group;
    private final RaftPeerId self;
    private final String selfAddress;
    private final String peerIdPrefix;
    private final ClientId clientId = ClientId.randomId();
    private final AtomicLong callIds = new AtomicLong();

    private RaftReplica(RaftServer server, RaftGroup group, RaftPeerId self, String selfAddress, String peerIdPrefix) {
        this.server = server;
        this.group = group;
        this.self = self;
        this.selfAddress = selfAddress;
        this.peerIdPrefix = peerIdPrefix;
    }

    /**
     * What a group's replicas share: its name (from which its id is made) and tuning.
     * {@code snapshotsHoldState}: the state machine's snapshot files are its whole state, so a
     * replica behind the start of the leader's log is sent them; otherwise the state machine is
     * only told ({@code notifyInstallSnapshotFromLeader}) and must get its state another way.
     */
    public record GroupSpec(String name, String peerIdPrefix, boolean logSync, long snapshotEveryEntries, boolean snapshotsHoldState) {
        public GroupSpec {
            requireNonNull(name, "name is null");
            requireNonNull(peerIdPrefix, "peerIdPrefix is null");
        }
    }

    /**
     * Starts this replica of group {@code spec} with its Raft storage under {@code directory/raft}.
     * {@code peers} are the group's Raft addresses, the same list in the same order on every
     * replica, this one's at {@code selfIndex}: on first start they are the group (peer ids are
     * positions in it); afterwards the group is what its log says, changed by
     * {@link #changePeers}. A single replica waits until it leads (up to 30 s); one of several
     * returns at once.
     */
    public static RaftReplica start(Path directory, GroupSpec spec, List<HostPort> peers, int selfIndex, BaseStateMachine stateMachine) {
        if (selfIndex < 0 || selfIndex >= peers.size()) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "this replica's address is not among the group's peers " + peers);
        }
        List<RaftPeer> raftPeers = new java.util.ArrayList<>();
        for (int i = 0; i < peers.size(); i++) {
            raftPeers.add(RaftPeer.newBuilder().setId(spec.peerIdPrefix() + "-" + i).setAddress(peers.get(i).toString()).build());
        }
        return start(directory, spec, raftPeers, peers.get(selfIndex), raftPeers.get(selfIndex).getId(), stateMachine);
    }

    /**
     * Starts a new replica at {@code self} that is not in its group yet: it waits, with no peers,
     * until the group's leader adds it ({@link #changePeers} there) and sends it the log.
     */
    public static RaftReplica join(Path directory, GroupSpec spec, HostPort self, BaseStateMachine stateMachine) {
        return start(directory, spec, List.of(), self, joiningPeerId(spec.peerIdPrefix(), self.toString()), stateMachine);
    }

    /** The id of a replica added to a running group: made from its address, so that it and the leader that adds it agree. */
    static RaftPeerId joiningPeerId(String prefix, String address) {
        return RaftPeerId.valueOf(prefix + "-" + address.replaceAll("[^A-Za-z0-9]", "_"));
    }

    private static RaftReplica start(Path directory, GroupSpec spec, List<RaftPeer> raftPeers, HostPort selfAddress, RaftPeerId defaultSelf,
                                     BaseStateMachine stateMachine) {
        requireNonNull(stateMachine, "stateMachine is null");
        try {
            Path raftDirectory = directory.resolve("raft");
            boolean fresh = !Files.isDirectory(raftDirectory);
            Files.createDirectories(raftDirectory);
            // The id this replica had when its storage was formatted: after membership changes it need not be its position in a
            // peer list given now
            Path idFile = directory.resolve("raft-peer-id");
            RaftPeerId self = Files.exists(idFile) ? RaftPeerId.valueOf(Files.readString(idFile).trim()) : defaultSelf;
            if (!Files.exists(idFile)) {
                Files.writeString(idFile, self + "\n");
            }
            RaftProperties properties = new RaftProperties();
            RaftConfigKeys.Rpc.setType(properties, SupportedRpcType.NETTY);
            NettyConfigKeys.Server.setHost(properties, selfAddress.host());
            NettyConfigKeys.Server.setPort(properties, selfAddress.port());
            RaftServerConfigKeys.setStorageDir(properties, List.of(raftDirectory.toFile()));
            // Acknowledge once the entry is written to the OS; Ratis fsyncs the log in groups right after.
            // Ratis then fsyncs the log on its own executor, without holding up acknowledgements
            RaftServerConfigKeys.Log.setUnsafeFlushEnabled(properties, !spec.logSync());
            RaftServerConfigKeys.Log.setSegmentSizeMax(properties, SizeInBytes.valueOf("64MB"));
            // No log entry for each advance of the commit index: Raft does not need it (a restarted replica
            // learns the commit index from its leader, or as leader by committing an entry of its own term,
            // and the state machine keeps its own applied index), and on a busy MDT these entries were one
            // log append, write and flush per metadata change beside the change's own (design note 56)
            RaftServerConfigKeys.Log.setLogMetadataEnabled(properties, false);
            // Entries are applied as they commit; the cache only serves followers that fall a little
            // behind (further back they are read from the segment files). Ratis's default of 200 MB of
            // entries on the heap kept G1 marking all the time on a 2 GB server.
            RaftServerConfigKeys.Log.setSegmentCacheNumMax(properties, 2);
            RaftServerConfigKeys.Log.setSegmentCacheSizeMax(properties, SizeInBytes.valueOf("64MB"));
            // Reads (on the leader only: callers refuse them elsewhere) are linearizable: the leader answers once it has
            // applied what was committed when the read arrived, and confirms it still leads by its lease (heartbeats
            // a majority answered within the election timeout) rather than by a round of heartbeats per read.
            RaftServerConfigKeys.Read.setOption(properties, RaftServerConfigKeys.Read.Option.LINEARIZABLE);
            RaftServerConfigKeys.Read.setLeaderLeaseEnabled(properties, true);
            RaftServerConfigKeys.Log.Appender.setWaitTimeMin(properties, TimeDuration.ZERO);
            RaftServerConfigKeys.Log.Appender.setInstallSnapshotEnabled(properties, spec.snapshotsHoldState());
            RaftServerConfigKeys.Snapshot.setAutoTriggerEnabled(properties, true);
            RaftServerConfigKeys.Snapshot.setAutoTriggerThreshold(properties, spec.snapshotEveryEntries());
            RaftServerConfigKeys.Snapshot.setRetentionFileNum(properties, 2);
            RaftServerConfigKeys.Rpc.setTimeoutMin(properties, TimeDuration.valueOf(300, java.util.concurrent.TimeUnit.MILLISECONDS));
            RaftServerConfigKeys.Rpc.setTimeoutMax(properties, TimeDuration.valueOf(600, java.util.concurrent.TimeUnit.MILLISECONDS));

            RaftGroupId groupId = RaftGroupId.valueOf(UUID.nameUUIDFromBytes(spec.name().getBytes(StandardCharsets.UTF_8)));
            // A restarted replica's members are in its log; a peer list it was given that does not name it by the id it was
            // formatted with (an added replica, or one after members changed) would be refused, so it then starts from none
            boolean namesSelf = raftPeers.stream().anyMatch(peer -> peer.getId().equals(self));
            RaftGroup group = RaftGroup.valueOf(groupId, fresh || namesSelf ? raftPeers : List.of());
            RaftServer server = RaftServer.newBuilder()
                    .setServerId(self)
                    .setGroup(group)
                    .setProperties(properties)
                    .setStateMachine(stateMachine)
                    .setOption(fresh ? RaftStorage.StartupOption.FORMAT : RaftStorage.StartupOption.RECOVER)
                    .build();
            server.start();
            RaftReplica raft = new RaftReplica(server, group, self, selfAddress.toString(), spec.peerIdPrefix());
            if (raft.currentPeers().size() == 1 && raft.currentPeers().iterator().next().getId().equals(self)) {
                raft.awaitLeader(30_000); // with several replicas a leader comes once a majority is up; until then: NOT_LEADER
            }
            return raft;
        } catch (IOException e) {
            throw new PlinthException(ErrorCode.IO_ERROR, "cannot start Raft group " + spec.name() + ": " + e.getMessage(), e);
        }
    }

    private void awaitLeader(long timeoutMillis) throws IOException {
        long deadline = System.nanoTime() + timeoutMillis * 1_000_000;
        while (System.nanoTime() < deadline) {
            var division = server.getDivision(group.getGroupId());
            if (division.getInfo().isLeader() && division.getInfo().isLeaderReady()) {
                return;
            }
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IOException("interrupted while waiting for a leader");
            }
        }
        throw new IOException("the single replica did not become leader in " + timeoutMillis + " ms");
    }

    /** Whether this replica leads its group and has applied every entry of earlier terms, so its state is current. */
    public boolean isLeaderReady() {
        try {
            var info = server.getDivision(group.getGroupId()).getInfo();
            return info.isLeader() && info.isLeaderReady();
        } catch (IOException e) {
            return false;
        }
    }

    /** The Raft address of the replica this one believes leads, or null while it knows none. */
    public String leaderAddress() {
        try {
            RaftPeerId leader = server.getDivision(group.getGroupId()).getInfo().getLeaderId();
            RaftPeer peer = leader == null ? null : server.getDivision(group.getGroupId()).getRaftConf().getPeer(leader);
            return peer == null ? null : peer.getAddress();
        } catch (IOException e) {
            return null;
        }
    }

    /** The group's Raft addresses, in the order of their ids, as its current configuration has them. */
    public List<String> peerAddresses() {
        return currentPeers().stream().sorted(java.util.Comparator.comparing(peer -> peer.getId().toString())).map(RaftPeer::getAddress).toList();
    }

    private java.util.Collection<RaftPeer> currentPeers() {
        try {
            return server.getDivision(group.getGroupId()).getRaftConf().getCurrentPeers();
        } catch (IOException e) {
            return group.getPeers();
        }
    }

    /**
     * On the leader: makes the group's members its current ones plus {@code add} (null: none)
     * less {@code remove} (null: none). Ratis brings an added replica up to date before the new
     * configuration is committed; completes once it is. A replica added must have been started
     * with {@link #join}.
     */
    public CompletableFuture<List<String>> changePeers(String add, String remove) {
        List<RaftPeer> next = new java.util.ArrayList<>();
        for (RaftPeer peer : currentPeers()) {
            if (!peer.getAddress().equals(remove)) {
                next.add(peer);
            }
        }
        if (remove != null && next.size() == currentPeers().size()) {
            return CompletableFuture.failedFuture(new PlinthException(ErrorCode.NOT_FOUND, remove + " is not a member of the group"));
        }
        if (add != null) {
            if (next.stream().anyMatch(peer -> peer.getAddress().equals(add))) {
                return CompletableFuture.failedFuture(new PlinthException(ErrorCode.ALREADY_EXISTS, add + " is a member of the group already"));
            }
            next.add(RaftPeer.newBuilder().setId(joiningPeerId(peerIdPrefix, add)).setAddress(add).build());
        }
        if (next.isEmpty()) {
            return CompletableFuture.failedFuture(new PlinthException(ErrorCode.INVALID_ARGUMENT, "a group keeps at least one member"));
        }
        var request = new org.apache.ratis.protocol.SetConfigurationRequest(clientId, self, group.getGroupId(), callIds.incrementAndGet(), next);
        try {
            return server.setConfigurationAsync(request).thenApply(reply -> {
                if (!reply.isSuccess()) {
                    content(reply); // throws the reply's error
                }
                return peerAddresses();
            });
        } catch (IOException e) {
            return CompletableFuture.failedFuture(new PlinthException(ErrorCode.UNAVAILABLE, "changing the group failed: " + e.getMessage(), e));
        }
    }

    /** This replica's Raft address. */
    public String selfAddress() {
        return selfAddress;
    }

    /** Whether this replica leads its group now. */
    public boolean isLeader() {
        try {
            return server.getDivision(group.getGroupId()).getInfo().isLeader();
        } catch (IOException e) {
            return false;
        }
    }

    /**
     * The term in which this replica leads its group, or -1 where it does not lead: what a leader
     * stamps on requests to others, so that they can refuse a former leader still at work (paused
     * or cut off) once they have heard from its successor.
     */
    public long leaderTerm() {
        try {
            var info = server.getDivision(group.getGroupId()).getInfo();
            return info.isLeader() ? info.getCurrentTerm() : -1;
        } catch (IOException e) {
            return -1;
        }
    }

    /** The highest log index this replica knows to be committed (-1 while unknown). */
    public long commitIndex() {
        try {
            return server.getDivision(group.getGroupId()).getRaftLog().getLastCommittedIndex();
        } catch (IOException e) {
            return -1;
        }
    }

    /** Whether the group is this replica alone (asked on every query: the answer is kept per configuration). */
    public boolean isSingleReplica() {
        try {
            org.apache.ratis.server.RaftConfiguration conf = server.getDivision(group.getGroupId()).getRaftConf();
            SingleAnswer known = single;
            if (known == null || known.conf() != conf) {
                java.util.Collection<RaftPeer> peers = conf.getCurrentPeers();
                known = new SingleAnswer(conf, peers.size() == 1 && peers.iterator().next().getId().equals(self));
                single = known;
            }
            return known.single();
        } catch (IOException e) {
            return false;
        }
    }

    private record SingleAnswer(org.apache.ratis.server.RaftConfiguration conf, boolean single) {}

    private volatile SingleAnswer single;

    /** Appends a change to the log and returns its result once applied. */
    public CompletableFuture<byte[]> write(byte[] entry) {
        return submit(entry, RaftClientRequest.writeRequestType());
    }

    /** A linearizable read through Raft (ReadIndex), for groups with several replicas. */
    public CompletableFuture<byte[]> read(byte[] query) {
        return submit(query, RaftClientRequest.readRequestType());
    }

    private CompletableFuture<byte[]> submit(byte[] payload, RaftClientRequest.Type type) {
        RaftClientRequest request = RaftClientRequest.newBuilder()
                .setClientId(clientId)
                .setServerId(self)
                .setGroupId(group.getGroupId())
                .setCallId(callIds.incrementAndGet())
                .setMessage(Message.valueOf(ByteString.copyFrom(payload)))
                .setType(type)
                .build();
        try {
            // The division's own method submits on this thread; RaftServer's hands the request to a client
            // executor and waits for it there: two thread switches per change, measured at ~0.3 ms here.
            return ((RaftClientAsynchronousProtocol) server.getDivision(group.getGroupId())).submitClientRequestAsync(request)
                    .handle((reply, failure) -> {
                        if (failure != null) {
                            throw failed(failure);
                        }
                        return content(reply);
                    });
        } catch (IOException e) {
            return CompletableFuture.failedFuture(new PlinthException(ErrorCode.UNAVAILABLE, group.getGroupId() + " log: " + e.getMessage(), e));
        }
    }

    /**
     * A request Ratis failed rather than answered (it fails a read, or a write, with the exception
     * itself when this replica stops leading meanwhile), as a typed error: NOT_LEADER where
     * another replica may take it, UNAVAILABLE otherwise. Raw, it reached clients as INTERNAL.
     */
    private PlinthException failed(Throwable failure) {
        Throwable cause = failure;
        while ((cause instanceof java.util.concurrent.CompletionException || cause instanceof java.util.concurrent.ExecutionException)
                && cause.getCause() != null) {
            cause = cause.getCause();
        }
        if (cause instanceof PlinthException plinth) {
            return plinth;
        }
        if (cause instanceof org.apache.ratis.protocol.exceptions.NotLeaderException
                || cause instanceof org.apache.ratis.protocol.exceptions.LeaderNotReadyException
                || cause instanceof org.apache.ratis.protocol.exceptions.LeaderSteppingDownException) {
            return new PlinthException(ErrorCode.NOT_LEADER, cause.getMessage());
        }
        return new PlinthException(ErrorCode.UNAVAILABLE, group.getGroupId() + " log: " + cause, cause);
    }

    private static byte[] content(RaftClientReply reply) {
        if (reply.isSuccess()) {
            return reply.getMessage().getContent().toByteArray();
        }
        if (reply.getNotLeaderException() != null) {
            throw new PlinthException(ErrorCode.NOT_LEADER, reply.getNotLeaderException().getMessage());
        }
        Exception failure = reply.getException();
        throw new PlinthException(ErrorCode.UNAVAILABLE, "Raft log: " + (failure == null ? "request failed" : failure.getMessage()));
    }

    @Override
    public void close() {
        try {
            server.close();
        } catch (IOException e) {
            throw new PlinthException(ErrorCode.IO_ERROR, "closing the Raft log failed: " + e.getMessage(), e);
        }
    }
}
