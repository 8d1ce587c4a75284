package dev.plinth.meta;

import static org.assertj.core.api.Assertions.assertThat;

import dev.plinth.common.Layout;
import java.nio.file.Path;
import java.util.List;
import org.apache.ratis.server.protocol.TermIndex;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What Ratis tells the MDT's state machine on a restart, replaying entries its store applied already. */
class MetaStateMachineTest {
    @TempDir
    Path directory;

    @Test
    void aReplayedEntryBelowTheStoresAppliedIndexLeavesItWhereItIs() {
        MetaStateMachine machine = new MetaStateMachine(directory, 0, 5_000, new Layout(1, 1 << 20, 1 << 20, "default", 1, List.of()), 1 << 20);
        // the store's applied index after a restart, then the log's first entry (a configuration) replayed from the start:
        // moving back failed Ratis's check and stopped the state machine, so the MDT never became leader
        machine.notifyTermIndexUpdated(4, 12_951);
        machine.notifyTermIndexUpdated(1, 0);
        assertThat(machine.getLastAppliedTermIndex()).isEqualTo(TermIndex.valueOf(4, 12_951));
        machine.notifyTermIndexUpdated(5, 12_952);
        assertThat(machine.getLastAppliedTermIndex()).isEqualTo(TermIndex.valueOf(5, 12_952));
    }
}
