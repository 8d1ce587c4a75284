package dev.plinth.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.plinth.client.ClientOptions;
import dev.plinth.client.PlinthClient;
import dev.plinth.client.PlinthFile;
import dev.plinth.common.Config;
import dev.plinth.common.Credentials;
import dev.plinth.wire.ClusterSecret;
import dev.plinth.wire.HostPort;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Every role runs both ways from the same builders: all on one host (the embedded server), and
 * each on a host of its own (as {@code plinth mgmt|meta|storage|gateway} run them), here in one
 * JVM on separate listeners that reach each other only over RPC.
 */
class RolesBothWaysTest {
    @TempDir
    Path directory;

    private static Config config() {
        return Config.defaults().with("rpc.listen", "127.0.0.1:0").with("http.listen", "127.0.0.1:0").with("s3.listen", "127.0.0.1:0");
    }

    @Test
    void allRolesOnOneHost() throws Exception {
        try (EmbeddedServer server = EmbeddedServer.start(directory.resolve("embedded"), config())) {
            assertThat(server.mgmt()).isNotNull();
            assertThat(server.meta()).isNotNull();
            assertThat(server.storage().targets()).hasSize(4);
            assertThat(Files.readString(server.dataDirectory().resolve("endpoints.json"))).contains("\"role\": \"server\"")
                    .contains("\"raft\"").contains("\"s3\"").contains("\"node\": \"1\"");
            roundTrip(server.rpcAddress(), ClusterSecret.read(server.secretFile()));
            assertThat(anonymousGet(server.s3Url())).isEqualTo(403);
            assertThat(ready(server.httpAddress())).isEqualTo(200);
        }
    }

    @Test
    void eachRoleOnAHostOfItsOwn() throws Exception {
        ClusterSecret secret = ClusterSecret.readOrCreate(directory.resolve("cluster.secret"));
        Config config = config();
        try (ProcessHost mgmt = ProcessHost.run("mgmt", config, secret, true, directory.resolve("mgmt.json"), Map.of(),
                host -> MgmtRole.add(host, directory.resolve("mgmt"), List.of(), 0))) {
            List<HostPort> mgmtAddress = List.of(mgmt.rpcAddress());
            try (ProcessHost storage = ProcessHost.run("storage", config, secret, true, directory.resolve("storage.json"), Map.of(),
                    host -> StorageRole.add(host, List.of(directory.resolve("t-a"), directory.resolve("t-b")), List.of(), null, mgmtAddress));
                 ProcessHost meta = ProcessHost.run("meta", config, secret, true, directory.resolve("meta.json"), Map.of(),
                         host -> MetaRole.add(host, directory.resolve("meta"), 0, mgmtAddress))) {
                assertThat(Files.readString(directory.resolve("storage.json"))).contains("\"targets\": \"1,2\"");
                assertThat(ready(meta.httpAddress())).isEqualTo(200);
                roundTrip(mgmt.rpcAddress(), secret);
                try (PlinthClient client = PlinthClient.connect(new ClientOptions(mgmt.rpcAddress(), secret, Credentials.ROOT, config, "gateway"));
                     ProcessHost gateway = ProcessHost.run("gateway", config, secret, false, null, Map.of(),
                             host -> GatewayRole.add(host, client, HostPort.parse("127.0.0.1:0"), null))) {
                    assertThat(gateway.rpcAddress()).as("a gateway of its own serves S3 and HTTP only").isNull();
                    assertThat(anonymousGet(((GatewayRole) gateway.roles().getFirst()).url())).isEqualTo(403);
                }
            }
        }
    }

    /** A file written and read back through a client of the cluster at {@code address}. */
    private static void roundTrip(HostPort address, ClusterSecret secret) {
        try (PlinthClient client = PlinthClient.connect(new ClientOptions(address, secret, Credentials.ROOT, config(), "test"))) {
            byte[] bytes = "both ways".getBytes(StandardCharsets.UTF_8);
            try (PlinthFile file = client.create("/round-trip", 0644, false, null)) {
                file.write(0, ByteBuffer.wrap(bytes));
            }
            try (PlinthFile file = client.open("/round-trip", false)) {
                ByteBuffer read = ByteBuffer.allocate(bytes.length);
                file.read(0, read);
                assertThat(read.array()).isEqualTo(bytes);
            }
        }
    }

    private static int anonymousGet(String url) throws Exception {
        return HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create(url + "/")).build(), HttpResponse.BodyHandlers.discarding())
                .statusCode();
    }

    private static int ready(HostPort http) throws Exception {
        return HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create("http://" + http + "/readyz")).build(),
                HttpResponse.BodyHandlers.discarding()).statusCode();
    }
}
