package dev.plinth.wire;

import static java.util.Objects.requireNonNull;

import dev.plinth.common.Config;
import dev.plinth.common.ErrorCode;
import dev.plinth.common.PlinthException;
import dev.plinth.common.Settings;
import dev.plinth.wire.messages.MgmtMessages.ClusterMap;
import dev.plinth.wire.messages.MgmtMessages.MdtInfo;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;

/**
 * Where a client sends an MDT's requests: to the replica of its Raft group that answered last
 * (the leader, as far as this client knows), and on to the others in the cluster map's order when
 * that one does not lead, cannot be reached or does not answer in time. A request sent again
 * carries the same request id, so a change the old leader logged before it failed is applied
 * once. Before MDT 0 has registered, the bootstrap address answers for it (the all-in-one server).
 * Clients use it, and so do MDTs that ask another MDT (several MDTs, without a bootstrap address).
 */
public final class MdtReplicas {
    private final RpcConnections connections;
    private final Supplier<ClusterMap> clusterMap;
    private final HostPort bootstrap;
    private final Duration rpcTimeout;
    private final Duration replicaTimeout;
    private final Map<Integer, HostPort> answering = new ConcurrentHashMap<>();

    /** {@code bootstrap}: where to send requests for an MDT the map does not list yet (null: none; such a request is UNAVAILABLE). */
    public MdtReplicas(RpcConnections connections, Supplier<ClusterMap> clusterMap, HostPort bootstrap, Config config) {
        this.connections = requireNonNull(connections, "connections is null");
        this.clusterMap = requireNonNull(clusterMap, "clusterMap is null");
        this.bootstrap = bootstrap;
        this.rpcTimeout = Duration.ofMillis(config.get(Settings.RPC_TIMEOUT_MILLIS));
        this.replicaTimeout = Duration.ofMillis(Math.min(config.get(Settings.RPC_TIMEOUT_MILLIS),
                config.get(Settings.CLUSTER_MDT_REPLICA_TIMEOUT_MILLIS)));
    }

    /** Sends {@code request} to MDT {@code mdt}; throws the last replica's error when none answers. */
    public <R extends Record> R request(int mdt, Record request) {
        List<HostPort> replicas = replicasOf(mdt);
        if (replicas.size() == 1) {
            return connections.get(replicas.get(0)).request(request, rpcTimeout);
        }
        PlinthException last = null;
        for (HostPort replica : inTryOrder(mdt, replicas)) {
            try {
                R reply = connections.get(replica).request(request, replicaTimeout);
                answering.put(mdt, replica);
                return reply;
            } catch (PlinthException e) {
                if (!elsewhere(e.code())) {
                    answering.put(mdt, replica); // it answered: a request's own failure, not the replica's
                    throw e;
                }
                last = e;
            }
        }
        throw last;
    }

    /** The replica that answered last first, then the rest in the map's order. */
    private List<HostPort> inTryOrder(int mdt, List<HostPort> replicas) {
        HostPort preferred = answering.get(mdt);
        if (preferred == null || !replicas.contains(preferred)) {
            return replicas;
        }
        List<HostPort> ordered = new ArrayList<>(replicas.size());
        ordered.add(preferred);
        replicas.stream().filter(replica -> !replica.equals(preferred)).forEach(ordered::add);
        return ordered;
    }

    /** MDT {@code mdt}'s replicas as the cluster map lists them; the bootstrap address before it registered. */
    public List<HostPort> replicasOf(int mdt) {
        ClusterMap map = clusterMap.get();
        MdtInfo info = map == null ? null : map.mdt(mdt);
        if (info != null) {
            return info.rpcAddresses().stream().map(HostPort::parse).toList();
        }
        if (bootstrap == null || mdt != 0) {
            // an MDT added after this map was fetched: the caller's retry fetches the map again
            throw new PlinthException(ErrorCode.UNAVAILABLE, "MDT " + mdt + " is not in the cluster map");
        }
        return List.of(bootstrap);
    }

    /** Errors after which another replica may answer. */
    private static boolean elsewhere(ErrorCode code) {
        return code == ErrorCode.NOT_LEADER || code == ErrorCode.UNAVAILABLE || code == ErrorCode.TIMED_OUT;
    }
}
