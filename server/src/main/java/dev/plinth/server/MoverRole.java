package dev.plinth.server;

import dev.plinth.client.ClientOptions;
import dev.plinth.client.PlinthClient;
import dev.plinth.common.Credentials;
import dev.plinth.common.ErrorCode;
import dev.plinth.common.PlinthException;
import dev.plinth.hsm.ArchiveUri;
import dev.plinth.hsm.HsmMover;
import dev.plinth.wire.messages.MgmtMessages.ArchiveInfo;
import java.util.List;

/**
 * An HSM mover over a native client of the host's own listener ({@code plinth server}) or of the
 * cluster's mgmt ({@code plinth storage --hsm-mover}). {@code defaultArchives}: URIs added as
 * archives 1, 2, ... where the cluster has none yet (the embedded server's first start).
 */
public final class MoverRole implements Role {
    private final List<String> defaultArchives;
    private final List<dev.plinth.wire.HostPort> mgmt;
    private PlinthClient client;
    private HsmMover mover;
    private dev.plinth.hsm.PolicySchedule policies;

    private MoverRole(List<String> defaultArchives, List<dev.plinth.wire.HostPort> mgmt) {
        this.defaultArchives = List.copyOf(defaultArchives);
        this.mgmt = mgmt == null ? null : List.copyOf(mgmt);
    }

    /** A mover of the host's own cluster (the host holds mgmt). */
    public static MoverRole add(ProcessHost host, List<String> defaultArchives) {
        defaultArchives.forEach(ArchiveUri::parse); // a bad URI stops the start, with its reason
        return host.add(new MoverRole(defaultArchives, null));
    }

    /** A mover beside other roles of a node, for the cluster whose mgmt replicas are {@code mgmt}. */
    public static MoverRole addFor(ProcessHost host, List<dev.plinth.wire.HostPort> mgmt) {
        return host.add(new MoverRole(List.of(), mgmt));
    }

    @Override
    public void start(ProcessHost host) {
        client = PlinthClient.connect(new ClientOptions(mgmt == null ? List.of(host.rpcAddress()) : mgmt, host.secret(), Credentials.ROOT,
                host.config(), "hsm-mover").withClock(host.clock()));
        if (client.archives().isEmpty()) {
            for (int i = 0; i < defaultArchives.size(); i++) {
                try {
                    client.addArchive(new ArchiveInfo(i + 1, i == 0 ? "default" : "archive-" + (i + 1), defaultArchives.get(i)));
                } catch (PlinthException e) {
                    if (e.code() != ErrorCode.ALREADY_EXISTS) {
                        throw e;
                    }
                }
            }
        }
        mover = new HsmMover(client, host.config(), host.metrics()).start();
        policies = dev.plinth.hsm.PolicySchedule.startIfConfigured(client, host.config());
    }

    @Override
    public boolean ready() {
        return mover != null;
    }

    public HsmMover mover() {
        return mover;
    }

    @Override
    public void close() {
        if (policies != null) {
            policies.close();
        }
        if (mover != null) {
            mover.close();
        }
        if (client != null) {
            client.close();
        }
    }
}
