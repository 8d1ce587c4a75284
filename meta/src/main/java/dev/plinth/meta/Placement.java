package dev.plinth.meta;

import dev.plinth.common.ErrorCode;
import dev.plinth.common.Layout;
import dev.plinth.common.PlinthException;
import dev.plinth.wire.messages.MgmtMessages.ChainInfo;
import dev.plinth.wire.messages.MgmtMessages.ClusterMap;
import dev.plinth.wire.messages.MgmtMessages.PoolInfo;
import dev.plinth.wire.messages.MgmtMessages.TargetInfo;
import dev.plinth.wire.messages.MgmtMessages.TargetState;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Chooses the chains of a new file: those as wide as the layout's replica count whose serving
 * targets are all in the layout's pool and online, taken round-robin from a rotating start so
 * files spread evenly; healthy chains before degraded ones, and chains on a target with less than
 * one chunk free only when nothing else is left. A stripe count larger
 * than the usable chains is cut to their number, as Lustre does with OSTs. Thread-safe.
 */
final class Placement {
    private final AtomicInteger rotation = new AtomicInteger();

    Layout place(Layout template, ClusterMap map) {
        PoolInfo pool = map.pool(template.pool());
        if (pool == null) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "no pool named '" + template.pool() + "'");
        }
        Set<Integer> poolTargets = new HashSet<>(pool.targetIds());
        // best first: healthy chains with room, degraded ones with room (a member away), then full ones
        List<ChainInfo> healthy = new ArrayList<>();
        List<ChainInfo> degraded = new ArrayList<>();
        List<ChainInfo> full = new ArrayList<>();
        for (ChainInfo chain : map.chains()) {
            if (chain.replicas() != template.replicas() || chain.targetIds().isEmpty()) {
                continue;
            }
            boolean usable = true;
            boolean hasRoom = true;
            for (int targetId : chain.targetIds()) {
                TargetInfo target = map.target(targetId);
                usable &= target != null && poolTargets.contains(targetId) && target.state() == TargetState.ONLINE;
                hasRoom &= target != null && target.freeBytes() >= template.chunkSizeBytes();
            }
            if (usable) {
                (!hasRoom ? full : chain.healthy() ? healthy : degraded).add(chain);
            }
        }
        List<ChainInfo> candidates = !healthy.isEmpty() ? healthy : !degraded.isEmpty() ? degraded : full;
        if (candidates.isEmpty()) {
            throw new PlinthException(ErrorCode.NO_SPACE, "pool '" + template.pool() + "' has no online chain of "
                    + template.replicas() + " replica(s)" + (template.replicas() > 1 ? " (such chains need as many storage nodes)" : ""));
        }
        int count = Math.min(template.stripeCount(), candidates.size());
        int start = Math.floorMod(rotation.getAndIncrement(), candidates.size());
        List<Integer> chosen = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            chosen.add(candidates.get((start + i) % candidates.size()).chainId());
        }
        return new Layout(count, template.stripeSizeBytes(), template.chunkSizeBytes(), template.pool(), template.replicas(), chosen, template.mdtBytes());
    }
}
