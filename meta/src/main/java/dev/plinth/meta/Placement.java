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

    /**
     * Refuses a layout no file could be placed with, so that setstripe fails rather than every
     * later create: an unknown pool, or more replicas than the pool has storage nodes (a chain's
     * members are on distinct nodes).
     */
    void requirePlaceable(Layout template, ClusterMap map) {
        PoolInfo pool = pool(template, map);
        if (template.erasureCoded()) {
            int width = template.dataCells() + template.parityCells();
            if (pool.targetIds().size() < width) {
                throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "erasure coding " + template.dataCells() + "+" + template.parityCells()
                        + " needs " + width + " targets; pool '" + template.pool() + "' has " + pool.targetIds().size()
                        + " (--force keeps the layout anyway: creates fail until targets are added)");
            }
            return;
        }
        int nodes = map.nodesOf(pool);
        if (template.replicas() > nodes) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, template.replicas() + " replicas need as many storage nodes; pool '"
                    + template.pool() + "' has " + nodes + " (--force keeps the layout anyway: creates fail until nodes are added)");
        }
    }

    /**
     * Why an erasure-coded layout is less safe here than it says, or null: its pool has fewer
     * storage nodes than the layout has cells, so some cells of each stripe share a node.
     */
    static String sharedNodes(Layout layout, ClusterMap map) {
        PoolInfo pool = map.pool(layout.pool());
        if (!layout.erasureCoded() || pool == null) {
            return null;
        }
        int nodes = map.nodesOf(pool);
        int width = layout.dataCells() + layout.parityCells();
        return nodes >= width ? null : layout.dataCells() + "+" + layout.parityCells() + " cells share storage nodes: pool '"
                + layout.pool() + "' has " + nodes + ", so a lost node may take more than " + layout.parityCells() + " cells of a stripe";
    }

    private static PoolInfo pool(Layout template, ClusterMap map) {
        PoolInfo pool = map.pool(template.pool());
        if (pool == null) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "no pool named '" + template.pool() + "' (see `plinth pool list`)");
        }
        return pool;
    }

    Layout place(Layout template, ClusterMap map) {
        PoolInfo pool = pool(template, map);
        if (template.erasureCoded()) {
            return template.withChains(cellTargets(template, pool, map)).withStaleCells(0).withChunkOwner(0);
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
            // not a lack of space (full chains are candidates): none that wide exists, or none is online
            boolean anyThatWide = map.chains().stream().anyMatch(chain -> chain.replicas() == template.replicas()
                    && chain.targetIds().stream().allMatch(poolTargets::contains));
            throw new PlinthException(anyThatWide ? ErrorCode.UNAVAILABLE : ErrorCode.INVALID_ARGUMENT, "pool '" + template.pool()
                    + "' has no " + (anyThatWide ? "online " : "") + "chain of " + template.replicas() + " replica(s)"
                    + (anyThatWide ? "" : " (such chains need as many storage nodes)"));
        }
        int count = Math.min(template.stripeCount(), candidates.size());
        int start = Math.floorMod(rotation.getAndIncrement(), candidates.size());
        List<Integer> chosen = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            chosen.add(candidates.get((start + i) % candidates.size()).chainId());
        }
        return new Layout(count, template.stripeSizeBytes(), template.chunkSizeBytes(), template.pool(), template.replicas(), chosen,
                template.mdtBytes(), template.protection(), template.dataCells(), template.parityCells(), template.encoding(), template.version(), 0, template.compressionLevel());
    }

    /**
     * The one-replica chains (one per target) of an erasure-coded file's k + m cells: online
     * targets of the pool with room, taken one per node in turn from a rotating start, so cells
     * land on distinct nodes while there are enough of them and on distinct targets otherwise.
     */
    private List<Integer> cellTargets(Layout template, PoolInfo pool, ClusterMap map) {
        int width = template.dataCells() + template.parityCells();
        java.util.TreeMap<Integer, List<Integer>> byNode = new java.util.TreeMap<>();
        java.util.Set<Integer> poolTargets = new HashSet<>(pool.targetIds());
        for (ChainInfo chain : map.chains()) {
            if (chain.replicas() != 1 || chain.targetIds().size() != 1 || !poolTargets.contains(chain.targetIds().getFirst())) {
                continue;
            }
            TargetInfo target = map.target(chain.targetIds().getFirst());
            if (target != null && target.state() == TargetState.ONLINE && target.freeBytes() >= template.chunkSizeBytes()) {
                byNode.computeIfAbsent(target.nodeId(), node -> new ArrayList<>()).add(chain.chainId());
            }
        }
        List<List<Integer>> nodes = new ArrayList<>(byNode.values());
        int total = nodes.stream().mapToInt(List::size).sum();
        if (total < width) {
            throw new PlinthException(pool.targetIds().size() >= width ? ErrorCode.UNAVAILABLE : ErrorCode.INVALID_ARGUMENT,
                    "erasure coding " + template.dataCells() + "+" + template.parityCells() + " needs " + width + " online targets with room; pool '"
                            + template.pool() + "' has " + total);
        }
        int start = Math.floorMod(rotation.getAndIncrement(), Math.max(1, total));
        for (List<Integer> chains : nodes) {
            java.util.Collections.rotate(chains, -Math.floorMod(start, chains.size()));
        }
        java.util.Collections.rotate(nodes, -Math.floorMod(start, nodes.size()));
        List<Integer> chosen = new ArrayList<>(width);
        for (int round = 0; chosen.size() < width; round++) {
            for (List<Integer> chains : nodes) {
                if (round < chains.size() && chosen.size() < width) {
                    chosen.add(chains.get(round));
                }
            }
        }
        return chosen;
    }
}
