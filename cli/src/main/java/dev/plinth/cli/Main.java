package dev.plinth.cli;

import dev.plinth.common.PlinthException;
import java.io.PrintWriter;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/** The one entry point of every role and tool: `plinth COMMAND`. */
@Command(name = "plinth", mixinStandardHelpOptions = true, versionProvider = Main.Version.class,
        description = "Plinth: a tiered, striped file system for AI training clusters.",
        subcommands = {
                ServerCommand.class,
                MgmtCommand.class,
                MetaCommand.class,
                StorageCommand.class,
                MountCommand.class,
                GatewayCommand.class,
                S3Command.class,
                UmountCommand.class,
                FsCommand.class,
                SetstripeCommand.class, MigrateCommand.class, RebuildCommand.class,
                GetstripeCommand.class, GetdirstripeCommand.class,
                PoolCommand.class,
                ArchiveCommand.class,
                BackupCommand.class,
                FsckCommand.class,
                MdtCommand.class,
                HsmCommand.class,
                CheckpointCommand.class,
                ShardsCommand.Pack.class,
                ShardsCommand.Shards.class,
                DfCommand.class,
                PlanCommand.class,
                StatusCommand.class,
                TopCommand.class,
                BenchCommand.class,
                SettingsCommand.class,
                DoctorCommand.class,
                CliReference.class,
                CommandLine.HelpCommand.class,
        })
public final class Main implements Runnable {
    /** Exit code of a command that failed at its task (the message says why). */
    public static final int EXIT_FAILED = 1;
    /** Exit code of a command line that is not understood. */
    public static final int EXIT_USAGE = 2;

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    public static void main(String[] args) {
        dev.plinth.wire.NettyDefaults.apply();
        System.exit(run(args));
    }

    public static int run(String... args) {
        return commandLine().execute(args);
    }

    public static CommandLine commandLine() {
        CommandLine commandLine = new CommandLine(new Main());
        commandLine.setExecutionExceptionHandler(Main::onFailure);
        return commandLine;
    }

    /** Errors are translated once, here: one line on stderr, and an exit code. */
    private static int onFailure(Exception failure, CommandLine commandLine, CommandLine.ParseResult parseResult) {
        PrintWriter err = commandLine.getErr();
        if (failure instanceof PlinthException plinth) {
            err.println("plinth: " + plinth.getMessage());
        } else if (failure instanceof java.io.UncheckedIOException || failure instanceof java.io.IOException) {
            err.println("plinth: " + failure.getMessage());
        } else {
            err.println("plinth: unexpected error: " + failure);
            failure.printStackTrace(err);
        }
        err.flush();
        return EXIT_FAILED;
    }

    @Override
    public void run() {
        spec.commandLine().usage(spec.commandLine().getOut());
    }

    static final class Version implements CommandLine.IVersionProvider {
        @Override
        public String[] getVersion() {
            String version = Main.class.getPackage().getImplementationVersion();
            return new String[] {"plinth " + (version == null ? "(development build)" : version)};
        }
    }
}
