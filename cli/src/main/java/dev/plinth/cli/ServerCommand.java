package dev.plinth.cli;

import dev.plinth.client.ClientOptions;
import dev.plinth.client.PlinthClient;
import dev.plinth.common.Config;
import dev.plinth.fuse.FuseMount;
import dev.plinth.fuse.MountOptions;
import dev.plinth.wire.ClusterSecret;
import java.nio.file.Files;
import dev.plinth.server.EmbeddedServer;
import java.nio.file.Path;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

@Command(name = "server", mixinStandardHelpOptions = true,
        description = {"Run a whole cluster in one process (the embedded default).",
                "Management, metadata (MDT 0), storage targets and the S3 gateway, all under DIR.",
                "Prints where it listens and writes the same to DIR/endpoints.json. Ctrl-C or SIGTERM stops it cleanly;",
                "starting it again on the same DIR serves the same files."})
final class ServerCommand implements java.util.concurrent.Callable<Integer> {
    @Option(names = "--data", required = true, paramLabel = "DIR", description = "Data directory (created if missing).")
    Path data;

    @Option(names = "--listen", paramLabel = "HOST:PORT", description = "RPC listener (setting rpc.listen, default 127.0.0.1:7100).")
    String listen;

    @Option(names = "--http", paramLabel = "HOST:PORT", description = "HTTP listener for health (setting http.listen, default 127.0.0.1:7180).")
    String http;

    @Option(names = "--s3", paramLabel = "HOST:PORT", description = "S3 gateway listener (setting s3.listen, default 127.0.0.1:9000); '' turns it off.")
    String s3;

    @Option(names = "--targets", paramLabel = "N", description = "Storage targets to create on first start (setting server.targets, default 4).")
    Integer targets;

    @Option(names = "--archive", paramLabel = "URI", description = {"HSM archive to add on first start, as archive 1, 2, ... in order; repeatable",
            "(file:///DIR or s3://BUCKET/PREFIX?endpoint=URL&...; setting server.archives; default: archive 1 is DIR/archive)."})
    java.util.List<String> archives = new java.util.ArrayList<>();

    @Option(names = "--mount", paramLabel = "MOUNTPOINT", description = "Also mount the file system here with FUSE (created if missing).")
    Path mountpoint;

    @Option(names = "-o", paramLabel = "OPTIONS", description = "Mount options for --mount (see `plinth mount --help`).")
    java.util.List<String> mountOptions = new java.util.ArrayList<>();

    @Mixin
    SettingsMixin settings;

    @Override
    public Integer call() throws InterruptedException {
        Config config = settings.config();
        if (listen != null) {
            config = config.with("rpc.listen", listen);
        }
        if (http != null) {
            config = config.with("http.listen", http);
        }
        if (s3 != null) {
            config = config.with("s3.listen", s3);
        }
        if (targets != null) {
            config = config.with("server.targets", targets.toString());
        }
        if (!archives.isEmpty()) {
            config = config.with("server.archives", String.join(" ", archives));
        }
        if (mountpoint != null) {
            FuseMount.requireMountable(); // before the cluster starts: say at once what is missing
        }
        EmbeddedServer server = EmbeddedServer.start(data, config);
        PlinthClient mountClient = null;
        FuseMount mount = null;
        try {
            if (mountpoint != null) {
                MountOptions options = MountOptions.parse(String.join(",", mountOptions), config, MountCommand.isRoot());
                Files.createDirectories(mountpoint);
                mountClient = PlinthClient.connect(new ClientOptions(server.rpcAddress(), ClusterSecret.read(server.secretFile()),
                        ClientOptions.processCredentials(), options.config(), "mount"));
                mount = FuseMount.mount(mountClient, mountpoint, options, server.metrics());
            }
        } catch (RuntimeException | java.io.IOException e) {
            if (mountClient != null) {
                mountClient.close();
            }
            server.close();
            throw e instanceof java.io.IOException io ? new java.io.UncheckedIOException(io) : (RuntimeException) e;
        }
        FuseMount startedMount = mount;
        PlinthClient startedClient = mountClient;
        CountDownLatch stopped = RoleMixin.stopOnSignal("server", () -> {
            if (startedMount != null) {
                startedMount.close();
                startedClient.close();
            }
            server.close();
        });
        System.out.println("plinth server ready");
        System.out.println("  rpc:     " + server.rpcAddress() + "   (plinth --server " + server.rpcAddress() + " ...)");
        System.out.println("  status:  http://" + server.httpAddress() + "/   (the status page; /metrics, /healthz, /readyz)");
        if (server.s3Url() != null) {
            System.out.println("  s3:      " + server.s3Url() + "   (keys in " + server.s3CredentialsFile() + ")");
        }
        System.out.println("  secret:  " + server.secretFile());
        System.out.println("  targets: " + server.storage().targets().size() + " under " + data.toAbsolutePath().resolve("targets"));
        if (mount != null) {
            System.out.println("  mount:   " + mount.mountpoint() + "   (plinth umount " + mount.mountpoint() + " to unmount)");
        }
        for (dev.plinth.wire.messages.MgmtMessages.ArchiveInfo archive : server.mgmt().archives()) {
            System.out.println("  archive: " + archive.archiveId() + " = " + archive.uri() + "   (cold tier: plinth hsm archive|release|restore)");
        }
        System.out.println("  try:     bin/plinth fs put README.md /readme && bin/plinth fs ls /");
        if (server.s3Url() != null) {
            System.out.println("           AWS_SHARED_CREDENTIALS_FILE=" + server.s3CredentialsFile() + " aws --endpoint-url " + server.s3Url() + " s3 ls");
        }
        System.out.flush();
        stopped.await();
        return 0;
    }
}
