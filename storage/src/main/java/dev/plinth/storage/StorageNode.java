package dev.plinth.storage;

import static java.util.Objects.requireNonNull;

import dev.plinth.common.Config;
import dev.plinth.common.ErrorCode;
import dev.plinth.common.FaultPoints;
import dev.plinth.common.PlinthException;
import dev.plinth.common.Settings;
import dev.plinth.wire.HostPort;
import dev.plinth.wire.MgmtClient;
import dev.plinth.wire.messages.MgmtMessages.ChainInfo;
import dev.plinth.wire.messages.MgmtMessages.ReportUnreachable;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import dev.plinth.wire.RpcClient;
import dev.plinth.wire.RpcConnections;
import dev.plinth.wire.messages.MgmtMessages.ClusterMap;
import dev.plinth.wire.messages.MgmtMessages.GetClusterMap;
import dev.plinth.wire.messages.MgmtMessages.Heartbeat;
import dev.plinth.wire.messages.MgmtMessages.HeartbeatReply;
import dev.plinth.wire.messages.MgmtMessages.NodeInfo;
import dev.plinth.wire.messages.MgmtMessages.RegisterNode;
import dev.plinth.wire.messages.MgmtMessages.TargetInfo;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A storage node's life with mgmt: it registers its targets, heartbeats every second (a node
 * whose heartbeats mgmt stops answering stops taking writes after the node timeout), keeps the
 * cluster map current (the heartbeat reply says when it changed), resyncs targets that come
 * back to their chains ({@link Resync}), and scrubs its chunks ({@link Scrubber}). The same class serves the all-in-one server, where mgmt
 * is in the same process and reached over the same RPC layer.
 */
public final class StorageNode implements ClusterView, AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(StorageNode.class);
    private static final long REFRESH_MIN_INTERVAL_NANOS = TimeUnit.MILLISECONDS.toNanos(50);

    private final int nodeId;
    private volatile MgmtClient mgmt;
    private final RpcConnections connections;
    private final Config config;
    private final long nodeTimeoutNanos;
    private final StorageService service;
    private final ScheduledExecutorService heartbeats;
    /** Counts what the targets' chunks take on disk again now and then (a walk of each target: not on the heartbeat's thread). */
    private final ScheduledExecutorService recounts;
    private static final long RECOUNT_PERIOD_SECONDS = 60;
    private final Resync resync;
    private final Scrubber scrubber;
    private volatile ClusterMap map;
    private volatile long lastRefreshNanos;
    /** When the last heartbeat that mgmt answered was sent: mgmt heard from us no earlier. */
    private volatile long leaseStartNanos;
    private volatile HostPort rpcAddress;

    public StorageNode(int nodeId, List<ChunkStore> targets, RpcConnections connections, Config config,
                       io.prometheus.metrics.model.registry.PrometheusRegistry registry) {
        this.nodeId = nodeId;
        this.config = requireNonNull(config, "config is null");
        this.connections = requireNonNull(connections, "connections is null");
        this.nodeTimeoutNanos = TimeUnit.MILLISECONDS.toNanos(config.get(Settings.MGMT_NODE_TIMEOUT_MILLIS));
        this.service = new StorageService(config.get(Settings.STORAGE_IO_THREADS), this, registry);
        targets.forEach(service::addTarget);
        this.heartbeats = Executors.newSingleThreadScheduledExecutor(Thread.ofPlatform().name("storage-heartbeat").daemon().factory());
        this.recounts = Executors.newSingleThreadScheduledExecutor(Thread.ofPlatform().name("storage-recount").daemon().factory());
        this.resync = new Resync(this, service, config.get(Settings.STORAGE_RESYNC_BYTES_PER_SECOND), registry);
        this.scrubber = new Scrubber(this, service, config.get(Settings.STORAGE_SCRUB_BYTES_PER_SECOND),
                config.get(Settings.STORAGE_SCRUB_INTERVAL_MILLIS), registry);
        service.onDamagedChunk(scrubber::suspect);
        this.leaseStartNanos = System.nanoTime() - nodeTimeoutNanos - 1; // no writes before mgmt has answered
    }

    public StorageService service() {
        return service;
    }

    public int nodeId() {
        return nodeId;
    }

    /**
     * Registers with mgmt at {@code mgmtReplicas} (one address, or a mgmt group's; retrying for a
     * minute while it is unavailable) and starts heartbeats and resync; {@code address} is this
     * node's RPC listener.
     */
    public void start(HostPort address, List<HostPort> mgmtReplicas) {
        this.rpcAddress = requireNonNull(address, "address is null");
        this.mgmt = new MgmtClient(connections, mgmtReplicas, config);
        FaultPoints.delay(FaultPoints.STORAGE_REGISTER_DELAY_MILLIS); // widens the window in which requests find no cluster map
        register();
        long period = Math.min(1000, Math.max(50, TimeUnit.NANOSECONDS.toMillis(nodeTimeoutNanos) / 5));
        heartbeats.scheduleWithFixedDelay(this::heartbeat, period, period, TimeUnit.MILLISECONDS);
        resync.start();
        scrubber.start();
        recounts.scheduleWithFixedDelay(() -> service.targets().forEach(ChunkStore::recountStoredBytes), RECOUNT_PERIOD_SECONDS,
                RECOUNT_PERIOD_SECONDS, TimeUnit.SECONDS);
    }

    private void register() {
        List<ChunkStore> targets = service.targets().stream().filter(target -> target.failure() == null).toList();
        RegisterNode request = new RegisterNode(nodeId, rpcAddress.toString(), targets.stream().map(service::usageOf).toList(),
                targets.stream().map(t -> t.root().toString()).toList());
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (true) {
            long sent = System.nanoTime();
            try {
                map = mgmt().request(request);
                leaseStartNanos = sent;
                lastRefreshNanos = sent;
                return;
            } catch (PlinthException e) {
                if (!e.code().retryable() || System.nanoTime() > deadline) {
                    throw e;
                }
                LOG.info("waiting for mgmt at {}: {}", mgmt.replicas(), e.getMessage());
                sleep(500);
            }
        }
    }

    private void heartbeat() {
        long sent = System.nanoTime();
        try {
            HeartbeatReply reply = mgmt().request(new Heartbeat(nodeId, service.usage()));
            if (reply.mapVersion() != map.version()) {
                fetchMap(); // the map first: a node back from a pause must see its new chains before it takes writes again
            }
            leaseStartNanos = sent;
        } catch (PlinthException e) {
            if (e.code() == ErrorCode.STALE_HANDLE) {
                LOG.warn("mgmt does not know node {}: registering again", nodeId);
                try {
                    register();
                } catch (RuntimeException again) {
                    LOG.warn("registering with mgmt failed: {}", again.getMessage());
                }
            } else {
                LOG.warn("heartbeat to mgmt failed: {}", e.getMessage());
            }
        } catch (RuntimeException e) {
            LOG.warn("heartbeat to mgmt failed: {}", e.toString());
        }
    }

    private MgmtClient mgmt() {
        return mgmt;
    }

    @Override
    public ClusterMap map() {
        ClusterMap current = map;
        if (current == null) {
            // listening already (its address goes to mgmt in the registration), not yet registered: a retry will find it ready
            throw new PlinthException(ErrorCode.NOT_READY, "storage node " + nodeId + " has not registered with mgmt yet");
        }
        return current;
    }

    @Override
    public ClusterMap refresh() {
        map(); // not before the registration's map
        long now = System.nanoTime();
        if (now - lastRefreshNanos >= REFRESH_MIN_INTERVAL_NANOS) {
            fetchMap();
        }
        return map;
    }

    /** Fetches the map from mgmt now and takes it if it is not older than ours. */
    private void fetchMap() {
        lastRefreshNanos = System.nanoTime();
        adoptIfNotOlder(mgmt().request(new GetClusterMap()));
    }

    /** Takes a map mgmt answered with, unless ours is newer already (answers can cross). */
    private void adoptIfNotOlder(ClusterMap next) {
        if (next.version() >= map.version()) {
            adopt(next);
        }
    }

    /** Takes a newer map; writes still on their way down chains that changed fail now (their senders retry on the new chain). */
    private synchronized void adopt(ClusterMap next) {
        ClusterMap previous = map;
        map = next;
        if (previous != null && previous.version() != next.version()) {
            for (dev.plinth.wire.messages.MgmtMessages.ChainInfo chain : next.chains()) {
                dev.plinth.wire.messages.MgmtMessages.ChainInfo before = previous.chain(chain.chainId());
                if (before != null && before.version() != chain.version()) {
                    service.chainChanged(chain.chainId(), chain.version());
                }
            }
        }
    }

    @Override
    public boolean leaseValid() {
        return System.nanoTime() - leaseStartNanos < nodeTimeoutNanos;
    }

    @Override
    public RpcClient connectionTo(int targetId) {
        ClusterMap current = map();
        TargetInfo target = current.target(targetId);
        NodeInfo node = target == null ? null : current.node(target.nodeId());
        if (node == null) {
            throw new PlinthException(ErrorCode.CHAIN_CHANGED, "target " + targetId + " is not in this node's cluster map");
        }
        return connections.get(HostPort.parse(node.rpcAddress()));
    }

    /** (chain id, chain version, unreachable target) already reported: one report each is enough. */
    private final Set<List<Long>> reportedUnreachable = ConcurrentHashMap.newKeySet();

    @Override
    public void reportUnreachable(ChainInfo chain, int fromTarget, int toTarget) {
        List<Long> key = List.of((long) chain.chainId(), chain.version(), (long) toTarget);
        if (reportedUnreachable.size() > 1024) {
            reportedUnreachable.clear(); // bounded; a repeated report costs mgmt one refusal at most
        }
        if (!reportedUnreachable.add(key)) {
            return;
        }
        LOG.warn("target {} cannot reach target {} (chain {} version {}): telling mgmt", fromTarget, toTarget, chain.chainId(), chain.version());
        try {
            heartbeats.execute(() -> {
                try {
                    adoptIfNotOlder(mgmt().request(new ReportUnreachable(chain.chainId(), chain.version(), fromTarget, toTarget)));
                } catch (PlinthException e) {
                    LOG.info("mgmt did not act on target {} being unreachable: {}", toTarget, e.getMessage());
                }
            });
        } catch (java.util.concurrent.RejectedExecutionException e) {
            // closing
        }
    }

    /** Reports a finished resync to mgmt. */
    ClusterMap reportSynced(dev.plinth.wire.messages.MgmtMessages.ChainSynced report) {
        ClusterMap next = mgmt().request(report);
        adoptIfNotOlder(next);
        return next;
    }

    /** A whole chunk as a replica holds it (CRCs and version read with it); checked by whoever installs it. */
    record ReplicaCopy(java.nio.ByteBuffer data, List<Integer> blockCrcs, long version) {}

    /**
     * Reads the whole of {@code chunk} (of chain {@code chainId}) from target {@code source} and
     * hands it to {@code use} while its buffer is valid; {@code use} gets null when the replica
     * does not hold the chunk. For resync and repair.
     */
    <T> T withReplicaCopy(int source, int chainId, dev.plinth.wire.messages.StorageMessages.ChunkId chunk,
                          java.util.function.Function<ReplicaCopy, T> use) {
        var read = new dev.plinth.wire.messages.StorageMessages.ReadChunk(source, chunk, 0, dev.plinth.common.Layout.REPLICATED_CHUNK_SIZE_MAX,
                chainId);
        try (dev.plinth.wire.RpcResponse<dev.plinth.wire.messages.StorageMessages.ReadChunkResult> response = connectionTo(source).call(read)) {
            var header = response.message();
            if (header.chunkVersion() == 0) {
                return use.apply(null);
            }
            java.nio.ByteBuffer data = response.data() == null ? java.nio.ByteBuffer.allocate(0) : response.data().nioBuffer();
            return use.apply(new ReplicaCopy(data, header.blockCrcs(), header.chunkVersion()));
        }
    }

    /** Stops a background worker of this node (resync, scrub): interrupts it and waits a little. */
    static void stop(Thread worker) {
        worker.interrupt();
        try {
            worker.join(5000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new PlinthException(ErrorCode.INTERRUPTED, "interrupted");
        }
    }

    @Override
    public void close() {
        heartbeats.shutdownNow();
        recounts.shutdownNow();
        scrubber.close();
        resync.close();
        service.close();
    }
}
