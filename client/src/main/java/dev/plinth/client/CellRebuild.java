package dev.plinth.client;

import dev.plinth.common.ErrorCode;
import dev.plinth.common.Layout;
import dev.plinth.common.PlinthException;
import dev.plinth.wire.messages.MetaMessages;
import dev.plinth.wire.messages.MetaMessages.Attributes;
import dev.plinth.wire.messages.MgmtMessages.ChainInfo;
import dev.plinth.wire.messages.MgmtMessages.ClusterMap;
import dev.plinth.wire.messages.MgmtMessages.PoolInfo;
import dev.plinth.wire.messages.MgmtMessages.TargetInfo;
import dev.plinth.wire.messages.MgmtMessages.TargetState;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;

/**
 * {@code plinth rebuild}: an erasure-coded file's cells on targets that will not come back are
 * decoded from its other cells onto other targets (design note 89).
 */
public final class CellRebuild {
    private CellRebuild() {}

    /** What a rebuild did to one file: the cells it moved (none if it had none on the targets) and the chunk groups it rebuilt. */
    public record Result(List<Integer> movedCells, long groupsRebuilt) {}

    /** What happened to one file with chunks on gone targets: rebuilt, would rebuild (a dry run), lost, busy or failed; note in words or null. */
    public record FileOutcome(long inodeId, String outcome, String note) {
        /** Whether the file needs no more work: rebuilt, or lost for good (nothing can bring a one-replica chunk back). */
        public boolean settled() {
            return outcome.equals("rebuilt") || outcome.equals("lost");
        }
    }

    /**
     * Finds every file with chunks on {@code goneTargets} (the MDTs' file chain lists) and hands
     * {@code outcomes} what became of each: erasure-coded files are rebuilt ({@link #rebuild}),
     * or only listed with {@code dryRun}; files with one replica there are lost; replicated ones
     * are left to mgmt and resync and not reported.
     */
    public static void rebuildTargets(PlinthClient client, Set<Integer> goneTargets, boolean dryRun,
                                      java.util.function.Consumer<FileOutcome> outcomes) {
        ClusterMap map = client.refreshClusterMap();
        Set<Integer> affected = new HashSet<>();
        for (ChainInfo chain : map.chains()) {
            if (chain.members().stream().anyMatch(member -> goneTargets.contains(member.targetId()))) {
                affected.add(chain.chainId());
            }
        }
        for (dev.plinth.wire.messages.MgmtMessages.MdtInfo mdt : map.mdts()) {
            client.forEachFileChains(mdt.mdtId(), false, file -> {
                // not file.expectsChunks(): it is false for files open now, which are retried as busy, not passed over
                if (file.chainIds().stream().anyMatch(affected::contains)) {
                    FileOutcome outcome = rebuildFile(client, file.inodeId(), goneTargets, dryRun);
                    if (outcome != null) {
                        outcomes.accept(outcome);
                    }
                }
            });
        }
    }

    /**
     * Rebuilds one file found with chunks on {@code goneTargets} (or, with {@code dryRun}, says
     * it would): its outcome, or null where there is nothing to do (it was removed, it has no
     * chunks, or it is replicated and resync restores it).
     */
    public static FileOutcome rebuildFile(PlinthClient client, long inodeId, Set<Integer> goneTargets, boolean dryRun) {
        ClusterMap map = client.clusterMap();
        Attributes file;
        try {
            file = client.getAttr(inodeId);
        } catch (PlinthException e) {
            return null; // removed since it was listed
        }
        if (file.layout() == null || dev.plinth.wire.messages.HsmMessages.released(file)) {
            return null; // no chunks: all of it is in the archive
        }
        if (!file.layout().erasureCoded()) {
            if (file.sizeBytes() <= file.layout().mdtBytes()) {
                return null; // all of it beside the inode (an erasure-coded file open for writing is rebuilt whatever its size says)
            }
            boolean unreplicated = file.layout().chainIds().stream().map(map::chain)
                    .anyMatch(chain -> chain != null && chain.replicas() < 2
                            && chain.members().stream().anyMatch(m -> goneTargets.contains(m.targetId())));
            return unreplicated ? new FileOutcome(inodeId, "lost", "one replica of it was on " + goneTargets
                    + ": what it held is gone unless the target comes back") : null; // replicated: mgmt and resync restore its chains
        }
        if (dryRun) {
            return new FileOutcome(inodeId, "would rebuild", null);
        }
        try {
            Result result = rebuild(client, file, goneTargets);
            return new FileOutcome(inodeId, "rebuilt", "cells " + result.movedCells() + " moved, " + result.groupsRebuilt()
                    + " chunk group(s) rebuilt");
        } catch (PlinthException e) {
            return new FileOutcome(inodeId, e.code() == ErrorCode.BUSY ? "busy" : "failed", e.getMessage());
        }
    }

    /**
     * Moves an erasure-coded file's cells off {@code goneTargets} (targets that will not come
     * back): each such cell gets another target's one-replica chain, on a node the file's other
     * cells do not use where there is one, else on a target they do not use; every chunk group is
     * then checked through the new chains, and the moved cells, absent there, are decoded from
     * the others and written with the group's other cells under one new tag. Only then does the
     * file's layout name the new chains ({@link MetaMessages.ReplaceCellChains}), so no reader
     * ever meets an empty cell. A file written meanwhile is rebuilt again (up to 8 times); one that
     * stays open is BUSY after 10 s.
     */
    public static Result rebuild(PlinthClient client, Attributes file, Set<Integer> goneTargets) {
        long inodeId = file.inodeId();
        for (int attempt = 0; ; attempt++) {
            Attributes current = attempt == 0 ? file : client.getAttr(inodeId);
            Layout layout = current.layout();
            if (layout == null || !layout.erasureCoded()) {
                throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "inode " + inodeId + " is not erasure-coded");
            }
            ClusterMap map = client.refreshClusterMap();
            List<Integer> chains = new ArrayList<>(layout.chainIds());
            List<Integer> moved = new ArrayList<>();
            for (int cell = 0; cell < chains.size(); cell++) {
                ChainInfo chain = map.chain(chains.get(cell));
                if (chain != null && chain.members().stream().anyMatch(member -> goneTargets.contains(member.targetId()))) {
                    moved.add(cell);
                }
            }
            if (moved.isEmpty()) {
                return new Result(List.of(), 0);
            }
            for (int cell : moved) {
                chains.set(cell, replacementChain(map, layout.pool(), inodeId, chains, moved, goneTargets));
            }
            long movedMask = moved.stream().mapToLong(cell -> 1L << cell).reduce(0, (a, b) -> a | b);
            // a moved cell is decoded onto its new chain whether it was stale or not; the stale cells that stay are left out
            Layout next = layout.withChains(chains).withStaleCells(layout.staleCells() & ~movedMask);
            ErasureCodedStripes.ParityCheck check = new ErasureCodedStripes(client, inodeId, next)
                    .checkParity(current.layout().storedSize(current.sizeBytes()), true, 0, bytes -> {});
            List<String> failed = check.problems().stream().filter(problem -> !problem.endsWith("(repaired)")).toList();
            if (!failed.isEmpty()) {
                throw new PlinthException(ErrorCode.IO_ERROR, "inode " + inodeId + ": " + failed.getFirst());
            }
            long busySince = System.nanoTime();
            while (true) {
                try {
                    client.meta(new MetaMessages.ReplaceCellChains(client.header(), inodeId, layout.chainIds(), chains, current.sizeBytes(),
                            current.mtimeNanos()));
                    return new Result(moved, check.repaired());
                } catch (PlinthException e) {
                    if (e.code() == ErrorCode.CHANGED && attempt < 8) {
                        break; // written meanwhile: what was written went to the old chains, so rebuild again
                    }
                    if (e.code() != ErrorCode.WOULD_BLOCK || System.nanoTime() - busySince > TimeUnit.SECONDS.toNanos(10)) {
                        throw e.code() == ErrorCode.WOULD_BLOCK ? new PlinthException(ErrorCode.BUSY, "inode " + inodeId + " stays open", e) : e;
                    }
                    Migration.pause(200);
                }
            }
        }
    }

    /**
     * A one-replica chain of an online target of {@code pool} for a moved cell: not one the file
     * uses, on a node its kept cells do not use where there is one; among those, one chosen by
     * the file's inode id, so that a target's cells spread over the others instead of all going
     * to one.
     */
    private static int replacementChain(ClusterMap map, String pool, long inodeId, List<Integer> chains, List<Integer> moved,
                                        Set<Integer> goneTargets) {
        PoolInfo poolInfo = map.pool(pool);
        Set<Integer> usedNodes = new HashSet<>();
        for (int cell = 0; cell < chains.size(); cell++) {
            ChainInfo chain = map.chain(chains.get(cell));
            if (chain != null && !(moved.contains(cell) && chain.members().stream().anyMatch(m -> goneTargets.contains(m.targetId())))) {
                chain.targetIds().forEach(target -> {
                    TargetInfo info = map.target(target);
                    if (info != null) {
                        usedNodes.add(info.nodeId());
                    }
                });
            }
        }
        List<Integer> onNewNodes = new ArrayList<>();
        List<Integer> onUsedNodes = new ArrayList<>();
        for (ChainInfo chain : map.chains()) {
            if (chain.replicas() != 1 || chain.targetIds().size() != 1 || chains.contains(chain.chainId())) {
                continue;
            }
            int target = chain.targetIds().getFirst();
            TargetInfo info = map.target(target);
            if (info == null || info.state() != TargetState.ONLINE || goneTargets.contains(target)
                    || (poolInfo != null && !poolInfo.targetIds().contains(target))) {
                continue;
            }
            (usedNodes.contains(info.nodeId()) ? onUsedNodes : onNewNodes).add(chain.chainId());
        }
        List<Integer> candidates = onNewNodes.isEmpty() ? onUsedNodes : onNewNodes;
        if (candidates.isEmpty()) {
            throw new PlinthException(ErrorCode.NO_SPACE, "no online target of pool '" + pool + "' outside the file's cells to take a cell");
        }
        return candidates.get((int) Math.floorMod(inodeId, (long) candidates.size()));
    }
}
