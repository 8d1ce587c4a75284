package dev.plinth.common;

import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.List;

/**
 * Every setting Plinth reads, declared once. `plinth settings` prints them and
 * docs/settings.md is generated from this class (a test keeps the two in step).
 */
public final class Settings {
    private Settings() {}

    // Listeners of the all-in-one server and of each role.
    public static final Setting<String> RPC_LISTEN = Setting.ofString("rpc.listen", "127.0.0.1:7100",
            "Address and port of the RPC listener that all roles of one process share. Port 0 picks a free port.");
    public static final Setting<String> HTTP_LISTEN = Setting.ofString("http.listen", "127.0.0.1:7180",
            "Address and port of the HTTP listener of `plinth server` and `plinth gateway`: /metrics (Prometheus), /healthz, /readyz. "
                    + "Port 0 picks a free port.");
    public static final Setting<Integer> SERVER_TARGETS = Setting.ofInt("server.targets", 4, "count",
            "Storage targets the embedded server creates under DIR/targets on first start.");

    // Wire.
    public static final Setting<Long> RPC_FRAME_BYTES_MAX = Setting.ofBytes("rpc.frame-bytes-max", 17L << 20,
            "Largest RPC frame accepted; bigger length prefixes close the connection with PROTOCOL_ERROR.");
    public static final Setting<Integer> RPC_INFLIGHT_REQUESTS_MAX = Setting.ofInt("rpc.inflight-requests-max", 128, "requests",
            "Requests one connection may have outstanding; a client waits, a server stops reading beyond it.");
    public static final Setting<Boolean> RPC_IN_PROCESS = Setting.ofBoolean("rpc.in-process", true,
            "A client in the same process as the server it calls (the embedded server's own mount and S3 gateway) "
                    + "authenticates over Netty's in-JVM channels and then hands each request to the server's dispatcher on its own "
                    + "thread, instead of loopback TCP: no socket copies, no system calls, no thread hand-offs.");
    public static final Setting<Integer> RPC_CONNECTIONS_PER_SERVER = Setting.ofInt("rpc.connections-per-server", 4, "connections",
            "TCP connections a client keeps to each server, used in turn, so bulk data spreads over several network threads.");
    public static final Setting<Long> RPC_HANDSHAKE_TIMEOUT_MILLIS = Setting.ofLong("rpc.handshake-timeout-millis", 10_000, "milliseconds",
            "A connection that has not authenticated within this time is closed.");
    public static final Setting<String> RPC_SOURCE_ADDRESS = Setting.ofString("rpc.source-address", "",
            "Local address that outgoing RPC connections are made from (a node with several addresses). Empty: the system picks.");
    public static final Setting<Long> RPC_TIMEOUT_MILLIS = Setting.ofLong("rpc.timeout-millis", 30_000, "milliseconds",
            "Deadline of one RPC, sent with the request so the server can drop work nobody waits for.");

    // Layout defaults for the root directory of a new file system.
    public static final Setting<Integer> LAYOUT_STRIPE_COUNT = Setting.ofInt("layout.stripe-count", 1, "stripes",
            "Default stripe count of the root directory, inherited by new files (Lustre's default is 1).");
    public static final Setting<Long> LAYOUT_STRIPE_SIZE = Setting.ofBytes("layout.stripe-size", 4L << 20,
            "Default stripe size: the round-robin unit over stripe objects. A multiple of 64 KiB.");
    public static final Setting<Long> LAYOUT_CHUNK_SIZE = Setting.ofBytes("layout.chunk-size", 4L << 20,
            "Chunk size: the unit a stripe object is stored in on a target. A power of two, 64 KiB to 64 MiB.");
    public static final Setting<Long> LAYOUT_MDT_BYTES = Setting.ofBytes("layout.mdt-bytes", 64L << 10,
            "Default Data-on-MDT size of the root directory: the first this many bytes of every new file live in the metadata service "
                    + "with its inode, so small files cost no storage round trip (0: none; a multiple of 64 KiB up to 1 MiB).");

    // Storage targets.
    public static final Setting<Long> TARGET_CAPACITY = Setting.ofBytes("target.capacity", 0,
            "Capacity each target reports and enforces; 0 means the free space of its file system.");
    public static final Setting<Long> TARGET_RESERVE_BYTES = Setting.ofBytes("target.reserve-bytes", 256L << 20,
            "Free space each target leaves on its file system: a chunk write that would leave less is refused with ENOSPC, so "
                    + "that the metadata service and the system on the same disk keep room to start and to commit the deletes that "
                    + "free space. Reported capacity leaves it out.");
    public static final Setting<Boolean> STORAGE_DIRECT_WRITES = Setting.ofBoolean("storage.direct-writes", true,
            "Write the block-aligned part of chunk writes with O_DIRECT instead of through the page cache, whose copy costs "
                    + "about a core per 500 MB/s; falls back to buffered writes where the file system refuses O_DIRECT.");
    public static final Setting<Boolean> STORAGE_DIRECT_READS = Setting.ofBoolean("storage.direct-reads", true,
            "Read chunk ranges of 256 KiB or more that are not all in the page cache with O_DIRECT, into the target's own "
                    + "buffers, instead of filling the cache first; cached ranges and shorter reads still come from the page cache.");
    public static final Setting<Integer> STORAGE_IO_THREADS = Setting.ofInt("storage.io-threads", 8, "threads",
            "Platform threads doing chunk file I/O per process (blocking I/O must not pin virtual threads' carriers).");

    // Cluster management.
    public static final Setting<String> CLUSTER_MGMT = Setting.ofString("cluster.mgmt", "127.0.0.1:7100",
            "Where meta and storage processes (plinth meta, plinth storage) find the management service: its RPC address, or "
                    + "the RPC addresses of every replica of a mgmt group, comma-separated.");
    public static final Setting<Long> CLUSTER_MGMT_REPLICA_TIMEOUT_MILLIS = Setting.ofLong("cluster.mgmt-replica-timeout-millis", 3_000, "milliseconds",
            "With several mgmt replicas: how long a request waits for one before it tries the next (a hung leader must not "
                    + "hold up heartbeats for a whole rpc.timeout-millis). A single mgmt gets rpc.timeout-millis.");
    public static final Setting<String> MGMT_RAFT_LISTEN = Setting.ofString("mgmt.raft-listen", "",
            "Raft address of this mgmt replica (one of mgmt.raft-peers). Empty: a single mgmt, without Raft.");
    public static final Setting<String> MGMT_RAFT_PEERS = Setting.ofString("mgmt.raft-peers", "",
            "Raft addresses of every replica of the mgmt group, comma-separated, the same list in the same order on each "
                    + "(three replicas survive the loss of one). Empty: a single mgmt.");
    public static final Setting<String> CLUSTER_SECRET_FILE = Setting.ofString("cluster.secret-file", "",
            "The cluster secret file of plinth mgmt, meta and storage processes (mgmt creates it, mode 0600, if missing).");
    public static final Setting<Long> MGMT_NODE_TIMEOUT_MILLIS = Setting.ofLong("mgmt.node-timeout-millis", 10_000, "milliseconds",
            "A storage node that sends no heartbeat for this long is marked offline and leaves its chains; its own writes stop "
                    + "after the same time without a heartbeat answered, so a node cut off from mgmt cannot acknowledge writes.");
    public static final Setting<Long> MGMT_TARGET_LOST_MILLIS = Setting.ofLong("mgmt.target-lost-millis", 3_600_000, "milliseconds",
            "A target offline this long is declared lost: other targets take its places in its chains and copy their chunks "
                    + "(at storage.resync-bytes-per-second), and erasure-coded files' cells on it are decoded onto other targets "
                    + "(as plinth rebuild does). 0: never.");
    public static final Setting<Long> MGMT_PARITY_SCRUB_INTERVAL_MILLIS = Setting.ofLong("mgmt.parity-scrub-interval-millis", 604_800_000,
            "milliseconds", "Time between the starts of two passes of the mgmt leader's parity scrub, which reads every erasure-coded file "
                    + "whole and checks each stripe's parity against its data, mending what it finds (as plinth fsck --parity --repair). "
                    + "0: never.");
    public static final Setting<Long> MGMT_PARITY_SCRUB_BYTES_PER_SECOND = Setting.ofBytes("mgmt.parity-scrub-bytes-per-second", 32L << 20,
            "Bandwidth the parity scrub may use (all cells of a stripe count).");
    public static final Setting<Long> MGMT_LINK_REJOIN_MILLIS = Setting.ofLong("mgmt.link-rejoin-millis", 30_000, "milliseconds",
            "A chain member that left because its predecessor could not reach it (both still online) tries again after this "
                    + "long: it syncs and serves if the link works, and leaves again if not.");
    public static final Setting<Integer> MGMT_CHAIN_REPLICAS_MAX = Setting.ofInt("mgmt.chain-replicas-max", 3, "replicas",
            "Widest chains mgmt forms (on targets of distinct nodes) for layouts with --replicas above 1.");
    public static final Setting<Integer> LAYOUT_REPLICAS = Setting.ofInt("layout.replicas", 1, "replicas",
            "Default replica count of the root directory's layout (a chain of this many targets on distinct nodes).");
    public static final Setting<Long> STORAGE_SCRUB_BYTES_PER_SECOND = Setting.ofBytes("storage.scrub-bytes-per-second", 32L << 20,
            "Bandwidth the scrubber may use to re-read chunks and check their CRCs.");
    public static final Setting<Long> STORAGE_SCRUB_INTERVAL_MILLIS = Setting.ofLong("storage.scrub-interval-millis", 86_400_000, "milliseconds",
            "Time between the starts of two scrub passes over every chunk of a node (a pass takes as long as the bandwidth allows).");
    public static final Setting<Long> CLUSTER_MDT_REPLICA_TIMEOUT_MILLIS = Setting.ofLong("cluster.mdt-replica-timeout-millis", 5_000, "milliseconds",
            "With several replicas of an MDT: how long a client waits for one before it tries the next (a hung leader must not "
                    + "hold up a request for a whole rpc.timeout-millis; a change sent again is applied once). A single replica gets "
                    + "rpc.timeout-millis.");
    public static final Setting<Long> STORAGE_RESYNC_BYTES_PER_SECOND = Setting.ofBytes("storage.resync-bytes-per-second", 200L << 20,
            "Bandwidth a returning target may use to copy the chunks it missed, so client I/O keeps going.");

    // Metadata.
    public static final Setting<Integer> META_IO_THREADS = Setting.ofInt("meta.io-threads", 4, "threads",
            "Platform threads doing RocksDB reads per process.");
    public static final Setting<String> META_RAFT_LISTEN = Setting.ofString("meta.raft-listen", "",
            "Raft address of this MDT replica (one of meta.raft-peers). Empty: a single replica, on a Raft port of its own "
                    + "choosing (kept across restarts).");
    public static final Setting<String> META_RAFT_PEERS = Setting.ofString("meta.raft-peers", "",
            "Raft addresses of every replica of this MDT's group, comma-separated, the same list in the same order on each "
                    + "(three replicas survive the loss of one, five of two). Empty: a single replica.");
    public static final Setting<Long> META_SESSION_LEASE_MILLIS = Setting.ofLong("meta.session-lease-millis", 30_000, "milliseconds",
            "How long a client session lives without renewal; its open files are then closed for it.");
    public static final Setting<Long> META_RESERVE_BYTES = Setting.ofBytes("meta.reserve-bytes", 64L << 20,
            "Free space the metadata service keeps on its disk: with less, changes that add to the namespace (creates, writes "
                    + "of Data-on-MDT bytes, xattrs, links) are refused with ENOSPC, while reads, deletes, renames and closes go on, "
                    + "so that an operator can free space. The Raft log and RocksDB write there too.");
    public static final Setting<Long> META_CACHE_BYTES = Setting.ofBytes("meta.cache-bytes", 64L << 20,
            "Memory each MDT replica keeps of what queries read (inodes, directory entries, xattrs, Data-on-MDT bytes), so that "
                    + "the next lookup of the same key skips RocksDB; the records read most recently stay. 0: none.");
    public static final Setting<Boolean> META_LOG_SYNC = Setting.ofBoolean("meta.log-sync", false,
            "true: acknowledge a metadata change only after the Raft log is fsynced. false: acknowledge once it is "
                    + "written to the OS; the log is fsynced in groups right after (a process crash loses nothing).");

    // Client.
    public static final Setting<Long> CLIENT_READAHEAD_BYTES = Setting.ofBytes("client.readahead-bytes", 16L << 20,
            "How far ahead of a sequential reader the client fetches (per open file; see client.readahead-total-bytes).");
    public static final Setting<Long> CLIENT_READAHEAD_TOTAL_BYTES = Setting.ofBytes("client.readahead-total-bytes", 256L << 20,
            "Read-ahead one client holds for all its open files together; beyond it streams read what they ask for, "
                    + "without read-ahead, until some is given back. At most a quarter of the process's direct memory.");
    public static final Setting<Long> CLIENT_WRITE_BEHIND_BYTES = Setting.ofBytes("client.write-behind-bytes", 64L << 20,
            "Bytes of acknowledged-to-the-caller writes one client may hold in flight (all its files together) before a writer waits; "
                    + "at most a quarter of the process's direct memory.");

    public static final Setting<Boolean> CLIENT_SHORT_CIRCUIT_READS = Setting.ofBoolean("client.short-circuit-reads", false,
            "Read chunk files directly when their target is on this host and readable by this process (as HDFS does), "
                    + "checking the stored CRCs; any mismatch falls back to reading over the network.");

    public static final Setting<String> CLIENT_JOB_ID_VARIABLES = Setting.ofString("client.job-id-variables", "PLINTH_JOB_ID,SLURM_JOB_ID",
            "Environment variables naming the job an operation belongs to (first one set wins), read from the calling process "
                    + "(the mount reads it from /proc/PID/environ); without one the job is COMMAND.UID (Lustre's procname_uid).");
    public static final Setting<Integer> CLIENT_JOB_STATS_MAX = Setting.ofInt("client.job-stats-max", 64, "jobs",
            "Jobs a client keeps separate I/O statistics for; further jobs are counted together as 'other'.");
    public static final Setting<Long> CLIENT_RETRY_TIMEOUT_MILLIS = Setting.ofLong("client.retry-timeout-millis", 30_000, "milliseconds",
            "How long a call keeps retrying while the cluster is unavailable (a server restarting or failing over) "
                    + "before it fails; 0 retries until the cluster is back (a hard mount).");

    // Mount (FUSE).
    public static final Setting<Long> MOUNT_ATTR_TIMEOUT_MILLIS = Setting.ofLong("mount.attr-timeout-millis", 1_000, "milliseconds",
            "How long the kernel may cache a file's attributes before asking again.");
    public static final Setting<Long> MOUNT_ENTRY_TIMEOUT_MILLIS = Setting.ofLong("mount.entry-timeout-millis", 1_000, "milliseconds",
            "How long the kernel may cache a name-to-inode lookup (and a failed lookup) before asking again.");
    public static final Setting<String> MOUNT_HTTP_LISTEN = Setting.ofString("mount.http-listen", "127.0.0.1:7182",
            "HTTP listener of a `plinth mount` process (/metrics, /healthz, /readyz); empty turns it off. A mount whose port is taken "
                    + "mounts anyway and says so.");
    public static final Setting<Integer> MOUNT_THREADS = Setting.ofInt("mount.threads", 16, "threads",
            "Threads serving FUSE requests; each waits on the kernel and serves one request at a time.");

    // S3 gateway.
    public static final Setting<String> S3_LISTEN = Setting.ofString("s3.listen", "127.0.0.1:9000",
            "Address and port of the S3 gateway (in `plinth server` and `plinth gateway`). Port 0 picks a free port; empty turns "
                    + "the embedded server's gateway off.");
    public static final Setting<String> S3_ROOT = Setting.ofString("s3.root", "/",
            "Directory whose subdirectories are the buckets.");
    public static final Setting<String> S3_REGION = Setting.ofString("s3.region", "us-east-1",
            "Region the gateway reports (GetBucketLocation). Requests signed for any region are accepted.");
    public static final Setting<String> S3_DOMAIN = Setting.ofString("s3.domain", "",
            "Domain for virtual-host-style requests (bucket.DOMAIN); empty: path style only.");
    public static final Setting<Integer> S3_ANONYMOUS_UID = Setting.ofInt("s3.anonymous-uid", -1, "uid",
            "uid (and gid) that unsigned requests act as, so POSIX permissions decide what anonymous users may read; -1 refuses them.");
    public static final Setting<Integer> S3_REQUESTS_INFLIGHT_MAX = Setting.ofInt("s3.requests-inflight-max", 256, "requests",
            "Requests the gateway serves at once; more are answered SlowDown (503).");
    public static final Setting<Long> S3_HEADER_BYTES_MAX = Setting.ofBytes("s3.header-bytes-max", 16L << 10,
            "Largest request header section accepted; larger ones are answered RequestHeaderSectionTooLarge.");
    public static final Setting<Boolean> S3_SSE_C_OVER_HTTP = Setting.ofBoolean("s3.sse-c-over-http", false,
            "Accept SSE-C (keys the client sends with each request) without TLS; S3 refuses them over plain HTTP, and so does the gateway unless this is set.");
    public static final Setting<String> S3_TLS_CERTIFICATE_FILE = Setting.ofString("s3.tls-certificate-file", "",
            "PEM certificate chain: with s3.tls-key-file, the gateway speaks HTTPS only.");
    public static final Setting<String> S3_TLS_KEY_FILE = Setting.ofString("s3.tls-key-file", "",
            "PEM private key (PKCS#8) of s3.tls-certificate-file.");

    public static final Setting<String> SERVER_ARCHIVES = Setting.ofString("server.archives", "",
            "Archives plinth server adds on its first start, as archive 1, 2, ... (URIs separated by spaces: file:///DIR, "
                    + "s3://BUCKET/PREFIX?endpoint=URL&region=R&path-style=true&credentials=FILE); empty: archive 1 is DIR/archive.");
    public static final Setting<Boolean> SERVER_MOVER = Setting.ofBoolean("server.mover", true,
            "Whether plinth server runs an HSM mover (archives, restores); off where movers run as plinth hsm agent elsewhere.");
    public static final Setting<String> HSM_POLICY_FILE = Setting.ofString("hsm.policy-file", "",
            "HSM policy rules (docs/hsm.md) a mover evaluates every hsm.policy-interval-millis; empty: none. Set it for one mover only.");
    public static final Setting<Long> HSM_POLICY_INTERVAL_MILLIS = Setting.ofLong("hsm.policy-interval-millis", 3_600_000, "milliseconds",
            "How often the rules in hsm.policy-file are evaluated.");
    public static final Setting<Long> HSM_POLICY_SCAN_RATE = Setting.ofLong("hsm.policy-scan-rate", 20_000, "entries/second",
            "Directory entries a policy run reads a second at most, so that a scan of millions of files does not hold the metadata service.");
    public static final Setting<Long> HSM_REMOVED_COPY_GRACE_MILLIS = Setting.ofLong("hsm.removed-copy-grace-millis", 7L * 86_400_000,
            "milliseconds", "How long the archived copy of a removed file stays in its archive before a mover deletes it; 0 keeps copies "
                    + "for good. Give every mover the same value.");
    public static final Setting<Long> HSM_RESTORE_WAIT_MILLIS = Setting.ofLong("hsm.restore-wait-millis", 600_000, "milliseconds",
            "How long a read of a released file waits for its restore before it fails (EIO; S3: 503 SlowDown).");
    public static final Setting<Long> HSM_ARCHIVE_RETRY_MILLIS = Setting.ofLong("hsm.archive-retry-millis", 60_000, "milliseconds",
            "How long a mover retries an archive that cannot be reached (with backoff) before the action fails.");
    public static final Setting<Long> HSM_ACTION_LEASE_MILLIS = Setting.ofLong("hsm.action-lease-millis", 30_000, "milliseconds",
            "How long a mover keeps an action without reporting progress; after that another mover takes it over.");
    public static final Setting<Integer> HSM_MOVER_ACTIONS = Setting.ofInt("hsm.mover-actions", 4, "actions",
            "Actions one mover runs at a time.");
    public static final Setting<Long> HSM_PART_BYTES = Setting.ofBytes("hsm.part-bytes", 16L << 20,
            "Size of the parts a file is archived in (each checksummed; S3 multipart part size).");
    public static final Setting<Integer> HSM_PART_PARALLELISM = Setting.ofInt("hsm.part-parallelism", 4, "parts",
            "Parts of one file copied to or from an archive at a time.");

    public static List<Setting<?>> all() {
        List<Setting<?>> result = new ArrayList<>();
        for (Field field : Settings.class.getDeclaredFields()) {
            if (Modifier.isStatic(field.getModifiers()) && field.getType() == Setting.class) {
                try {
                    result.add((Setting<?>) field.get(null));
                } catch (IllegalAccessException e) {
                    throw new AssertionError(e);
                }
            }
        }
        return result;
    }

    /** The reference table of docs/settings.md. */
    public static String markdown() {
        StringBuilder out = new StringBuilder();
        out.append("# Settings\n\n")
                .append("Generated from `common/src/main/java/dev/plinth/common/Settings.java` by `bin/plinth settings --markdown`; ")
                .append("do not edit by hand. Set them with `--set KEY=VALUE` on any role, or in the file given with `--config FILE` ")
                .append("(Java properties format).\n\n")
                .append("| key | default | unit | description |\n|---|---|---|---|\n");
        for (Setting<?> setting : all()) {
            out.append("| `").append(setting.key()).append("` | `").append(setting.defaultValue()).append("` | ")
                    .append(setting.unit()).append(" | ").append(setting.description()).append(" |\n");
        }
        return out.toString();
    }
}
