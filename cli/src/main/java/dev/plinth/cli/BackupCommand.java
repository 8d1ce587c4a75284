package dev.plinth.cli;

import dev.plinth.client.PlinthClient;
import dev.plinth.common.ErrorCode;
import dev.plinth.common.Json;
import dev.plinth.common.PlinthException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.stream.Stream;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

@Command(name = "backup", mixinStandardHelpOptions = true,
        description = {"Back up the cluster's metadata (every MDT and mgmt) while it serves, and restore it.",
                "A backup holds the namespace and the cluster map, not file data (that stays on the storage targets), and",
                "the S3 secret keys and encryption master keys: it is written with mode 0600; keep it as safe as the cluster secret."},
        subcommands = {BackupCommand.Create.class, BackupCommand.Verify.class, BackupCommand.Restore.class})
final class BackupCommand {
    private BackupCommand() {}

    static final String NAME_PREFIX = "plinth-metadata-";

    @Command(name = "create", mixinStandardHelpOptions = true,
            description = {"Take a consistent backup of every MDT (a copy its leader makes between two changes) and of mgmt, as one tar file.",
                    "Root only. With --dir, names the file by the time (plinth-metadata-YYYYMMDD-HHMMSS.tar) and keeps the newest --keep."})
    static final class Create implements Callable<Integer> {
        @Mixin
        ClientMixin client;

        static final class Where {
            @Option(names = "--out", paramLabel = "FILE", description = "The backup file to write (replaced if it exists).")
            Path out;

            @Option(names = "--dir", paramLabel = "DIR", description = "Write a new, time-named backup file in DIR.")
            Path dir;
        }

        @ArgGroup(exclusive = true, multiplicity = "1")
        Where where;

        @Option(names = "--keep", paramLabel = "N", description = "With --dir: remove all but the newest N backups there (default: keep all).")
        int keep;

        @Option(names = "--json", description = "Print what was written as JSON.")
        boolean json;

        @Override
        public Integer call() throws IOException {
            if (keep < 0 || keep > 0 && where.dir == null) {
                throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "--keep N (N >= 1) goes with --dir");
            }
            Path out = where.out;
            if (where.dir != null) {
                Files.createDirectories(where.dir);
                out = where.dir.resolve(NAME_PREFIX + DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss").format(ZonedDateTime.now(ZoneOffset.UTC)) + ".tar");
            }
            MetadataBackup.Summary summary;
            try (PlinthClient plinth = client.connect()) {
                summary = MetadataBackup.create(plinth, out.toAbsolutePath());
            }
            List<Path> removed = keep > 0 ? removeOld(where.dir, keep) : List.of();
            if (json) {
                Map<String, Object> result = new LinkedHashMap<>();
                result.put("file", summary.file().toString());
                result.put("bytes", summary.bytes());
                result.put("mdts", summary.mdts());
                result.put("removed", removed.stream().map(Path::toString).toList());
                System.out.println(Json.write(result));
            } else {
                System.out.printf("%s: %d bytes, %d MDT(s) and mgmt%n", summary.file(), summary.bytes(), summary.mdts().size());
                removed.forEach(path -> System.out.println("removed " + path));
            }
            return 0;
        }

        /** Removes the oldest time-named backups in {@code dir} beyond the newest {@code keep}. */
        private static List<Path> removeOld(Path dir, int keep) throws IOException {
            List<Path> backups;
            try (Stream<Path> listing = Files.list(dir)) {
                backups = listing.filter(p -> p.getFileName().toString().matches(NAME_PREFIX + "[0-9]{8}-[0-9]{6}\\.tar"))
                        .sorted().toList(); // the names sort by time
            }
            List<Path> old = backups.subList(0, Math.max(0, backups.size() - keep));
            for (Path path : old) {
                Files.deleteIfExists(path);
            }
            return old;
        }
    }

    @Command(name = "verify", mixinStandardHelpOptions = true,
            description = {"Check that a backup restores: every part is whole, mgmt's state decodes, and each MDT's store opens and",
                    "passes fsck's namespace check. Unpacks it into a temporary directory (as much space as the backup). Exit 1 if not."})
    static final class Verify implements Callable<Integer> {
        @Parameters(index = "0", paramLabel = "FILE", description = "A file `plinth backup create` wrote.")
        Path file;

        @Option(names = "--scratch", paramLabel = "DIR", description = "Where to unpack it (default: the system temp directory).")
        Path scratch;

        @Override
        public Integer call() throws IOException {
            if (!Files.isRegularFile(file)) {
                throw new PlinthException(ErrorCode.NOT_FOUND, "no backup file " + file);
            }
            Path where = scratch != null ? scratch : Path.of(System.getProperty("java.io.tmpdir"));
            MetadataBackup.verify(file, where).forEach(System.out::println);
            System.out.println(file + ": restorable");
            return 0;
        }
    }

    @Command(name = "restore", mixinStandardHelpOptions = true,
            description = {"Rebuild metadata directories from a backup, with the services stopped: each MDT's store under",
                    "DIR/meta/mdtN and mgmt's cluster state under DIR/mgmt, as `plinth server --data DIR` (or `plinth meta`/`plinth mgmt`",
                    "--data DIR) keeps them. Refuses to write over a directory that exists. Restore every replica of an MDT (each",
                    "its own --data) from the same backup; each starts a new Raft log. Changes made after the backup are lost."})
    static final class Restore implements Callable<Integer> {
        @Parameters(index = "0", paramLabel = "FILE", description = "A file `plinth backup create` wrote.")
        Path file;

        @Option(names = "--data", required = true, paramLabel = "DIR", description = "The data directory of the role(s) to restore.")
        Path data;

        @Option(names = "--mdt", paramLabel = "N", split = ",", description = "Restore only these MDTs (default: every one in the backup).")
        List<Integer> mdts;

        @Option(names = "--no-mgmt", description = "Do not restore mgmt (for a directory that only a `plinth meta` uses).")
        boolean noMgmt;

        @Option(names = "--only-mgmt", description = "Restore only mgmt.")
        boolean onlyMgmt;

        @Option(names = "--rejoin", description = {"Rebuild one lost replica of an MDT group that keeps running (the others",
                "serve): the store keeps the log index of the backup, and the replica, started with its old --raft and --peers,",
                "catches up from the leader's log. Take the backup after the replica was lost. Implies --no-mgmt."})
        boolean rejoin;

        @Override
        public Integer call() throws IOException {
            if (noMgmt && onlyMgmt || rejoin && onlyMgmt) {
                throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "--only-mgmt goes with neither --no-mgmt nor --rejoin");
            }
            if (!Files.isRegularFile(file)) {
                throw new PlinthException(ErrorCode.NOT_FOUND, "no backup file " + file);
            }
            Set<Integer> chosen = onlyMgmt ? Set.of() : mdts == null ? null : Set.copyOf(mdts);
            List<String> restored = MetadataBackup.restore(file, data, chosen, !noMgmt && !rejoin, rejoin);
            restored.forEach(line -> System.out.println("restored " + line));
            return 0;
        }
    }
}
