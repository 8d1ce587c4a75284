package dev.plinth.cli;

import java.util.Map;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/** docs/cli.md, generated from the commands' own help so the two never disagree. */
@Command(name = "cli-reference", hidden = true, description = "Print docs/cli.md.")
final class CliReference implements Runnable {
    static String markdown() {
        StringBuilder out = new StringBuilder();
        out.append("# Command reference\n\n")
                .append("Generated from the commands' help by `bin/plinth cli-reference`; do not edit by hand. ")
                .append("Exit codes: 0 success, 1 the command failed (one line on stderr says why), 2 the command line is wrong.\n");
        append(out, Main.commandLine(), "plinth");
        return out.toString();
    }

    private static void append(StringBuilder out, CommandLine command, String fullName) {
        if (command.getCommandSpec().usageMessage().hidden() || command.getCommand() instanceof CommandLine.HelpCommand) {
            return;
        }
        out.append("\n## `").append(fullName).append("`\n\n```\n");
        out.append(command.getUsageMessage(CommandLine.Help.Ansi.OFF).stripTrailing()).append("\n```\n");
        for (Map.Entry<String, CommandLine> sub : command.getSubcommands().entrySet()) {
            if (sub.getKey().equals(sub.getValue().getCommandName())) {
                append(out, sub.getValue(), fullName + " " + sub.getKey());
            }
        }
    }

    @Override
    public void run() {
        System.out.print(markdown());
    }
}
