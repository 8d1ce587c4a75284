package dev.plinth.integration;

import static org.assertj.core.api.Assertions.assertThat;

import dev.plinth.client.PlinthClient;
import dev.plinth.common.Config;
import dev.plinth.wire.messages.MgmtMessages.NodeInfo;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The status page of a cluster of separate processes, rendered by headless Chromium (its
 * scripts run, as in an operator's browser): it shows the real nodes and targets, and a killed
 * storage node as offline. Screenshots are kept in cli/target/status-page-*.png.
 */
class StatusPageIT {
    @TempDir
    Path directory;

    @Test
    void showsTheClusterAndAKilledNodeAsOffline() throws Exception {
        dev.plinth.testing.Prerequisites.require(dev.plinth.testing.Prerequisites.CHROMIUM);
        try (ProcessCluster cluster = ProcessCluster.start(directory, 2, List.of("mgmt.node-timeout-millis=2000"));
             PlinthClient client = cluster.client(Config.defaults())) {
            String url = "http://" + cluster.mgmtHttp() + "/";
            var map = ProcessCluster.awaitMap(client, m -> m.nodes().size() == 2 && m.mdts().size() == 1, 10_000);

            // some I/O, so the page has a job to list (this client's: no PLINTH_JOB_ID here, so CLIENTNAME.UID)
            try (var file = client.create("/written-by-the-test", 0644, true, null)) {
                file.write(0, java.nio.ByteBuffer.wrap(new byte[1 << 20]));
            }
            long deadline = System.currentTimeMillis() + 10_000;
            while (client.clusterJobStats().isEmpty() && System.currentTimeMillis() < deadline) {
                Thread.sleep(200);
            }
            String job = client.clusterJobStats().getFirst().jobId();

            String page = render(url, "healthy");
            assertThat(page).contains("Busiest jobs").contains("<td>" + job + "</td>");
            for (NodeInfo node : map.nodes()) {
                assertThat(nodeRow(page, node)).as("row of node %d", node.nodeId()).contains(">online<");
            }
            for (var target : map.targets()) {
                assertThat(page).contains(target.path());
            }
            assertThat(page).contains("All nodes, targets and chains healthy").contains(map.mdts().getFirst().rpcAddress());
            // the chains card counts every chain, as /metrics does (it counted only replicated ones: 0 beside 4 healthy)
            int chains = map.chains().size();
            assertThat(page).contains("<div class=\"label\">chains</div><div class=\"value\">" + chains + "</div>");
            // without JavaScript the page still says where its figures are (a browser shows <noscript> then; Chromium's
            // --dump-dom needs scripts itself, so the page is read as served)
            String served = java.net.http.HttpClient.newHttpClient().send(java.net.http.HttpRequest.newBuilder(java.net.URI.create(url)).build(),
                    java.net.http.HttpResponse.BodyHandlers.ofString()).body();
            String noscript = served.substring(served.indexOf("<noscript>"), served.indexOf("</noscript>"));
            assertThat(noscript).contains("/status.json").contains("plinth status");

            ProcessCluster.StorageNodeProcess victim = cluster.storageNodes().get(1);
            victim.kill();
            NodeInfo dead = ProcessCluster.awaitMap(client, m -> m.nodes().stream().anyMatch(n -> !n.online()), 20_000)
                    .nodes().stream().filter(n -> !n.online()).findFirst().orElseThrow();
            String after = render(url, "offline");
            assertThat(nodeRow(after, dead)).contains(">offline<");
            assertThat(after).contains("Needs attention").contains("node " + dead.nodeId() + " (" + dead.rpcAddress() + ") is offline");
        }
    }

    /** The page's DOM after its scripts ran, and a screenshot beside the test's output. */
    private static String render(String url, String name) throws Exception {
        Path screenshot = Path.of("target", "status-page-" + name + ".png").toAbsolutePath();
        Files.deleteIfExists(screenshot);
        List<String> common = List.of("/usr/bin/chromium", "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                "--window-size=1280,1000", "--virtual-time-budget=4000");
        TestProcesses.run(concat(common, "--screenshot=" + screenshot, url), Duration.ofSeconds(60));
        assertThat(screenshot).exists();
        return TestProcesses.run(concat(common, "--dump-dom", url), Duration.ofSeconds(60));
    }

    private static List<String> concat(List<String> head, String... tail) {
        List<String> all = new java.util.ArrayList<>(head);
        all.addAll(List.of(tail));
        return all;
    }

    /** The table row of {@code node}: from its id cell to the end of the row. */
    private static String nodeRow(String page, NodeInfo node) {
        var matcher = Pattern.compile("<tr><td>" + node.nodeId() + "</td><td>" + Pattern.quote(node.rpcAddress()) + "</td>.*?</tr>").matcher(page);
        assertThat(matcher.find()).as("node %d (%s) has a row on the page", node.nodeId(), node.rpcAddress()).isTrue();
        return matcher.group();
    }
}
