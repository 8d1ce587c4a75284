package dev.plinth.cli;

import dev.plinth.common.Config;
import dev.plinth.common.ErrorCode;
import dev.plinth.common.PlinthException;
import dev.plinth.common.Settings;
import dev.plinth.server.ProcessHost;
import dev.plinth.wire.ClusterSecret;
import dev.plinth.wire.HostPort;
import java.nio.file.Path;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** What `plinth mgmt`, `meta` and `storage` share: listeners, the secret, and running until SIGTERM. */
final class RoleMixin {
    @Option(names = "--listen", paramLabel = "HOST:PORT", description = "RPC listener (setting rpc.listen, default 127.0.0.1:7100).")
    String listen;

    @Option(names = "--http", paramLabel = "HOST:PORT", description = "HTTP listener for /metrics, /healthz, /readyz (setting http.listen).")
    String http;

    @Option(names = "--secret-file", paramLabel = "FILE", description = "Cluster secret (setting cluster.secret-file).")
    String secretFile;

    @Mixin
    SettingsMixin settings;

    Config config() {
        Config config = settings.config();
        if (listen != null) {
            config = config.with("rpc.listen", listen);
        }
        if (http != null) {
            config = config.with("http.listen", http);
        }
        if (secretFile != null) {
            config = config.with("cluster.secret-file", secretFile);
        }
        return config;
    }

    /** The secret file from the settings; {@code fallback} where none is set (mgmt keeps one in its data directory). */
    static Path secretFile(Config config, Path fallback) {
        String file = config.get(Settings.CLUSTER_SECRET_FILE);
        if (file.isEmpty()) {
            if (fallback == null) {
                throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "give --secret-file (the cluster.secret that plinth mgmt made)");
            }
            return fallback;
        }
        return Path.of(file);
    }

    static ClusterSecret readSecret(Config config) {
        return ClusterSecret.read(secretFile(config, null));
    }

    /** A Raft group as a role's settings give it: every replica's address (empty: no group), this one's at {@code selfIndex}. */
    record RaftPeers(java.util.List<HostPort> peers, int selfIndex) {}

    /**
     * The group in setting {@code peersSetting}, with this replica's address from
     * {@code listenSetting}, which must be one of them (what `--raft` and `--peers` set for
     * `plinth mgmt` and `plinth meta`).
     */
    static RaftPeers raftPeers(Config config, dev.plinth.common.Setting<String> listenSetting, dev.plinth.common.Setting<String> peersSetting) {
        java.util.List<HostPort> peers = config.get(peersSetting).isEmpty() ? java.util.List.of() : HostPort.parseList(config.get(peersSetting));
        if (peers.isEmpty()) {
            return new RaftPeers(peers, 0);
        }
        String self = config.get(listenSetting);
        int selfIndex = self.isEmpty() ? -1 : peers.indexOf(HostPort.parse(self));
        if (selfIndex < 0) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "--raft must be one of --peers " + peers);
        }
        return new RaftPeers(peers, selfIndex);
    }

    static java.util.List<HostPort> mgmtReplicas(Config config, String flag) {
        return HostPort.parseList(flag != null ? flag : config.get(Settings.CLUSTER_MGMT));
    }

    /**
     * Makes SIGTERM and Ctrl-C run {@code stop}; the returned latch opens once it has run. A
     * long-running command registers this, prints where it serves, then awaits the latch.
     */
    static CountDownLatch stopOnSignal(String name, Runnable stop) {
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                stop.run();
            } finally {
                stopped.countDown();
            }
        }, "plinth-" + name + "-shutdown"));
        return stopped;
    }

    /** Prints where the role listens, then serves until SIGTERM or Ctrl-C. */
    static int serveUntilStopped(ProcessHost server, String... details) throws InterruptedException {
        CountDownLatch stopped = stopOnSignal(server.name(), server::close);
        System.out.println("plinth " + server.name() + " ready");
        if (server.rpcAddress() != null) {
            System.out.println("  rpc:     " + server.rpcAddress());
        }
        if (server.httpAddress() != null) {
            System.out.println("  http:    http://" + server.httpAddress() + (server.name().equals("mgmt") ? "/   (the status page; /metrics)" : "/metrics"));
        }
        for (String detail : details) {
            System.out.println("  " + detail);
        }
        System.out.flush();
        stopped.await();
        return 0;
    }
}
