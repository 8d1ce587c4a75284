package dev.plinth.client;

import static java.util.Objects.requireNonNull;

import dev.plinth.common.Credentials;
import dev.plinth.common.ErrorCode;
import dev.plinth.common.FileType;
import dev.plinth.common.InodeId;
import dev.plinth.common.Layout;
import dev.plinth.common.Names;
import dev.plinth.common.NonBlocking;
import dev.plinth.common.Permissions;
import dev.plinth.common.PlinthException;
import dev.plinth.common.Settings;
import dev.plinth.wire.HostPort;
import dev.plinth.wire.MgmtClient;
import dev.plinth.wire.RpcClient;
import dev.plinth.wire.RpcConnections;
import dev.plinth.wire.messages.BackupMessages;
import dev.plinth.wire.messages.FsckMessages;
import dev.plinth.wire.messages.MdtGroupMessages;
import dev.plinth.wire.messages.StorageMessages;
import dev.plinth.wire.messages.MetaMessages;
import dev.plinth.wire.messages.MgmtMessages;
import dev.plinth.wire.messages.MetaMessages.Attributes;
import dev.plinth.wire.messages.MetaMessages.AttributesReply;
import dev.plinth.wire.messages.MetaMessages.CreateReply;
import dev.plinth.wire.messages.MetaMessages.DirEntry;
import dev.plinth.wire.messages.MetaMessages.OpHeader;
import dev.plinth.wire.messages.MetaMessages.ReadDirReply;
import dev.plinth.wire.messages.MetaMessages.SessionReply;
import dev.plinth.wire.MdtReplicas;
import dev.plinth.wire.messages.MetaMessages.StatFsReply;
import dev.plinth.wire.messages.MgmtMessages.ChainInfo;
import dev.plinth.wire.messages.MgmtMessages.ClusterMap;
import dev.plinth.wire.messages.MgmtMessages.GetClusterMap;
import dev.plinth.wire.messages.MgmtMessages.NodeInfo;
import dev.plinth.wire.messages.MgmtMessages.TargetInfo;
import dev.plinth.wire.messages.MgmtMessages.UpdatePool;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The native client: names and layouts from the metadata service, data straight from storage
 * targets. Holds a session (renewed in the background) under which files are opened, so the
 * cluster knows what this client has open. Everything else (CLI, FUSE, S3, the NIO provider) is
 * built on this class. Thread-safe.
 */
public final class PlinthClient implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(PlinthClient.class);
    private static final int READDIR_PAGE = 1024;

    private final ClientOptions options;
    private final RpcConnections connections;
    private final MgmtClient mgmt;
    private final long timeoutMillis;
    private final long retryMillis;
    private final AtomicLong requestIds = new AtomicLong();
    private final ScheduledExecutorService renewer;
    private final long clientId;
    private final LocalChunkReader localReader;
    private final java.util.concurrent.ExecutorService localReadExecutor;
    private volatile ClusterMap clusterMap;
    private final MdtReplicas mdts;
    private final JobStats jobStats;
    private final ObjectAccess objects = new ObjectAccess(this);
    private final WriteBudget writeBudget;
    private final ReadAheadBudget readAheadBudget;
    /**
     * Write-behind copies of large pieces, shared by all files: at most 16 MiB of them, kept for
     * reuse (more would be direct memory held for good; pieces beyond it use Netty's pool).
     */
    private final AlignedWriteBuffers writeBuffers;
    private final String ownJob;
    private final HsmAccess hsm;

    private PlinthClient(ClientOptions options, RpcConnections connections) {
        this.options = options;
        this.connections = connections;
        this.mgmt = new MgmtClient(connections, options.servers(), options.config());
        this.timeoutMillis = options.config().get(Settings.RPC_TIMEOUT_MILLIS);
        this.retryMillis = options.config().get(Settings.CLIENT_RETRY_TIMEOUT_MILLIS);
        this.clusterMap = Retry.call(timeoutMillis, () -> mgmt().request(new GetClusterMap()), null);
        this.mdts = new MdtReplicas(connections, () -> clusterMap, options.server(), options.config());
        SessionReply session = Retry.call(timeoutMillis, () -> mdts.request(0,
                new MetaMessages.OpenSession(new OpHeader(0, 0, options.credentials(), 0), options.clientName())), null);
        this.clientId = session.clientId();
        if (options.config().get(Settings.CLIENT_SHORT_CIRCUIT_READS)) {
            this.localReader = new LocalChunkReader(() -> clusterMap);
            // file reads block: a few platform threads, a bounded queue, the caller runs them when it is full
            this.localReadExecutor = new java.util.concurrent.ThreadPoolExecutor(4, 4, 60, TimeUnit.SECONDS,
                    new java.util.concurrent.ArrayBlockingQueue<>(256), Thread.ofPlatform().name("plinth-local-read-", 0).daemon().factory(),
                    new java.util.concurrent.ThreadPoolExecutor.CallerRunsPolicy());
        } else {
            this.localReader = null;
            this.localReadExecutor = null;
        }
        this.jobStats = new JobStats(options.config().get(Settings.CLIENT_JOB_STATS_MAX));
        long directMemory = io.netty.util.internal.PlatformDependent.maxDirectMemory();
        this.writeBudget = new WriteBudget(options.config().get(Settings.CLIENT_WRITE_BEHIND_BYTES), directMemory);
        this.readAheadBudget = new ReadAheadBudget(options.config().get(Settings.CLIENT_READAHEAD_TOTAL_BYTES), directMemory);
        this.writeBuffers = new AlignedWriteBuffers(
                (int) Math.min(16, options.config().get(Settings.CLIENT_WRITE_BEHIND_BYTES) / AlignedWriteBuffers.BUFFER_BYTES));
        this.hsm = new HsmAccess(this, options.config().get(Settings.HSM_RESTORE_WAIT_MILLIS));
        this.ownJob = JobStats.jobOf(System.getenv(), jobIdVariables(), options.clientName(), options.credentials().uid());
        this.renewer = Executors.newSingleThreadScheduledExecutor(Thread.ofPlatform().name("plinth-session").daemon().factory());
        long period = Math.max(100, session.leaseMillis() / 3);
        renewer.scheduleWithFixedDelay(this::renewSession, period, period, TimeUnit.MILLISECONDS);
        renewer.scheduleWithFixedDelay(this::reportJobStats, JOB_REPORT_MILLIS, JOB_REPORT_MILLIS, TimeUnit.MILLISECONDS);
        renewer.scheduleWithFixedDelay(this::flushAtimes, ATIME_FLUSH_MILLIS, ATIME_FLUSH_MILLIS, TimeUnit.MILLISECONDS);
    }

    public static PlinthClient connect(ClientOptions options) {
        requireNonNull(options, "options is null");
        RpcConnections connections = new RpcConnections(options.secret(), options.clientName(), options.config());
        try {
            return new PlinthClient(options, connections);
        } catch (RuntimeException e) {
            connections.close();
            throw e;
        }
    }

    public ClientOptions options() {
        return options;
    }

    /** The deadline of one request. */
    long timeoutMillis() {
        return timeoutMillis;
    }

    /** How long a call retries through unavailability (0: forever). */
    long retryMillis() {
        return retryMillis;
    }

    /**
     * Who the current call acts for: the FUSE mount and the S3 gateway serve many users through
     * one client, so each request runs with its caller's credentials bound here.
     */
    public static final ScopedValue<Credentials> CALLER = ScopedValue.newInstance();

    /**
     * Whether the current call's caller has given up (a FUSE request interrupted by a signal):
     * waits and retries check it, so Ctrl-C reaches a job blocked on an unavailable cluster under a
     * hard mount.
     */
    public static final ScopedValue<java.util.function.BooleanSupplier> CANCELLED = ScopedValue.newInstance();

    WriteBudget writeBudget() {
        return writeBudget;
    }

    ReadAheadBudget readAheadBudget() {
        return readAheadBudget;
    }

    /** Fails with INTERRUPTED if the current call's caller has given up. */
    static void checkCancelled() {
        if (CANCELLED.isBound() && CANCELLED.get().getAsBoolean()) {
            throw new PlinthException(ErrorCode.INTERRUPTED, "the caller was interrupted");
        }
    }

    /** Waits for {@code future}, giving up if the caller does ({@link #CANCELLED}). */
    static <T> T await(java.util.concurrent.CompletableFuture<T> future) {
        if (!future.isDone()) {
            NonBlocking.check("a call answered later");
        }
        if (CANCELLED.isBound()) {
            while (!future.isDone()) {
                checkCancelled();
                try {
                    return future.get(100, TimeUnit.MILLISECONDS);
                } catch (java.util.concurrent.TimeoutException e) {
                    // check again
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new PlinthException(ErrorCode.INTERRUPTED, "interrupted");
                } catch (java.util.concurrent.ExecutionException e) {
                    break; // join below reports it as usual
                }
            }
        }
        return future.join();
    }

    /** The credentials of the current call: the bound {@link #CALLER}, else this client's own. */
    public Credentials caller() {
        return CALLER.isBound() ? CALLER.get() : options.credentials();
    }

    /** What this client's deadlines and leases are read against. */
    public dev.plinth.common.Clock clock() {
        return options.clock();
    }

    /** The calls that serve an object store over this client's namespace (the S3 gateway). */
    public ObjectAccess objects() {
        return objects;
    }

    /** The short-circuit reader, or null when short-circuit reads are off. */
    LocalChunkReader localReader() {
        return localReader;
    }

    java.util.concurrent.Executor localReadExecutor() {
        return localReadExecutor;
    }

    /** Bytes of read-ahead this client holds now, all its open files together (at most {@code client.readahead-total-bytes}). */
    public long readAheadBytesHeld() {
        return readAheadBudget.bytesHeld();
    }

    /** How many chunk pieces were read directly from local target files (0 when short-circuit reads are off). */
    public long shortCircuitReads() {
        return localReader == null ? 0 : localReader.localReads();
    }

    private static final long JOB_REPORT_MILLIS = 2000;

    /**
     * The job an operation belongs to: the FUSE mount binds each request's caller's job here; a
     * program using the client directly belongs to the job named in its own environment.
     */
    public static final ScopedValue<String> JOB = ScopedValue.newInstance();

    /** The environment variables that name a job ({@code client.job-id-variables}). */
    public List<String> jobIdVariables() {
        return java.util.Arrays.stream(options.config().get(Settings.CLIENT_JOB_ID_VARIABLES).split(",")).map(String::strip)
                .filter(v -> !v.isEmpty()).toList();
    }

    String currentJob() {
        return JOB.isBound() ? JOB.get() : ownJob;
    }

    AlignedWriteBuffers writeBuffers() {
        return writeBuffers;
    }

    /** This client's I/O per job. */
    public JobStats jobStats() {
        return jobStats;
    }

    private void reportJobStats() {
        List<MgmtMessages.JobCounters> jobs = jobStats.snapshot();
        if (jobs.isEmpty()) {
            return;
        }
        try {
            mgmt().request(new MgmtMessages.ReportJobStats(clientId, options.clientName(), jobs));
        } catch (RuntimeException e) {
            LOG.debug("job statistics not reported: {}", e.getMessage());
        }
    }

    /** Every job's I/O across the cluster, as mgmt has it from the clients' reports. */
    public List<MgmtMessages.JobStat> clusterJobStats() {
        return Retry.call(timeoutMillis, () -> mgmt().<MgmtMessages.JobStatsReply>request(new MgmtMessages.GetJobStats()), null).jobs();
    }

    private volatile boolean closing;
    /** When the current run of failed renewals began (System.nanoTime), and when it was last reported; 0: renewals succeed. */
    private long renewalFailingSince;
    private long renewalFailureReported;
    private static final long RENEWAL_REPORT_INTERVAL_NANOS = TimeUnit.MINUTES.toNanos(1);

    /**
     * Renews this client's session. A metadata service that stays away is reported when renewals
     * start failing and then once a minute, not at every try; its return is reported too.
     */
    // ---- atime, as relatime keeps it

    private static final long ATIME_FLUSH_MILLIS = 1000;
    /** Reads noted and not yet sent; past this many, more are dropped until the next flush (atime is advisory). */
    private static final int ATIMES_PENDING_MAX = 16_384;
    private final java.util.Set<Long> atimesPending = java.util.concurrent.ConcurrentHashMap.newKeySet();
    /**
     * Held while a batch is taken and sent: an explicit atime (utimes) waits for a batch in flight
     * and drops its file from the next one, so a read noted before it never lands after it.
     */
    private final Object atimeBatchLock = new Object();

    /**
     * A handle read its file: where relatime would move its atime (by what the handle knows), the
     * file goes into the next batch. Reads themselves never wait for a metadata change.
     */
    void noteRead(Attributes attributes) {
        boolean due = MetaMessages.relatimeDue(attributes.atimeNanos(), attributes.mtimeNanos(), attributes.ctimeNanos(), clock().epochNanos());
        if (due && atimesPending.size() < ATIMES_PENDING_MAX) {
            atimesPending.add(attributes.inodeId());
        }
    }

    private void flushAtimes() {
        synchronized (atimeBatchLock) {
            sendAtimes();
        }
    }

    private void sendAtimes() {
        if (atimesPending.isEmpty()) {
            return;
        }
        java.util.Map<Integer, List<Long>> byMdt = new java.util.TreeMap<>();
        for (java.util.Iterator<Long> it = atimesPending.iterator(); it.hasNext(); ) {
            long inodeId = it.next();
            it.remove();
            byMdt.computeIfAbsent(InodeId.mdtIndex(inodeId), m -> new ArrayList<>()).add(inodeId);
        }
        for (List<Long> inodes : byMdt.values()) {
            try {
                for (int from = 0; from < inodes.size(); from += 4096) {
                    MetaMessages.TouchAtimes touch = new MetaMessages.TouchAtimes(header(), inodes.subList(from, Math.min(inodes.size(), from + 4096)));
                    mdts.request(InodeId.mdtIndex(inodes.get(0)), touch);
                }
            } catch (RuntimeException e) {
                LOG.debug("atime updates dropped: {}", e.toString()); // advisory: the next read of those files notes them again
            }
        }
    }

    private void renewSession() {
        for (int mdt : joinedMdts) {
            try {
                mdts.request(mdt, new MetaMessages.RenewSession(header()));
            } catch (PlinthException e) {
                if (MetaMessages.noSession(e)) {
                    joinedMdts.remove(mdt); // expired there: the next request that needs it opens it again
                }
                LOG.debug("session renewal on MDT {} failed: {}", mdt, e.getMessage());
            }
        }
        try {
            mdts.request(0, new MetaMessages.RenewSession(header()));
            if (renewalFailingSince != 0) {
                LOG.info("session renewed again after {} s of failures", (System.nanoTime() - renewalFailingSince) / 1_000_000_000);
                renewalFailingSince = 0;
            }
        } catch (RuntimeException e) {
            if (closing) {
                return; // a renewal still running while the client closes fails as the connections go: not news
            }
            long now = System.nanoTime();
            if (renewalFailingSince == 0) {
                renewalFailingSince = now;
                renewalFailureReported = now;
                LOG.warn("session renewal failed (retrying; reported again once a minute while it fails): {}", e.getMessage());
            } else if (now - renewalFailureReported >= RENEWAL_REPORT_INTERVAL_NANOS) {
                renewalFailureReported = now;
                LOG.warn("session renewal still failing after {} s: {}", (now - renewalFailingSince) / 1_000_000_000, e.getMessage());
            }
        }
    }

    /** The management service: the address (or mgmt replicas) the client was given. */
    public MgmtClient mgmt() {
        return mgmt;
    }

    OpHeader header() {
        return new OpHeader(clientId, requestIds.incrementAndGet(), caller(), 0);
    }

    OpHeader header(Credentials credentials) {
        return new OpHeader(clientId, requestIds.incrementAndGet(), credentials, 0);
    }

    /**
     * Sends a metadata request, retrying (with the same request id) through transient failures;
     * the map is fetched again between tries, in case the metadata service moved.
     */
    <R extends Record> R meta(Record request) {
        if (request instanceof MetaMessages.Mutation) {
            NonBlocking.check("a metadata change"); // goes through the log: answered later, and not to be sent twice
        }
        jobStats.metadata(currentJob());
        return followRemote(request, onMdt(MetaRouter.mdtOf(request), request));
    }

    /** {@link #meta} for a request that does not name the MDT it is for (a per-MDT queue or list): to MDT {@code mdt}. */
    <R extends Record> R metaOn(int mdt, Record request) {
        jobStats.metadata(currentJob());
        return onMdt(mdt, request);
    }

    /** Sends {@code request} to MDT {@code mdt}, retrying as {@link #meta} does. */
    private <R extends Record> R onMdt(int mdt, Record request) {
        return Retry.call(retryMillis, () -> {
            try {
                return mdts.request(mdt, request);
            } catch (PlinthException e) {
                if (mdt == 0 || !MetaMessages.noSession(e)) {
                    throw e;
                }
                joinSession(mdt); // an MDT met for the first time (or one that forgot this client): it learns the session, then answers
                return mdts.request(mdt, request);
            }
        }, this::refreshClusterMapSoon);
    }

    /** MDTs other than 0 that hold this client's session (it is renewed and closed there too). */
    private final java.util.Set<Integer> joinedMdts = java.util.concurrent.ConcurrentHashMap.newKeySet();

    /** Opens this client's session (its id from MDT 0) on MDT {@code mdt}. */
    private void joinSession(int mdt) {
        mdts.request(mdt, new MetaMessages.OpenSession(new OpHeader(clientId, 0, options.credentials(), 0), options.clientName()));
        joinedMdts.add(mdt);
    }

    /** Hops a path may take between MDTs before it is taken for a loop (symlinks that send it back and forth). */
    private static final int MDT_HOPS_MAX = 40;

    /**
     * Completes what an MDT answered about inodes another MDT holds (several MDTs): a lookup or
     * path that led there goes on at that MDT; a directory page's remote entries get their
     * attributes from theirs.
     */
    @SuppressWarnings("unchecked")
    private <R extends Record> R followRemote(Record request, R reply) {
        if (reply instanceof AttributesReply found && found.redirected()) {
            MetaMessages.ResolvePath next = request instanceof MetaMessages.ResolvePath path
                    ? path.continuedAt(found.attributes().inodeId(), found.unresolved())
                    : new MetaMessages.ResolvePath(header(((MetaMessages.Query) request).header().credentials()), found.unresolved(), false,
                            null, 0, found.attributes().inodeId());
            for (int hops = 0; hops < MDT_HOPS_MAX; hops++) {
                AttributesReply answer = onMdt(MetaRouter.mdtOf(next), next);
                if (!answer.redirected()) {
                    return (R) answer;
                }
                next = next.continuedAt(answer.attributes().inodeId(), answer.unresolved());
            }
            throw new PlinthException(ErrorCode.SYMLINK_LOOP, "a path went between MDTs " + MDT_HOPS_MAX + " times");
        }
        if (reply instanceof MetaMessages.ReadDirPlusReply page
                && page.attributes().stream().anyMatch(attributes -> (attributes.flags() & MetaMessages.FLAG_REMOTE_STUB) != 0)) {
            List<Attributes> completed = new ArrayList<>(page.attributes().size());
            for (Attributes attributes : page.attributes()) {
                if ((attributes.flags() & MetaMessages.FLAG_REMOTE_STUB) == 0) {
                    completed.add(attributes);
                    continue;
                }
                try {
                    OpHeader asked = header(((MetaMessages.Query) request).header().credentials());
                    completed.add(this.<AttributesReply>onMdt(InodeId.mdtIndex(attributes.inodeId()),
                            new MetaMessages.GetAttr(asked, attributes.inodeId())).attributes());
                } catch (PlinthException e) {
                    completed.add(attributes); // gone meanwhile: its id and type are all there is
                }
            }
            return (R) new MetaMessages.ReadDirPlusReply(page.entries(), completed, page.more(), page.xattrValues());
        }
        return reply;
    }

    // ---- cluster

    public ClusterMap clusterMap() {
        return clusterMap;
    }

    public ClusterMap refreshClusterMap() {
        ClusterMap fetched = Retry.call(timeoutMillis, () -> mgmt().<ClusterMap>request(new GetClusterMap()), null);
        lastMapRefreshNanos = System.nanoTime();
        clusterMap = fetched;
        return fetched;
    }

    private volatile long lastMapRefreshNanos;

    /**
     * Fetches the map again unless that was done in the last 100 ms: what a retry does after a
     * chain or server failed it, without every retrying piece asking mgmt at once. Must not be
     * called on a network thread. A failure to reach mgmt leaves the old map.
     */
    void refreshClusterMapSoon() {
        if (System.nanoTime() - lastMapRefreshNanos < 100_000_000L) {
            return;
        }
        lastMapRefreshNanos = System.nanoTime();
        try {
            clusterMap = mgmt().request(new GetClusterMap());
        } catch (PlinthException e) {
            LOG.debug("cluster map refresh failed: {}", e.getMessage());
        }
    }

    public ClusterMap updatePool(UpdatePool request) {
        clusterMap = mgmt().request(request);
        return clusterMap;
    }

    /** The connection to the node that serves {@code targetId}, looked up in the cluster map. */
    RpcClient storage(int targetId) {
        TargetInfo target = clusterMap.target(targetId);
        if (target == null) {
            target = refreshClusterMap().target(targetId);
            if (target == null) {
                throw new PlinthException(ErrorCode.STALE_HANDLE, "target " + targetId + " is not in the cluster map");
            }
        }
        NodeInfo node = clusterMap.node(target.nodeId());
        if (node == null) {
            throw new PlinthException(ErrorCode.UNAVAILABLE, "node " + target.nodeId() + " is unknown");
        }
        return connections.get(HostPort.parse(node.rpcAddress()));
    }

    /**
     * Where erasure-coded rows are encoded, written and decoded (blocking work, off the network
     * threads): platform threads, made on first use, mostly waiting for targets; eight keep a
     * sequential writer's rows going (design note 89). Its queue is bounded by the write
     * budget, which every row takes its share of before it is queued, and by the reads waiting.
     */
    java.util.concurrent.Executor codingExecutor() {
        java.util.concurrent.ExecutorService executor = codingExecutor;
        if (executor == null) {
            synchronized (this) {
                if (codingExecutor == null) {
                    codingExecutor = java.util.concurrent.Executors.newFixedThreadPool(CODING_THREADS,
                            Thread.ofPlatform().name("plinth-coding-", 0).daemon().factory());
                }
                executor = codingExecutor;
            }
        }
        return executor;
    }

    private static final int CODING_THREADS = 8;
    private volatile java.util.concurrent.ExecutorService codingExecutor;

    /** Where retries that may block (a map refresh) run: never on a network thread. */
    java.util.concurrent.Executor retryExecutor() {
        return java.util.concurrent.ForkJoinPool.commonPool();
    }

    /** A chain as the cluster map has it. */
    ChainInfo chain(int chainId) {
        ChainInfo chain = clusterMap.chain(chainId);
        if (chain == null) {
            chain = refreshClusterMap().chain(chainId);
            if (chain == null) {
                throw new PlinthException(ErrorCode.STALE_HANDLE, "chain " + chainId + " is not in the cluster map");
            }
        }
        return chain;
    }

    // ---- backups (root only; see BackupMessages)

    /** Has MDT {@code mdt}'s leader copy its store for a backup. */
    public BackupMessages.MdtBackup startMdtBackup(int mdt) {
        return Retry.call(retryMillis, () -> mdts.request(mdt, new BackupMessages.StartMdtBackup(header())), this::refreshClusterMapSoon);
    }

    /** Up to {@code length} bytes of file {@code name} of backup copy {@code backupId} on MDT {@code mdt}, from {@code offset}. */
    public byte[] readMdtBackup(int mdt, String backupId, String name, long offset, int length) {
        BackupMessages.ReadBackupFile request = new BackupMessages.ReadBackupFile(header(), backupId, name, offset, length);
        return Retry.call(retryMillis, () -> mdts.<BackupMessages.BackupBytes>request(mdt, request), this::refreshClusterMapSoon).data();
    }

    /** Holds (or lets go of) MDT {@code mdt}'s changes across MDTs for a backup ({@link BackupMessages.HoldIntents}). */
    public void holdIntents(int mdt, boolean hold, long leaseMillis) {
        Retry.call(retryMillis, () -> mdts.request(mdt, new BackupMessages.HoldIntents(header(), hold, leaseMillis)), this::refreshClusterMapSoon);
    }

    public void endMdtBackup(int mdt, String backupId) {
        mdts.request(mdt, new BackupMessages.EndMdtBackup(header(), backupId));
    }

    /** mgmt's whole cluster state, encoded as it keeps it on disk. */
    public byte[] mgmtStateForBackup() {
        return Retry.call(timeoutMillis, () -> mgmt().<BackupMessages.MgmtState>request(new BackupMessages.GetMgmtState()), null).state();
    }

    /**
     * Adds the replica at Raft address {@code add} to MDT {@code mdt}'s group and/or removes the one
     * at {@code remove} (either may be null); returns the group's Raft addresses after the change.
     */
    public List<String> changeMdtReplicas(int mdt, String add, String remove) {
        MdtGroupMessages.ChangeMdtReplicas request = new MdtGroupMessages.ChangeMdtReplicas(header(), add, remove);
        return Retry.call(retryMillis, () -> mdts.<MdtGroupMessages.MdtReplicaList>request(mdt, request), this::refreshClusterMapSoon).raftPeers();
    }

    // ---- fsck (root only; see FsckMessages)

    /** MDT {@code mdt}'s check of its namespace against itself. */
    /** fsck's namespace findings over every MDT in the map: each MDT's own and those across MDTs. */
    public List<FsckMessages.Finding> namespaceFindings() {
        List<FsckMessages.FsckReport> reports = new ArrayList<>();
        for (MgmtMessages.MdtInfo mdt : refreshClusterMap().mdts()) {
            reports.add(checkNamespace(mdt.mdtId()));
        }
        return FsckMessages.findings(reports);
    }

    public FsckMessages.FsckReport checkNamespace(int mdt) {
        return Retry.call(retryMillis, () -> mdts.request(mdt, new FsckMessages.CheckNamespace(header())), this::refreshClusterMapSoon);
    }

    /**
     * Every file of MDT {@code mdt} with the chains it uses (or, with {@code removed}, every removed
     * file whose chunks are being freed), in inode order, asked for a page of 1,000 at a time.
     */
    public void forEachFileChains(int mdt, boolean removed, java.util.function.Consumer<FsckMessages.FileChains> action) {
        long after = 0;
        while (true) {
            FsckMessages.ListFileChains request = new FsckMessages.ListFileChains(header(), after, 1000, removed);
            FsckMessages.FileChainList page = Retry.call(retryMillis, () -> mdts.request(mdt, request), this::refreshClusterMapSoon);
            page.files().forEach(action);
            if (!page.truncated()) {
                return;
            }
            after = page.lastInodeId();
        }
    }

    /** A page of the chunks chain {@code chain} holds on its member {@code targetId}, in chunk order after {@code startAfter}. */
    public StorageMessages.ChunkList listChunks(ChainInfo chain, int targetId, StorageMessages.ChunkId startAfter, int limit) {
        StorageMessages.ListChunks request = new StorageMessages.ListChunks(targetId, chain.chainId(), chain.version(), startAfter, limit);
        return Retry.call(retryMillis, () -> storage(targetId).request(request), this::refreshClusterMapSoon);
    }

    /** Removes every chunk of file {@code inodeId} on target {@code targetId}. */
    public void removeFileChunks(int targetId, long inodeId) {
        Retry.call(retryMillis, () -> storage(targetId).request(new StorageMessages.RemoveFile(targetId, inodeId)), this::refreshClusterMapSoon);
    }

    // ---- S3 access keys (kept by mgmt)

    public MgmtMessages.AccessKey createAccessKey(MgmtMessages.CreateAccessKey request) {
        return mgmt().request(request);
    }

    public List<MgmtMessages.AccessKey> accessKeys() {
        return Retry.call(timeoutMillis, () -> mgmt().<MgmtMessages.AccessKeyList>request(new MgmtMessages.ListAccessKeys()), null).keys();
    }

    /** The cluster's HSM archives, by id. */
    public List<MgmtMessages.ArchiveInfo> archives() {
        return Retry.call(timeoutMillis, () -> mgmt().<MgmtMessages.ArchiveList>request(new MgmtMessages.ListArchives()), null).archives();
    }

    public List<MgmtMessages.ArchiveInfo> addArchive(MgmtMessages.ArchiveInfo archive) {
        return mgmt().<MgmtMessages.ArchiveList>request(new MgmtMessages.AddArchive(archive)).archives();
    }

    public List<MgmtMessages.ArchiveInfo> removeArchive(int archiveId) {
        return mgmt().<MgmtMessages.ArchiveList>request(new MgmtMessages.RemoveArchive(archiveId)).archives();
    }

    public void deleteAccessKey(String accessKeyId) {
        mgmt().request(new MgmtMessages.DeleteAccessKey(accessKeyId));
    }

    /**
     * Capacity and inodes as statfs(2) reports them: bytes as MDT 0 counts them over the targets
     * (and its Data-on-MDT bytes), inodes summed over every MDT that answers.
     */
    public StatFsReply statFs() {
        StatFsReply first = meta(new MetaMessages.StatFs(header()));
        long inodes = first.inodes();
        for (MgmtMessages.MdtInfo mdt : clusterMap.mdts()) {
            if (mdt.mdtId() == 0) {
                continue;
            }
            try {
                StatFsReply other = mdts.request(mdt.mdtId(), new MetaMessages.StatFs(header())); // once: statfs does not wait for an MDT
                inodes += other.inodes();
            } catch (PlinthException e) {
                LOG.debug("MDT {} left out of statfs: {}", mdt.mdtId(), e.getMessage());
            }
        }
        return new StatFsReply(first.capacityBytes(), first.freeBytes(), inodes, first.blockSizeBytes());
    }

    /** One replica of an MDT as it answered just now: "leads" (with its inode count), "follows" or "unreachable". */
    public record MdtReplicaState(String rpcAddress, String state, long inodes) {}

    /** Asks each replica of MDT {@code mdt} for its statfs (2 s each): the leader answers, the others say they follow. */
    public List<MdtReplicaState> mdtReplicaStates(int mdt) {
        List<MdtReplicaState> states = new ArrayList<>();
        for (HostPort replica : mdts.replicasOf(mdt)) {
            try {
                StatFsReply reply = connections.get(replica).request(new MetaMessages.StatFs(header()), java.time.Duration.ofSeconds(2));
                states.add(new MdtReplicaState(replica.toString(), "leads", reply.inodes()));
            } catch (PlinthException e) {
                states.add(new MdtReplicaState(replica.toString(), e.code() == ErrorCode.NOT_LEADER ? "follows" : "unreachable", -1));
            }
        }
        return states;
    }

    // ---- inode-level API (what FUSE uses)

    public Attributes lookup(long parentId, String name) {
        return this.<AttributesReply>meta(new MetaMessages.Lookup(header(), parentId, name)).attributes();
    }

    /**
     * The result of {@link #checkParity}: chunk groups checked, what was wrong in words (each
     * ending "(repaired)" where it was mended), and how many were repaired.
     */
    public record ParityReport(long groups, List<String> problems, long repaired) {}

    /**
     * What a file's chunks take on the disks of every target that holds them (all replicas and
     * cells; holes, as a compressed layout's slots have them, not counted); its Data-on-MDT part,
     * which the metadata service keeps, is not in it.
     */
    public long storedBytes(Attributes file) {
        Layout layout = file.layout();
        if (layout == null || layout.chainIds().isEmpty()) {
            return 0;
        }
        long owner = layout.chunkOwner(file.inodeId());
        return Retry.call(retryMillis(), () -> {
            java.util.Set<Integer> targets = new java.util.LinkedHashSet<>();
            for (int chainId : layout.chainIds()) {
                targets.addAll(chain(chainId).targetIds());
            }
            List<java.util.concurrent.CompletableFuture<dev.plinth.wire.RpcResponse<StorageMessages.FileUsageResult>>> calls = new ArrayList<>();
            for (int targetId : targets) {
                calls.add(storage(targetId).callAsync(new StorageMessages.FileUsage(targetId, owner), null, java.time.Duration.ofMillis(timeoutMillis())));
            }
            return ReplicatedChains.awaitAll(calls).stream().mapToLong(StorageMessages.FileUsageResult::storedBytes).sum();
        }, this::refreshClusterMapSoon);
    }

    /**
     * Checks an erasure-coded file's parity against its data, group by group (see
     * {@code plinth fsck --parity}); with {@code repair}, mends what it finds.
     */
    public ParityReport checkParity(Attributes file, boolean repair) {
        return checkParity(file, repair, bytes -> {});
    }

    /** As above, telling {@code groupRead} the bytes of each chunk group read, so that a background check can pace itself. */
    public ParityReport checkParity(Attributes file, boolean repair, java.util.function.LongConsumer groupRead) {
        if (file.layout() == null || !file.layout().erasureCoded()) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "inode " + file.inodeId() + " is not erasure-coded");
        }
        List<String> problems = new ArrayList<>();
        boolean staleRepaired = false;
        if (file.layout().staleCells() != 0) { // one problem of the file's, counted as one repair where it is mended
            String stale = "cells " + file.layout().staleCellList() + " are stale (written around while their targets were away)";
            if (repair) {
                try {
                    file = mendStaleCells(file);
                    staleRepaired = true;
                    stale += " (repaired)";
                } catch (PlinthException e) {
                    stale += " (not repaired: " + e.getMessage() + ")";
                }
            }
            problems.add(stale);
        }
        ErasureCodedStripes.ParityCheck check = new ErasureCodedStripes(this, file.inodeId(), file.layout())
                .checkParity(file.layout().storedSize(file.sizeBytes()), repair, 1000, groupRead);
        problems.addAll(check.problems());
        return new ParityReport(check.groups(), problems, check.repaired() + (staleRepaired ? 1 : 0));
    }

    /**
     * Rebuilds an erasure-coded file's stale cells from its other cells (their targets must be
     * online) and clears them in its layout ({@link MetaMessages.ClearStaleCells}); returns the
     * file's attributes after. BUSY where the file is open or changes meanwhile (the upkeep tries
     * again later).
     */
    public Attributes mendStaleCells(Attributes file) {
        Layout layout = file.layout();
        if (layout == null || layout.staleCells() == 0) {
            return file;
        }
        if (dev.plinth.wire.messages.HsmMessages.released(file)) {
            return clearStaleCells(file, layout.staleCells()); // its chunks are gone: a restore writes every cell anew
        }
        clearStaleCells(file, 0); // open or changing: BUSY now rather than after reading the whole file
        long mended = new ErasureCodedStripes(this, file.inodeId(), layout).mendStaleCells(layout.storedSize(file.sizeBytes()));
        return clearStaleCells(file, mended);
    }

    private Attributes clearStaleCells(Attributes file, long cells) {
        try {
            return this.<AttributesReply>meta(new MetaMessages.ClearStaleCells(header(), file.inodeId(), cells, file.sizeBytes(),
                    file.ctimeNanos())).attributes();
        } catch (PlinthException e) {
            if (e.code() == ErrorCode.CHANGED || e.code() == ErrorCode.WOULD_BLOCK) {
                throw new PlinthException(ErrorCode.BUSY, "inode " + file.inodeId() + ": " + e.detail(), e);
            }
            throw e;
        }
    }

    /** Up to {@code limit} files of MDT {@code mdt} with stale cells, after inode {@code afterInodeId} (0: from the start). */
    public List<Long> staleCellFiles(int mdt, long afterInodeId, int limit) {
        return this.<MetaMessages.StaleCellFiles>metaOn(mdt, new MetaMessages.ListStaleCellFiles(header(), afterInodeId, limit)).inodeIds();
    }


    public Attributes getAttr(long inodeId) {
        return this.<AttributesReply>meta(new MetaMessages.GetAttr(header(), inodeId)).attributes();
    }

    /** Sets attributes; a size change of a released file restores it first (HSM). */
    public Attributes setAttr(long inodeId, int mask, int mode, int uid, int gid, long sizeBytes, long atimeNanos, long mtimeNanos) {
        if ((mask & MetaMessages.SET_ATIME) != 0) {
            synchronized (atimeBatchLock) {
                atimesPending.remove(inodeId);
            }
        }
        return restoringIfReleased(inodeId, () -> this.<AttributesReply>meta(new MetaMessages.SetAttr(header(), inodeId, mask, mode, uid, gid,
                sizeBytes, atimeNanos, mtimeNanos)).attributes());
    }

    /** HSM: a file's state, actions and transparent restores. */
    public HsmAccess hsm() {
        return hsm;
    }

    /** Runs a change that the metadata service refuses while the file is released; restores the file and runs it again if so. */
    private <T> T restoringIfReleased(long inodeId, java.util.function.Supplier<T> change) {
        try {
            return change.get();
        } catch (PlinthException e) {
            if (e.code() != ErrorCode.RELEASED) {
                throw e;
            }
            hsm.restore(inodeId);
            return change.get();
        }
    }

    /** One page of entries after {@code afterName} ("" for the first page). */
    public ReadDirReply readDir(long inodeId, String afterName, int limit) {
        return meta(new MetaMessages.ReadDir(header(), inodeId, afterName, limit));
    }

    /** One page of entries with their attributes (readdirplus). */
    public MetaMessages.ReadDirPlusReply readDirPlus(long inodeId, String afterName, int limit) {
        return meta(new MetaMessages.ReadDirPlus(header(), inodeId, afterName, limit));
    }

    public Attributes mkdir(long parentId, String name, int mode) {
        return mkdir(parentId, name, mode, MetaMessages.Mkdir.WITH_PARENT);
    }

    /** A directory on MDT {@code mdt} ({@link MetaMessages.Mkdir#WITH_PARENT}: its parent's), as `lfs mkdir -i N` makes it. */
    public Attributes mkdir(long parentId, String name, int mode, int mdt) {
        return this.<AttributesReply>meta(new MetaMessages.Mkdir(header(), parentId, name, mode, mdt)).attributes();
    }

    public CreateReply create(long parentId, String name, int mode, boolean exclusive, Layout layout) {
        return meta(new MetaMessages.Create(header(), parentId, name, mode, exclusive, layout));
    }

    /**
     * Creates a file (or with {@code exclusive} false, finds the existing one) and opens it for
     * writing, in one metadata change. The caller truncates an existing file if it wants to.
     */
    public OpenedFile createAndOpen(long parentId, String name, int mode, boolean exclusive, Layout layout) {
        CreateReply reply;
        try {
            reply = meta(new MetaMessages.Create(header(), parentId, name, mode, exclusive, layout, true));
        } catch (PlinthException e) {
            if (e.code() != ErrorCode.RELEASED) {
                throw e;
            }
            hsm.restore(lookup(parentId, name).inodeId()); // the existing file is released: bring it back, then open it
            reply = meta(new MetaMessages.Create(header(), parentId, name, mode, exclusive, layout, true));
        }
        return new OpenedFile(new PlinthFile(this, reply.attributes(), true), reply.created());
    }

    /**
     * A new file without a name in directory {@code parentId} (Linux's O_TMPFILE), open for
     * writing: it goes away with its last close, or with this client's session, unless
     * {@link PlinthFile#publish} gives it a name first. Needs write permission on the directory.
     */
    public PlinthFile createUnnamed(long parentId, int mode, Layout layout) {
        CreateReply reply = meta(new MetaMessages.Create(header(), parentId, null, mode, true, layout, true, true));
        return new PlinthFile(this, reply.attributes(), true);
    }

    /** A file from {@link #createAndOpen}, and whether the call created it. */
    public record OpenedFile(PlinthFile file, boolean created) {}

    public Attributes symlink(long parentId, String name, String target) {
        return this.<AttributesReply>meta(new MetaMessages.Symlink(header(), parentId, name, target)).attributes();
    }

    /** mknod of a FIFO, a device node ({@code rdev} its number) or a socket. */
    public Attributes makeNode(long parentId, String name, dev.plinth.common.FileType type, int mode, long rdev) {
        return this.<AttributesReply>meta(new MetaMessages.MakeNode(header(), parentId, name, type, mode, rdev)).attributes();
    }

    public String readLink(long inodeId) {
        return this.<MetaMessages.ReadLinkReply>meta(new MetaMessages.ReadLink(header(), inodeId)).target();
    }

    public void unlink(long parentId, String name) {
        meta(new MetaMessages.Unlink(header(), parentId, name));
    }

    public void rmdir(long parentId, String name) {
        meta(new MetaMessages.Rmdir(header(), parentId, name));
    }

    public void rename(long sourceParentId, String sourceName, long targetParentId, String targetName, boolean noReplace) {
        meta(new MetaMessages.Rename(header(), sourceParentId, sourceName, targetParentId, targetName, noReplace));
    }

    /** Swaps what two names name (renameat2's RENAME_EXCHANGE); both must exist. */
    public void exchange(long firstParentId, String firstName, long secondParentId, String secondName) {
        meta(new MetaMessages.Exchange(header(), firstParentId, firstName, secondParentId, secondName));
    }

    public Attributes link(long inodeId, long parentId, String name) {
        return this.<AttributesReply>meta(new MetaMessages.Link(header(), inodeId, parentId, name)).attributes();
    }

    public byte[] getXattr(long inodeId, String name) {
        return this.<MetaMessages.XattrValue>meta(new MetaMessages.GetXattr(header(), inodeId, name)).value();
    }

    public List<String> listXattr(long inodeId) {
        return this.<MetaMessages.XattrNames>meta(new MetaMessages.ListXattr(header(), inodeId)).names();
    }

    public void setXattr(long inodeId, String name, byte[] value, int flags) {
        meta(new MetaMessages.SetXattr(header(), inodeId, name, value, flags));
    }

    public void removeXattr(long inodeId, String name) {
        meta(new MetaMessages.RemoveXattr(header(), inodeId, name));
    }

    public Attributes setLayout(long inodeId, Layout layout) {
        return setLayout(inodeId, layout, false);
    }

    /** Sets a layout; with {@code force} one the cluster cannot place yet is kept anyway (see {@link MetaMessages.SetLayout}). */
    public Attributes setLayout(long inodeId, Layout layout, boolean force) {
        return this.<AttributesReply>meta(new MetaMessages.SetLayout(header(), inodeId, layout, force)).attributes();
    }

    /**
     * Takes, changes or releases a lock without waiting; the reply names a lock in the way if it
     * could not be taken. The lock is held by this client's session and {@code lock.owner()}.
     */
    public MetaMessages.LockReply setLock(long inodeId, MetaMessages.FileLock lock) {
        return meta(new MetaMessages.SetLock(header(), inodeId, lock));
    }

    /** F_GETLK: a lock that would block {@code lock}, if any. */
    public MetaMessages.LockReply getLock(long inodeId, MetaMessages.FileLock lock) {
        return meta(new MetaMessages.GetLock(header(), inodeId, lock));
    }

    /** Opens a file by inode for I/O. */
    public PlinthFile open(long inodeId, boolean write) {
        return open(inodeId, write, true);
    }

    /**
     * Opens a released file for writing its bytes back from its archive: only for the mover that
     * took its restore (the metadata service refuses anyone else), and without decryption or the
     * transparent restore every other open does.
     */
    public PlinthFile openToRestore(long inodeId) {
        Attributes attributes = openCounted(inodeId, true);
        return new PlinthFile(this, attributes, true);
    }

    /** A read-only open that hands out an encrypted file's bytes as stored ({@link ObjectAccess#openStored}). */
    PlinthFile openStored(long inodeId) {
        return open(inodeId, false, false);
    }

    private PlinthFile open(long inodeId, boolean write, boolean decrypt) {
        Attributes attributes = restoringIfReleased(inodeId, () -> openCounted(inodeId, write));
        HsmAccess.RestoreProgress restoring = null;
        try {
            if (attributes.isDirectory()) {
                throw new PlinthException(ErrorCode.IS_A_DIRECTORY, "cannot open a directory for I/O");
            }
            // opening for writing needs write permission; the server checks it on Close too, but fail early
            checkAccess(attributes, write ? Permissions.WRITE : Permissions.READ);
            if (dev.plinth.wire.messages.HsmMessages.released(attributes)) {
                // the open is counted: the file cannot be released again meanwhile
                if (write) {
                    attributes = hsm.restore(inodeId);
                } else {
                    restoring = hsm.restoreInOrder(inodeId); // reads wait for their own range only
                }
            }
        } catch (RuntimeException e) {
            meta(new MetaMessages.Close(header(), inodeId, 0, false, true, null));
            throw e;
        }
        PlinthFile file = new PlinthFile(this, attributes, write);
        if (restoring != null) {
            file.readWhileRestoring(restoring);
        }
        if (attributes.encrypted() && !write && decrypt) {
            try {
                file.decryptWith(cipherOf(inodeId));
            } catch (RuntimeException e) {
                file.close();
                throw e;
            }
        }
        return file;
    }

    // ---- encrypted files (S3 server-side encryption)

    /** Master keys by id, as mgmt gave them (they never change); 0 is the current one. */
    private final java.util.concurrent.ConcurrentHashMap<Integer, MgmtMessages.EncryptionKey> masterKeys = new java.util.concurrent.ConcurrentHashMap<>();

    /** The cluster's master key {@code keyId} for object encryption; 0: the current one, made by mgmt on first use. */
    public MgmtMessages.EncryptionKey masterKey(int keyId) {
        MgmtMessages.EncryptionKey known = masterKeys.get(keyId);
        if (known != null) {
            return known;
        }
        MgmtMessages.EncryptionKey key = Retry.call(timeoutMillis, () -> mgmt().<MgmtMessages.EncryptionKey>request(new MgmtMessages.GetEncryptionKey(keyId)), null);
        masterKeys.put(keyId, key);
        masterKeys.put(key.keyId(), key);
        return key;
    }

    /** How a file is encrypted (its {@link MetaMessages#SSE_XATTR} attribute), as the caller may read it. */
    public ObjectEncryption encryptionOf(long inodeId) {
        return ObjectEncryption.decode(getXattr(inodeId, MetaMessages.SSE_XATTR));
    }

    /**
     * The keystream that reads an encrypted file: an SSE-S3 file's data key opens with the cluster's
     * master key, so any reader its permissions let in reads it; an SSE-C file's key is its
     * writer's alone, and it is read only through S3 with that key.
     */
    ObjectCipher cipherOf(long inodeId) {
        ObjectEncryption encryption = encryptionOf(inodeId);
        if (encryption.customerKeyed()) {
            throw new PlinthException(ErrorCode.PERMISSION_DENIED,
                    "the file is encrypted with its writer's own key (S3 SSE-C): read it through S3 with that key");
        }
        return new ObjectCipher(encryption.unwrap(masterKey(encryption.masterKeyId()).key()), encryption.segments());
    }

    /**
     * A read-only handle on a file that the metadata service does not count as open: no metadata
     * change to open or close it. Nothing keeps the file's data alive for such a reader, so it must
     * check afterwards that the file still exists unchanged ({@link #getAttr}) and read again if
     * not, as the S3 gateway does for small objects. Once a file is removed its chunks may be freed
     * under an uncounted reader, whose reads then come back short or as holes, never as another
     * file's bytes (inode ids are not reused).
     */
    public PlinthFile openUncounted(Attributes attributes) {
        if (attributes.type() != dev.plinth.common.FileType.FILE) {
            throw new PlinthException(ErrorCode.IS_A_DIRECTORY, "only regular files can be read");
        }
        if (!Permissions.allowed(caller(), attributes.mode(), attributes.uid(), attributes.gid(), false, Permissions.READ)) {
            throw new PlinthException(ErrorCode.PERMISSION_DENIED, "read of inode " + InodeId.format(attributes.inodeId()));
        }
        PlinthFile file = new PlinthFile(this, attributes, false, false);
        if (dev.plinth.wire.messages.HsmMessages.released(attributes)) {
            file.readWhileRestoring(hsm.restoreInOrder(attributes.inodeId()));
        }
        return file;
    }

    /** Counts an open of the file for this client's session (an unlinked file stays readable until it is closed); its attributes. */
    Attributes openCounted(long inodeId, boolean write) {
        return this.<AttributesReply>meta(new MetaMessages.Open(header(), inodeId, write)).attributes();
    }

    private void checkAccess(Attributes attributes, int mask) {
        if (!Permissions.allowed(caller(), attributes.mode(), attributes.uid(), attributes.gid(), attributes.isDirectory(), mask)) {
            meta(new MetaMessages.Close(header(), attributes.inodeId(), 0, false, true, null));
            throw new PlinthException(ErrorCode.PERMISSION_DENIED, "open of inode " + InodeId.format(attributes.inodeId()));
        }
    }

    Attributes publish(long inodeId, long writtenEndBytes, long mtimeNanos, List<MetaMessages.Xattr> xattrs, long sourceParentId, String sourceName,
                       long parentId, String targetName, boolean noReplace, MetaMessages.InlineWrite inline, long onlyReplacing) {
        return this.<AttributesReply>meta(new MetaMessages.Publish(header(), inodeId, writtenEndBytes, mtimeNanos, xattrs, parentId, sourceName,
                targetName, noReplace, inline, onlyReplacing, sourceParentId)).attributes();
    }

    Attributes close(long inodeId, long writtenEndBytes, boolean wrote, boolean release, MetaMessages.InlineWrite inline) {
        return this.<AttributesReply>meta(new MetaMessages.Close(header(), inodeId, writtenEndBytes, wrote, release, inline)).attributes();
    }

    void writeInline(long inodeId, MetaMessages.InlineWrite write) {
        meta(new MetaMessages.WriteInline(header(), inodeId, write));
    }

    MetaMessages.InlineData readInline(long inodeId, int offset, int length) {
        return meta(new MetaMessages.ReadInline(header(), inodeId, offset, length));
    }

    // ---- path-level API (what the CLI and the NIO provider use)

    public Attributes stat(String path) {
        return atPath(path, () -> this.<AttributesReply>meta(new MetaMessages.ResolvePath(header(), path, true)).attributes());
    }

    /**
     * Runs a call made for {@code path}, and names the path in its failure: the metadata service
     * names inodes ("not a directory: inode 0000000000000004"), which a user does not know.
     */
    static <T> T atPath(String path, java.util.function.Supplier<T> call) {
        try {
            return call.get();
        } catch (PlinthException e) {
            String detail = e.detail();
            if (detail.contains(path)) {
                throw e;
            }
            throw new PlinthException(e.code(), detail.isEmpty() || detail.contains("inode ") ? path : path + ": " + detail, e);
        }
    }

    public Attributes lstat(String path) {
        return atPath(path, () -> this.<AttributesReply>meta(new MetaMessages.ResolvePath(header(), path, false)).attributes());
    }

    public boolean exists(String path) {
        try {
            lstat(path);
            return true;
        } catch (PlinthException e) {
            if (e.code() == ErrorCode.NOT_FOUND) {
                return false;
            }
            throw e;
        }
    }

    private Attributes parentOf(String path) {
        return stat(Names.parent(path));
    }

    public Attributes mkdir(String path, int mode) {
        return mkdir(path, mode, MetaMessages.Mkdir.WITH_PARENT);
    }

    /** A directory at {@code path} on MDT {@code mdt} ({@link MetaMessages.Mkdir#WITH_PARENT}: its parent's). */
    public Attributes mkdir(String path, int mode, int mdt) {
        return atPath(path, () -> mkdir(parentOf(path).inodeId(), Names.lastName(path), mode, mdt));
    }

    /**
     * Creates a directory and any missing parents; an existing directory is fine. As with
     * {@code mkdir -p -m MODE}, only the last directory gets {@code mode}; parents get 0755.
     */
    /** Creates the missing directories of {@code path} (mode for the last); existing ones cost a lookup each, not a change. */
    public Attributes mkdirs(String path, int mode) {
        return mkdirs(path, mode, MetaMessages.Mkdir.WITH_PARENT);
    }

    /** As above, the last directory (if it is made) on MDT {@code mdt}. */
    public Attributes mkdirs(String path, int mode, int mdt) {
        Attributes current = stat("/");
        StringBuilder walked = new StringBuilder();
        List<String> names = Names.components(path);
        for (int i = 0; i < names.size(); i++) {
            String name = names.get(i);
            walked.append('/').append(name);
            Attributes next = null;
            try {
                next = lookup(current.inodeId(), name);
            } catch (PlinthException e) {
                if (e.code() != ErrorCode.NOT_FOUND) {
                    throw e;
                }
            }
            if (next == null) {
                try {
                    boolean last = i == names.size() - 1;
                    next = mkdir(current.inodeId(), name, last ? mode : 0755, last ? mdt : MetaMessages.Mkdir.WITH_PARENT);
                } catch (PlinthException e) {
                    if (e.code() != ErrorCode.ALREADY_EXISTS) {
                        throw e;
                    }
                    next = lookup(current.inodeId(), name); // made by someone else meanwhile
                }
            }
            if (next.type() == dev.plinth.common.FileType.SYMLINK) {
                next = stat(walked.toString());
            }
            if (!next.isDirectory()) {
                throw new PlinthException(ErrorCode.NOT_A_DIRECTORY, walked.toString());
            }
            current = next;
        }
        return current;
    }

    /** All entries of a directory, fetched page by page. */
    public List<DirEntry> list(String path) {
        Attributes directory = stat(path);
        if (!directory.isDirectory()) {
            throw new PlinthException(ErrorCode.NOT_A_DIRECTORY, path);
        }
        List<DirEntry> entries = new ArrayList<>();
        String after = "";
        while (true) {
            ReadDirReply page = readDir(directory.inodeId(), after, READDIR_PAGE);
            entries.addAll(page.entries());
            if (!page.more() || page.entries().isEmpty()) {
                return entries;
            }
            after = page.entries().getLast().name();
        }
    }

    /** An entry with its attributes, as {@link #listWithAttributes} returns them. */
    public record Listed(DirEntry entry, Attributes attributes) {}

    /** All entries of a directory with their attributes, a page per request. */
    public List<Listed> listWithAttributes(String path) {
        Attributes directory = stat(path);
        if (!directory.isDirectory()) {
            throw new PlinthException(ErrorCode.NOT_A_DIRECTORY, path);
        }
        List<Listed> result = new ArrayList<>();
        String after = "";
        while (true) {
            MetaMessages.ReadDirPlusReply page = readDirPlus(directory.inodeId(), after, READDIR_PAGE);
            for (int i = 0; i < page.entries().size(); i++) {
                result.add(new Listed(page.entries().get(i), page.attributes().get(i)));
            }
            if (!page.more() || page.entries().isEmpty()) {
                return result;
            }
            after = page.entries().getLast().name();
        }
    }

    /** Removes a file, symlink or empty directory. */
    public void delete(String path) {
        Attributes target = lstat(path);
        long parentId = parentOf(path).inodeId();
        atPath(path, () -> {
            if (target.type() == FileType.DIRECTORY) {
                rmdir(parentId, Names.lastName(path));
            } else {
                unlink(parentId, Names.lastName(path));
            }
            return null;
        });
    }

    public void rename(String source, String target) {
        long sourceParent = parentOf(source).inodeId();
        long targetParent = parentOf(target).inodeId();
        atPath(source + " -> " + target, () -> {
            rename(sourceParent, Names.lastName(source), targetParent, Names.lastName(target), false);
            return null;
        });
    }

    public Attributes link(String existing, String newPath) {
        long inodeId = lstat(existing).inodeId();
        return atPath(newPath, () -> link(inodeId, parentOf(newPath).inodeId(), Names.lastName(newPath)));
    }

    public Attributes symlink(String path, String target) {
        return atPath(path, () -> symlink(parentOf(path).inodeId(), Names.lastName(path), target));
    }

    public String readLink(String path) {
        return readLink(lstat(path).inodeId());
    }

    public Attributes setLayout(String path, Layout layout) {
        return setLayout(stat(path).inodeId(), layout, false);
    }

    public Attributes setLayout(String path, Layout layout, boolean force) {
        // the path goes with it: a forced layout's warning in `plinth status` names where it was set
        return this.<AttributesReply>meta(new MetaMessages.SetLayout(header(), stat(path).inodeId(), layout, force, path)).attributes();
    }

    /** The directories whose layouts were set with force and that the cluster cannot place now, each with the reason. */
    public List<MetaMessages.ForcedLayout> unplaceableForcedLayouts() {
        return this.<MetaMessages.ForcedLayoutList>meta(new MetaMessages.ForcedLayouts(header())).layouts();
    }

    /** Opens an existing file. */
    public PlinthFile open(String path, boolean write) {
        long inodeId = stat(path).inodeId();
        return atPath(path, () -> open(inodeId, write));
    }

    /**
     * Creates (or with {@code exclusive} false, opens or truncates) a file for writing.
     * {@code layout} null inherits the directory's default layout.
     */
    public PlinthFile create(String path, int mode, boolean exclusive, Layout layout) {
        Attributes parent = parentOf(path);
        OpenedFile opened = atPath(path, () -> createAndOpen(parent.inodeId(), Names.lastName(path), mode, exclusive, layout));
        if (!opened.created() && opened.file().size() > 0) {
            opened.file().truncate(0);
        }
        return opened.file();
    }

    @Override
    public void close() {
        closing = true;
        renewer.shutdownNow();
        if (codingExecutor != null) {
            codingExecutor.shutdown();
        }
        if (localReadExecutor != null) {
            localReadExecutor.shutdown();
        }
        for (int mdt : joinedMdts) {
            try {
                mdts.request(mdt, new MetaMessages.CloseSession(header()));
            } catch (RuntimeException e) {
                LOG.debug("closing session on MDT {} failed (it will expire): {}", mdt, e.getMessage());
            }
        }
        try {
            mdts.request(0, new MetaMessages.CloseSession(header()));
        } catch (RuntimeException e) {
            LOG.debug("closing session failed (it will expire): {}", e.getMessage());
        }
        connections.close();
    }
}
