package dev.plinth.wire.messages;

import dev.plinth.wire.messages.MetaMessages.OpHeader;
import java.util.List;

/** Changing the members of an MDT's Raft group while it runs (`plinth mdt add-replica|remove-replica`). Root only. */
public final class MdtGroupMessages {
    private MdtGroupMessages() {}

    /**
     * Adds the replica at Raft address {@code add} (started with `plinth meta --join`) and/or
     * removes the one at {@code remove}; either may be null. Answered by the leader once the new
     * membership is committed.
     */
    public record ChangeMdtReplicas(OpHeader header, String add, String remove) {}

    /** The group's Raft addresses after the change. */
    public record MdtReplicaList(int mdtId, List<String> raftPeers) {}
}
