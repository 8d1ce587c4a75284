package dev.plinth.cli;

import dev.plinth.common.Json;
import dev.plinth.client.PlinthClient;
import dev.plinth.common.Layout;
import dev.plinth.wire.messages.MetaMessages.Attributes;
import dev.plinth.wire.messages.MgmtMessages.ChainInfo;
import dev.plinth.wire.messages.MgmtMessages.ClusterMap;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

@Command(name = "getstripe", mixinStandardHelpOptions = true,
        description = "Show the layout of a file (with the chains and targets of its stripe objects) or a directory's default, as `lfs getstripe`.")
final class GetstripeCommand implements Callable<Integer> {
    @Mixin
    ClientMixin client;

    @Option(names = "--json", description = "Machine-readable output.")
    boolean json;

    @Parameters(paramLabel = "PATH")
    String path;

    @Override
    public Integer call() {
        try (PlinthClient plinth = client.connect()) {
            Attributes attributes = plinth.stat(path);
            Layout layout = attributes.layout();
            boolean inherited = layout == null;
            if (inherited) {
                layout = plinth.stat("/").layout();
            }
            ClusterMap map = plinth.clusterMap();
            List<Map<String, Object>> objects = new ArrayList<>();
            for (int i = 0; i < layout.chainIds().size(); i++) {
                ChainInfo chain = map.chain(layout.chainIds().get(i));
                Map<String, Object> object = new LinkedHashMap<>();
                object.put("index", i);
                // Lustre's obdidx is the OST an object is on: here the head of its chain (where writes enter)
                object.put("obdidx", chain == null || chain.targetIds().isEmpty() ? -1 : chain.targetIds().getFirst());
                object.put("chain", layout.chainIds().get(i));
                object.put("targets", chain == null ? List.of() : chain.targetIds());
                if (layout.erasureCoded()) {
                    object.put("stale", layout.staleCell(i));
                }
                objects.add(object);
            }
            if (json) {
                Map<String, Object> out = new LinkedHashMap<>();
                out.put("path", path);
                out.put("type", attributes.isDirectory() ? "directory" : "file");
                out.put("stripe_count", layout.stripeCount());
                out.put("stripe_size", layout.stripeSizeBytes());
                out.put("chunk_size", layout.chunkSizeBytes());
                out.put("pool", layout.pool());
                out.put("replicas", layout.replicas());
                out.put("mdt_bytes", layout.mdtBytes());
                out.put("redundancy", layout.erasureCoded() ? "ec" : "replicas");
                out.put("ec_data", layout.dataCells());
                out.put("ec_parity", layout.parityCells());
                out.put("compression", layout.compressionName());
                if (layout.erasureCoded() && !attributes.isDirectory()) {
                    out.put("stale_cells", layout.staleCellList());
                }
                if (!attributes.isDirectory()) {
                    out.put("logical_bytes", attributes.sizeBytes());
                    out.put("stored_bytes", storedBytes(plinth, attributes));
                }
                out.put("inherited", inherited);
                out.put("objects", objects);
                System.out.println(Json.write(out));
                return 0;
            }
            System.out.println(path);
            System.out.printf("lmm_stripe_count:  %d%n", layout.stripeCount());
            System.out.printf("lmm_stripe_size:   %d%n", layout.stripeSizeBytes());
            System.out.printf("lmm_pattern:       %s%n", layout.erasureCoded() ? "ec" : "raid0");
            System.out.printf("lmm_pool:          %s%n", layout.pool());
            System.out.printf("plinth_chunk_size: %d%n", layout.chunkSizeBytes());
            System.out.printf("plinth_replicas:   %d%n", layout.replicas());
            System.out.printf("plinth_mdt_bytes:  %d%n", layout.mdtBytes());
            System.out.printf("plinth_redundancy: %s%n", layout.erasureCoded()
                    ? "ec " + layout.dataCells() + "+" + layout.parityCells() : "replicas " + layout.replicas());
            System.out.printf("plinth_compression: %s%n", layout.compressionName());
            if (layout.staleCells() != 0) {
                System.out.printf("plinth_stale_cells: %s (written around while their targets were away; read by decoding until the "
                        + "upkeep rebuilds them)%n", layout.staleCellList());
            }
            if (!attributes.isDirectory()) {
                System.out.printf("plinth_logical_bytes: %d%n", attributes.sizeBytes());
                Long stored = storedBytes(plinth, attributes);
                System.out.printf("plinth_stored_bytes:  %s%n", stored == null ? "unknown (a target holding the file does not answer)" : stored);
            }
            if (inherited) {
                System.out.println("(inherited from the file system default)");
            }
            if (!objects.isEmpty()) {
                System.out.println("\tobdidx\tstripe\tchain\ttargets");
                for (Map<String, Object> object : objects) {
                    System.out.printf("\t%6s\t%6s\t%5s\t%s%n", object.get("obdidx"), object.get("index"), object.get("chain"),
                            object.get("targets"));
                }
            }
        }
        return 0;
    }

    /** What the file's chunks take on the targets' disks; null where a target holding some does not answer. */
    private static Long storedBytes(PlinthClient plinth, Attributes attributes) {
        try {
            return plinth.storedBytes(attributes);
        } catch (dev.plinth.common.PlinthException e) {
            return null;
        }
    }
}
