package dev.plinth.cli;

import dev.plinth.client.PlinthClient;
import dev.plinth.common.Sizes;
import dev.plinth.wire.messages.MgmtMessages.ClusterMap;
import dev.plinth.wire.messages.MgmtMessages.PoolInfo;
import dev.plinth.wire.messages.MgmtMessages.PoolOperation;
import dev.plinth.wire.messages.MgmtMessages.UpdatePool;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Parameters;

@Command(name = "pool", mixinStandardHelpOptions = true,
        description = "Named sets of targets that layouts place files on (Lustre OST pools). 'default' holds every target.",
        subcommands = {PoolCommand.Create.class, PoolCommand.Add.class, PoolCommand.Remove.class, PoolCommand.Delete.class,
                PoolCommand.ListPools.class})
final class PoolCommand {
    private PoolCommand() {}

    abstract static class Change implements Callable<Integer> {
        @Mixin
        ClientMixin client;

        @Parameters(index = "0", paramLabel = "POOL")
        String name;

        @Parameters(index = "1..*", paramLabel = "TARGET", description = "Target ids (see `plinth df`).")
        List<Integer> targets = new ArrayList<>();

        abstract PoolOperation operation();

        @Override
        public Integer call() {
            try (PlinthClient plinth = client.connect()) {
                plinth.updatePool(new UpdatePool(operation(), name, targets));
            }
            return 0;
        }
    }

    @Command(name = "create", mixinStandardHelpOptions = true, description = "Create a pool, optionally with targets.")
    static final class Create extends Change {
        @Override
        PoolOperation operation() {
            return PoolOperation.CREATE;
        }
    }

    @Command(name = "add", mixinStandardHelpOptions = true, description = "Add targets to a pool.")
    static final class Add extends Change {
        @Override
        PoolOperation operation() {
            return PoolOperation.ADD;
        }
    }

    @Command(name = "remove", mixinStandardHelpOptions = true, description = "Remove targets from a pool (their data stays).")
    static final class Remove extends Change {
        @Override
        PoolOperation operation() {
            return PoolOperation.REMOVE;
        }
    }

    @Command(name = "delete", mixinStandardHelpOptions = true, description = "Delete a pool (not 'default').")
    static final class Delete extends Change {
        @Override
        PoolOperation operation() {
            return PoolOperation.DELETE;
        }
    }

    @Command(name = "list", mixinStandardHelpOptions = true, description = "List pools: their targets, and the bytes those hold and have free.")
    static final class ListPools implements Callable<Integer> {
        @Mixin
        ClientMixin client;

        @Override
        public Integer call() {
            try (PlinthClient plinth = client.connect()) {
                ClusterMap map = plinth.clusterMap();
                for (PoolInfo pool : map.pools()) {
                    dev.plinth.wire.messages.MgmtMessages.PoolSpace space = map.spaceOf(pool);
                    System.out.printf("%-16s %s  used %s of %s, %s free%n", pool.name(), pool.targetIds(), Sizes.format(space.usedBytes()),
                            Sizes.format(space.capacityBytes()), Sizes.format(space.freeBytes()));
                }
            }
            return 0;
        }
    }
}
