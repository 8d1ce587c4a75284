package dev.plinth.mgmt;

import dev.plinth.wire.messages.MgmtMessages.ChainInfo;
import dev.plinth.wire.messages.MgmtMessages.ChainMember;
import dev.plinth.wire.messages.MgmtMessages.MemberState;
import dev.plinth.wire.messages.MgmtMessages.TargetInfo;
import dev.plinth.wire.messages.MgmtMessages.TargetState;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * How chain tables change, as pure functions of the old table: mgmt's decisions in one place,
 * testable without a cluster. Every change of a chain raises its version, and members stay in
 * the order SERVING (head first), SYNCING, OFFLINE.
 */
final class ChainTables {
    private ChainTables() {}

    /**
     * {@code targetId} went offline: it leaves the serving or syncing members of its chains,
     * unless it is a chain's last serving member, which keeps its place (it alone has every
     * committed write, so the chain waits for it rather than lose them).
     */
    static List<ChainInfo> offline(List<ChainInfo> chains, int targetId) {
        return change(chains, targetId, chain -> {
            MemberState state = chain.stateOf(targetId);
            if (state == MemberState.OFFLINE || (state == MemberState.SERVING && chain.targetIds().size() == 1)) {
                return chain;
            }
            return withState(chain, targetId, MemberState.OFFLINE);
        });
    }

    /** {@code targetId} is back: where it was offline it starts syncing. */
    static List<ChainInfo> returned(List<ChainInfo> chains, int targetId) {
        return change(chains, targetId, chain -> chain.stateOf(targetId) == MemberState.OFFLINE
                ? withState(chain, targetId, MemberState.SYNCING) : chain);
    }

    /**
     * Member {@code fromTarget} of chain {@code chainId} cannot reach its successor
     * {@code toTarget} though both are online: one of them leaves that chain (its other chains
     * stay as they are). The successor leaves: its predecessor holds every write the chain
     * acknowledged, so the chain goes on without losing any. Unless {@code blameReporter}
     * (mgmt found the reporter unable to reach several nodes: its own link is the likelier
     * fault), then the reporter leaves, if it is not the chain's last serving member. Returns the
     * chains unchanged when the two are not successive members that take writes.
     */
    static List<ChainInfo> unreachable(List<ChainInfo> chains, int chainId, int fromTarget, int toTarget, boolean blameReporter) {
        List<ChainInfo> result = new ArrayList<>(chains);
        for (int i = 0; i < result.size(); i++) {
            ChainInfo chain = result.get(i);
            if (chain.chainId() != chainId) {
                continue;
            }
            List<Integer> order = chain.writeTargets();
            int position = order.indexOf(fromTarget);
            if (position < 0 || position + 1 >= order.size() || order.get(position + 1) != toTarget) {
                return chains;
            }
            long serving = chain.members().stream().filter(m -> m.state() == MemberState.SERVING).count();
            boolean reporterMayLeave = chain.stateOf(fromTarget) != MemberState.SERVING || serving > 1;
            int leaving = blameReporter && reporterMayLeave ? fromTarget : toTarget;
            result.set(i, withState(chain, leaving, MemberState.OFFLINE));
        }
        return result;
    }

    /** {@code targetId}, online but out of chain {@code chainId} (it was unreachable), tries again: it syncs. */
    static List<ChainInfo> rejoin(List<ChainInfo> chains, int chainId, int targetId) {
        return change(chains, targetId, chain -> chain.chainId() == chainId && chain.stateOf(targetId) == MemberState.OFFLINE
                ? withState(chain, targetId, MemberState.SYNCING) : chain);
    }

    /**
     * {@code targetId}'s process started again (it registered anew): it may have lost writes it
     * had not passed on and forgotten which of its chunks were not yet committed, so wherever
     * another member serves it syncs before it serves again; where it is the only serving member
     * it stays (it has every committed write); where it was offline it syncs as on return.
     */
    static List<ChainInfo> restarted(List<ChainInfo> chains, int targetId) {
        return change(chains, targetId, chain -> {
            MemberState state = chain.stateOf(targetId);
            long serving = chain.members().stream().filter(m -> m.state() == MemberState.SERVING).count();
            boolean resync = state == MemberState.OFFLINE || (state == MemberState.SERVING && serving > 1);
            return resync ? withState(chain, targetId, MemberState.SYNCING) : chain;
        });
    }

    /** {@code targetId} has caught up with chain {@code chainId}: it becomes the chain's new tail. */
    static List<ChainInfo> synced(List<ChainInfo> chains, int chainId, int targetId) {
        return change(chains, targetId, chain -> chain.chainId() == chainId && chain.stateOf(targetId) == MemberState.SYNCING
                ? withState(chain, targetId, MemberState.SERVING) : chain);
    }

    /**
     * {@code lostTarget} is not coming back: in every wider chain where it is offline, another
     * online target takes its place, on a node the chain does not use yet (fewest chains of that
     * width first), and starts SYNCING: it copies the whole chain from the serving members.
     * Chains with no such target keep waiting, degraded. One-replica chains cannot be rebuilt.
     */
    static List<ChainInfo> replaceLost(List<ChainInfo> chains, int lostTarget, List<TargetInfo> targets) {
        List<ChainInfo> result = new ArrayList<>(chains);
        for (int i = 0; i < result.size(); i++) {
            ChainInfo chain = result.get(i);
            if (chain.replicas() < 2 || chain.stateOf(lostTarget) != MemberState.OFFLINE) {
                continue;
            }
            Set<Integer> usedNodes = new HashSet<>();
            for (ChainMember member : chain.members()) {
                if (member.targetId() != lostTarget) {
                    targets.stream().filter(t -> t.targetId() == member.targetId()).findFirst().ifPresent(t -> usedNodes.add(t.nodeId()));
                }
            }
            Map<Integer, Integer> memberships = new HashMap<>();
            for (ChainInfo other : result) {
                if (other.replicas() == chain.replicas()) {
                    other.members().forEach(m -> memberships.merge(m.targetId(), 1, Integer::sum));
                }
            }
            TargetInfo replacement = targets.stream()
                    .filter(t -> t.state() == TargetState.ONLINE && !usedNodes.contains(t.nodeId()) && chain.stateOf(t.targetId()) == null)
                    .min(Comparator.<TargetInfo>comparingInt(t -> memberships.getOrDefault(t.targetId(), 0)).thenComparingInt(TargetInfo::targetId))
                    .orElse(null);
            if (replacement == null) {
                continue;
            }
            List<ChainMember> members = new ArrayList<>();
            chain.members().stream().filter(m -> m.state() == MemberState.SERVING).forEach(members::add);
            chain.members().stream().filter(m -> m.state() == MemberState.SYNCING).forEach(members::add);
            members.add(new ChainMember(replacement.targetId(), MemberState.SYNCING));
            chain.members().stream().filter(m -> m.state() == MemberState.OFFLINE && m.targetId() != lostTarget).forEach(members::add);
            result.set(i, new ChainInfo(chain.chainId(), chain.version() + 1, List.copyOf(members)));
        }
        return result;
    }

    private interface Change {
        ChainInfo apply(ChainInfo chain);
    }

    private static List<ChainInfo> change(List<ChainInfo> chains, int targetId, Change change) {
        List<ChainInfo> result = new ArrayList<>(chains.size());
        for (ChainInfo chain : chains) {
            result.add(chain.stateOf(targetId) == null ? chain : change.apply(chain));
        }
        return result;
    }

    /** The chain with {@code targetId} in {@code state}, placed last among the members of that state. */
    private static ChainInfo withState(ChainInfo chain, int targetId, MemberState state) {
        List<ChainMember> members = new ArrayList<>();
        for (MemberState group : MemberState.values()) {
            for (ChainMember member : chain.members()) {
                if (member.targetId() != targetId && member.state() == group) {
                    members.add(member);
                }
            }
            if (group == state) {
                members.add(new ChainMember(targetId, state));
            }
        }
        return new ChainInfo(chain.chainId(), chain.version() + 1, List.copyOf(members));
    }

    /**
     * Adds chains of 2..{@code replicasMax} members on distinct nodes so that every online target
     * heads (or is in) at least one chain of each width, where enough nodes exist. Existing chains
     * are kept as they are: their chunks live on their members. Members are picked among online
     * targets of other nodes, those in the fewest chains of that width first, so that load spreads.
     */
    static List<ChainInfo> formWide(List<ChainInfo> chains, List<TargetInfo> targets, int replicasMax, int idBase) {
        List<ChainInfo> result = new ArrayList<>(chains);
        int nextId = Math.max(idBase, result.stream().mapToInt(ChainInfo::chainId).max().orElse(0)) + 1;
        List<TargetInfo> online = targets.stream().filter(t -> t.state() == TargetState.ONLINE)
                .sorted(Comparator.comparingInt(TargetInfo::targetId)).toList();
        for (int width = 2; width <= replicasMax; width++) {
            Map<Integer, Integer> memberships = new HashMap<>();
            for (ChainInfo chain : result) {
                if (chain.chainId() > idBase && chain.replicas() == width) {
                    chain.members().forEach(m -> memberships.merge(m.targetId(), 1, Integer::sum));
                }
            }
            for (TargetInfo head : online) {
                if (memberships.containsKey(head.targetId())) {
                    continue;
                }
                List<ChainMember> members = new ArrayList<>(List.of(new ChainMember(head.targetId(), MemberState.SERVING)));
                Set<Integer> nodes = new HashSet<>(List.of(head.nodeId()));
                List<TargetInfo> candidates = online.stream()
                        .sorted(Comparator.<TargetInfo>comparingInt(t -> memberships.getOrDefault(t.targetId(), 0))
                                .thenComparingInt(TargetInfo::targetId))
                        .toList();
                for (TargetInfo candidate : candidates) {
                    if (members.size() < width && nodes.add(candidate.nodeId())) {
                        members.add(new ChainMember(candidate.targetId(), MemberState.SERVING));
                    }
                }
                if (members.size() < width) {
                    break; // too few nodes for this width; later targets would fail alike
                }
                members.forEach(m -> memberships.merge(m.targetId(), 1, Integer::sum));
                result.add(new ChainInfo(nextId++, 1, List.copyOf(members)));
            }
        }
        return result;
    }
}
