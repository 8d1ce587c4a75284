package dev.plinth.wire;

import static java.util.Objects.requireNonNull;

import dev.plinth.common.Config;
import dev.plinth.common.ErrorCode;
import dev.plinth.common.PlinthException;
import dev.plinth.common.Settings;
import java.time.Duration;
import java.util.List;

/**
 * The management service as its callers see it: one mgmt, or the replicas of a mgmt group, of
 * which only the leader answers. A request goes to the replica that answered last; one that
 * says it does not lead, or cannot be reached, passes the request to the next. When none
 * answers (an election is under way, or a majority is down) the last error is thrown: callers
 * retry retryable errors as they do for a single mgmt.
 */
public final class MgmtClient {
    private final RpcConnections connections;
    private final List<HostPort> replicas;
    /** How long one replica may take: with several, a hung one must not hold a caller for the whole RPC timeout. */
    private final Duration replicaTimeout;
    private volatile int preferred;

    public MgmtClient(RpcConnections connections, List<HostPort> replicas, Config config) {
        this.connections = requireNonNull(connections, "connections is null");
        if (replicas.isEmpty()) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "no mgmt address");
        }
        this.replicas = List.copyOf(replicas);
        this.replicaTimeout = Duration.ofMillis(replicas.size() == 1 ? config.get(Settings.RPC_TIMEOUT_MILLIS)
                : Math.min(config.get(Settings.RPC_TIMEOUT_MILLIS), config.get(Settings.CLUSTER_MGMT_REPLICA_TIMEOUT_MILLIS)));
    }

    public List<HostPort> replicas() {
        return replicas;
    }

    /** The replica that answered last: with a mgmt group, the leader as far as this caller knows. */
    public HostPort answering() {
        return replicas.get(preferred);
    }

    public <R extends Record> R request(Record request) {
        PlinthException last = null;
        int first = preferred;
        for (int attempt = 0; attempt < replicas.size(); attempt++) {
            int index = (first + attempt) % replicas.size();
            try {
                R reply = connections.get(replicas.get(index)).request(request, replicaTimeout);
                preferred = index;
                return reply;
            } catch (PlinthException e) {
                if (!elsewhere(e.code())) {
                    throw e;
                }
                last = e;
            }
        }
        throw last;
    }

    /** Errors after which another replica may answer. */
    private static boolean elsewhere(ErrorCode code) {
        return code == ErrorCode.NOT_LEADER || code == ErrorCode.UNAVAILABLE || code == ErrorCode.TIMED_OUT;
    }
}
