package dev.plinth.server;

import dev.plinth.mgmt.MgmtService;
import dev.plinth.wire.HostPort;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

/**
 * The management role: cluster membership, chains, pools, keys and settings, kept under
 * {@code DIR/mgmt}; alone, or as one replica of a mgmt Raft group ({@code raftPeers}, this one's
 * address at {@code selfIndex}). The process's status page is mgmt's. The replica that leads also
 * keeps erasure-coded files whole ({@link ErasureCodeUpkeep}).
 */
public final class MgmtRole implements Role {
    private final MgmtService service;
    private final Path mgmtDirectory;
    private ErasureCodeUpkeep upkeep;

    private MgmtRole(MgmtService service, Path mgmtDirectory) {
        this.service = service;
        this.mgmtDirectory = mgmtDirectory;
    }

    public static MgmtRole add(ProcessHost host, Path dataDirectory, List<HostPort> raftPeers, int selfIndex) {
        Path mgmtDirectory = dataDirectory.resolve("mgmt");
        MgmtService service = new MgmtService(mgmtDirectory, host.config(), raftPeers, selfIndex);
        try {
            service.register(host.dispatcher());
            service.registerMetrics(host.metrics());
        } catch (RuntimeException e) {
            service.close();
            throw e;
        }
        return host.add(new MgmtRole(service, mgmtDirectory));
    }

    /** Starts the erasure-code upkeep, which works while this replica leads. */
    @Override
    public void start(ProcessHost host) {
        upkeep = new ErasureCodeUpkeep(service, host, mgmtDirectory);
        upkeep.start();
    }

    public MgmtService service() {
        return service;
    }

    @Override
    public Supplier<Map<String, Object>> statusPage(HostPort rpcAddress) {
        return ClusterStatus.page(service, rpcAddress.toString());
    }

    @Override
    public void close() {
        if (upkeep != null) {
            upkeep.close();
        }
        service.close();
    }
}
