package dev.plinth.cli;

import dev.plinth.client.PlinthClient;
import dev.plinth.common.Json;
import dev.plinth.wire.messages.MgmtMessages.ArchiveInfo;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

@Command(name = "archive", mixinStandardHelpOptions = true,
        description = "The cluster's HSM archives (cold tiers): a local directory or an S3 bucket, each with an id files name it by.",
        subcommands = {ArchiveCommand.Add.class, ArchiveCommand.ListArchives.class, ArchiveCommand.Remove.class})
final class ArchiveCommand {
    private ArchiveCommand() {}

    @Command(name = "add", mixinStandardHelpOptions = true, description = {"Add an archive.",
            "URI: file:///DIR, or s3://BUCKET/PREFIX?endpoint=URL&region=R&path-style=true&credentials=FILE&profile=P "
                    + "(without endpoint: AWS; without credentials: the AWS SDK's default chain). Movers reach it from their own nodes."})
    static final class Add implements Callable<Integer> {
        @Mixin
        ClientMixin client;

        @Option(names = "--id", required = true, paramLabel = "N", description = "Archive id (1-32767), as `plinth hsm archive -a N` names it.")
        int id;

        @Option(names = "--name", required = true, paramLabel = "NAME")
        String name;

        @Parameters(index = "0", paramLabel = "URI")
        String uri;

        @Override
        public Integer call() {
            dev.plinth.hsm.ArchiveUri.parse(uri); // refused here, with its reason, rather than by the first mover to use it
            try (PlinthClient plinth = client.connect()) {
                plinth.addArchive(new ArchiveInfo(id, name, uri));
            }
            return 0;
        }
    }

    @Command(name = "list", mixinStandardHelpOptions = true, description = "List the archives.")
    static final class ListArchives implements Callable<Integer> {
        @Mixin
        ClientMixin client;

        @Option(names = "--json", description = "Print as JSON.")
        boolean json;

        @Override
        public Integer call() {
            List<ArchiveInfo> archives;
            try (PlinthClient plinth = client.connect()) {
                archives = plinth.archives();
            }
            if (json) {
                System.out.println(Json.write(archives.stream().map(a -> {
                    Map<String, Object> out = new LinkedHashMap<>();
                    out.put("id", a.archiveId());
                    out.put("name", a.name());
                    out.put("uri", a.uri());
                    return out;
                }).toList()));
                return 0;
            }
            System.out.printf("%-4s %-20s %s%n", "ID", "NAME", "URI");
            for (ArchiveInfo archive : archives) {
                System.out.printf("%-4d %-20s %s%n", archive.archiveId(), archive.name(), archive.uri());
            }
            return 0;
        }
    }

    @Command(name = "remove", mixinStandardHelpOptions = true,
            description = "Remove an archive from the list. Its objects stay where they are; files archived only there cannot be restored.")
    static final class Remove implements Callable<Integer> {
        @Mixin
        ClientMixin client;

        @Option(names = "--id", required = true, paramLabel = "N")
        int id;

        @Override
        public Integer call() {
            try (PlinthClient plinth = client.connect()) {
                plinth.removeArchive(id);
            }
            return 0;
        }
    }
}
