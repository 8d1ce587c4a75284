package dev.plinth.cli;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class TopCommandTest {
    @Test
    void topPutsTheBusiestFirstAndSumsNodes() {
        var map = new dev.plinth.wire.messages.MgmtMessages.ClusterMap(1,
                java.util.List.of(new dev.plinth.wire.messages.MgmtMessages.NodeInfo(1, "h:1", true),
                        new dev.plinth.wire.messages.MgmtMessages.NodeInfo(2, "h:2", true)),
                java.util.List.of(target(1, 1), target(2, 1), target(3, 2)), java.util.List.of(), java.util.List.of(), java.util.List.of(),
                java.util.List.of(new dev.plinth.wire.messages.MgmtMessages.TargetRate(1, 10, 0),
                        new dev.plinth.wire.messages.MgmtMessages.TargetRate(2, 0, 30),
                        new dev.plinth.wire.messages.MgmtMessages.TargetRate(3, 25, 0)));
        assertThat(TopCommand.rows(map, TopCommand.Grouping.target)).extracting(TopCommand.Row::name)
                .containsExactly("target 2 (node 1)", "target 3 (node 2)", "target 1 (node 1)");
        assertThat(TopCommand.rows(map, TopCommand.Grouping.node)).extracting(TopCommand.Row::total).containsExactly(40L, 25L);
    }

    private static dev.plinth.wire.messages.MgmtMessages.TargetInfo target(int id, int node) {
        return new dev.plinth.wire.messages.MgmtMessages.TargetInfo(id, node, "t" + id, 100, 10,
                dev.plinth.wire.messages.MgmtMessages.TargetState.ONLINE, 0);
    }
}
