package dev.plinth.mgmt;

import static org.assertj.core.api.Assertions.assertThat;

import dev.plinth.wire.messages.MgmtMessages.ChainInfo;
import dev.plinth.wire.messages.MgmtMessages.ChainMember;
import dev.plinth.wire.messages.MgmtMessages.MemberState;
import dev.plinth.wire.messages.MgmtMessages.TargetInfo;
import dev.plinth.wire.messages.MgmtMessages.TargetState;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

class ChainTablesTest {
    private static TargetInfo target(int id, int node) {
        return new TargetInfo(id, node, "t" + id, 1 << 30, 0, TargetState.ONLINE, node);
    }

    private static ChainInfo chain(int id, int... targets) {
        return new ChainInfo(id, 1, java.util.Arrays.stream(targets).mapToObj(t -> new ChainMember(t, MemberState.SERVING)).toList());
    }

    @Test
    void wideChainsUseDistinctNodesAndCoverEveryTarget() {
        List<TargetInfo> targets = List.of(target(1, 1), target(2, 1), target(3, 2), target(4, 3));
        List<ChainInfo> chains = ChainTables.formWide(List.of(), targets, 3, 1000);
        for (int width = 2; width <= 3; width++) {
            int w = width;
            List<ChainInfo> wide = chains.stream().filter(c -> c.replicas() == w).toList();
            assertThat(wide).isNotEmpty();
            Set<Integer> covered = new HashSet<>();
            for (ChainInfo chain : wide) {
                assertThat(chain.chainId()).isGreaterThan(1000);
                Set<Integer> nodes = new HashSet<>();
                chain.targetIds().forEach(t -> nodes.add(targets.stream().filter(x -> x.targetId() == t).findFirst().orElseThrow().nodeId()));
                assertThat(nodes).as("chain %s on distinct nodes", chain).hasSize(w);
                covered.addAll(chain.targetIds());
            }
            assertThat(covered).containsExactlyInAnyOrder(1, 2, 3, 4);
        }
        // forming again changes nothing: existing chains hold chunks and stay as they are
        assertThat(ChainTables.formWide(chains, targets, 3, 1000)).isEqualTo(chains);
    }

    @Test
    void tooFewNodesFormNoWideChains() {
        List<TargetInfo> oneNode = List.of(target(1, 1), target(2, 1));
        assertThat(ChainTables.formWide(List.of(), oneNode, 3, 1000)).isEmpty();
    }

    @Test
    void anOfflineMemberLeavesAndComesBackThroughSyncing() {
        List<ChainInfo> chains = List.of(chain(1001, 1, 2, 3), chain(1, 1));

        List<ChainInfo> afterFailure = ChainTables.offline(chains, 1);
        ChainInfo wide = afterFailure.getFirst();
        assertThat(wide.version()).isEqualTo(2);
        assertThat(wide.targetIds()).containsExactly(2, 3); // 2 is the new head
        assertThat(wide.members().getLast()).isEqualTo(new ChainMember(1, MemberState.OFFLINE));
        // a one-replica chain keeps its only member: it alone has the data, so the chain waits for it
        assertThat(afterFailure.get(1)).isEqualTo(chains.get(1));

        List<ChainInfo> back = ChainTables.returned(afterFailure, 1);
        assertThat(back.getFirst().stateOf(1)).isEqualTo(MemberState.SYNCING);
        assertThat(back.getFirst().writeTargets()).containsExactly(2, 3, 1); // new writes reach it at the end
        assertThat(back.getFirst().targetIds()).containsExactly(2, 3);       // but it serves no reads yet

        List<ChainInfo> synced = ChainTables.synced(back, 1001, 1);
        assertThat(synced.getFirst().targetIds()).containsExactly(2, 3, 1);
        assertThat(synced.getFirst().version()).isEqualTo(4);
        assertThat(synced.getFirst().healthy()).isTrue();
    }

    @Test
    void theLastServingMemberStaysWhenEveryOtherIsGone() {
        List<ChainInfo> chains = ChainTables.offline(List.of(chain(1001, 1, 2)), 1);
        List<ChainInfo> both = ChainTables.offline(chains, 2);
        assertThat(both.getFirst().targetIds()).containsExactly(2);
        assertThat(both.getFirst().stateOf(1)).isEqualTo(MemberState.OFFLINE);
    }

    @Test
    void aLostMemberIsReplacedOnANodeTheChainDoesNotUse() {
        List<TargetInfo> targets = List.of(target(1, 1), target(2, 2), target(3, 2), target(4, 3));
        List<ChainInfo> chains = ChainTables.offline(List.of(chain(1001, 1, 2)), 1);

        ChainInfo rebuilt = ChainTables.replaceLost(chains, 1, targets).getFirst();
        assertThat(rebuilt.stateOf(1)).isNull();
        assertThat(rebuilt.stateOf(4)).isEqualTo(MemberState.SYNCING); // node 2 holds the chain's other member already
        assertThat(rebuilt.targetIds()).containsExactly(2);
        assertThat(rebuilt.version()).isEqualTo(3);
        assertThat(rebuilt.replicas()).isEqualTo(2);

        // no online target on another node: the chain waits, degraded
        List<TargetInfo> sameNode = List.of(target(1, 1), target(2, 2), target(3, 2));
        assertThat(ChainTables.replaceLost(chains, 1, sameNode)).isEqualTo(chains);
    }

    @Test
    void whenALinkBreaksTheSuccessorLeavesThatChainOnly() {
        List<ChainInfo> chains = List.of(chain(1001, 1, 2, 3), chain(1002, 2, 3, 1));

        List<ChainInfo> after = ChainTables.unreachable(chains, 1001, 1, 2, false);
        assertThat(after.getFirst().targetIds()).containsExactly(1, 3); // 1 has every acknowledged write and forwards to 3 now
        assertThat(after.getFirst().stateOf(2)).isEqualTo(MemberState.OFFLINE);
        assertThat(after.getFirst().version()).isEqualTo(2);
        assertThat(after.get(1)).isEqualTo(chains.get(1)); // 2's other chain is not touched

        // a reporter that cannot reach several nodes is the suspect: it leaves instead
        List<ChainInfo> blamed = ChainTables.unreachable(chains, 1001, 1, 2, true);
        assertThat(blamed.getFirst().targetIds()).containsExactly(2, 3);
        // unless it is the last serving member (here its successor is still syncing)
        List<ChainInfo> pair = ChainTables.returned(ChainTables.offline(List.of(chain(1003, 1, 2)), 2), 2);
        ChainInfo kept = ChainTables.unreachable(pair, 1003, 1, 2, true).getFirst();
        assertThat(kept.targetIds()).containsExactly(1);
        assertThat(kept.stateOf(2)).isEqualTo(MemberState.OFFLINE);

        // reports about members that are not neighbours (or already gone) change nothing
        assertThat(ChainTables.unreachable(chains, 1001, 1, 3, false)).isEqualTo(chains);
        assertThat(ChainTables.unreachable(after, 1001, 1, 2, false)).isEqualTo(after);

        List<ChainInfo> retry = ChainTables.rejoin(after, 1001, 2);
        assertThat(retry.getFirst().writeTargets()).containsExactly(1, 3, 2);
        assertThat(retry.getFirst().stateOf(2)).isEqualTo(MemberState.SYNCING);
    }

    @Test
    void aRestartedMemberSyncsBeforeItServesAgainUnlessItServesAlone() {
        List<ChainInfo> chains = List.of(chain(1001, 1, 2), ChainTables.offline(List.of(chain(1002, 2, 1)), 2).getFirst(), chain(1, 1));
        List<ChainInfo> after = ChainTables.restarted(chains, 1);
        assertThat(after.get(0).targetIds()).containsExactly(2);            // 2 serves; 1 catches up first
        assertThat(after.get(0).stateOf(1)).isEqualTo(MemberState.SYNCING);
        assertThat(after.get(1)).isEqualTo(chains.get(1));                    // 1 serves chain 1002 alone: it stays
        assertThat(after.get(2)).isEqualTo(chains.get(2));                    // and its own one-replica chain too
    }
}
