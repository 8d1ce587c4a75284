package dev.plinth.cli;

import dev.plinth.client.PlinthClient;
import dev.plinth.common.Json;
import dev.plinth.wire.HostPort;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

@Command(name = "mdt", mixinStandardHelpOptions = true,
        description = "The replicas of an MDT's Raft group: add and remove them while the group serves. Root only.",
        subcommands = {MdtCommand.AddReplica.class, MdtCommand.RemoveReplica.class})
final class MdtCommand {
    private MdtCommand() {}

    /** What both subcommands share: the MDT, the replica's Raft address, and how to print the result. */
    abstract static class Change implements Callable<Integer> {
        @Mixin
        ClientMixin client;

        @Option(names = "--mdt", paramLabel = "N", description = "The MDT (default 0).")
        int mdt;

        @Option(names = "--raft", required = true, paramLabel = "HOST:PORT", description = "The replica's Raft address.")
        String raft;

        @Option(names = "--json", description = "Print the group's members after the change as JSON.")
        boolean json;

        abstract List<String> change(PlinthClient plinth, String address);

        @Override
        public Integer call() {
            String address = HostPort.parse(raft).toString();
            List<String> peers;
            try (PlinthClient plinth = client.connect()) {
                peers = change(plinth, address);
            }
            if (json) {
                Map<String, Object> out = new LinkedHashMap<>();
                out.put("mdt", mdt);
                out.put("raft_peers", peers);
                System.out.println(Json.write(out));
            } else {
                System.out.printf("MDT %d replicas (Raft): %s%n", mdt, String.join(", ", peers));
            }
            return 0;
        }
    }

    @Command(name = "add-replica", mixinStandardHelpOptions = true,
            description = {"Add a replica to the MDT's group: start it first with `plinth meta --data NEWDIR --mdt N --raft ADDR --join`",
                    "(for a group that has snapshotted its log, seed NEWDIR with `plinth backup restore --rejoin` first). The leader sends it",
                    "the log and commits the new membership once it has caught up; clients learn it from mgmt."})
    static final class AddReplica extends Change {
        @Override
        List<String> change(PlinthClient plinth, String address) {
            return plinth.changeMdtReplicas(mdt, address, null);
        }
    }

    @Command(name = "remove-replica", mixinStandardHelpOptions = true,
            description = {"Remove a replica from the MDT's group (it may be down). Stop its process afterwards; its directory is no",
                    "longer needed. A group of three keeps a majority with one replica removed and one more down."})
    static final class RemoveReplica extends Change {
        @Override
        List<String> change(PlinthClient plinth, String address) {
            return plinth.changeMdtReplicas(mdt, null, address);
        }
    }
}
