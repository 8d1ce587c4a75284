package dev.plinth.integration.cli;

import dev.plinth.cli.Main;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;

/** Runs a `plinth` command in this JVM, as a user types it, and captures what it printed. */
public final class CliRun {
    private CliRun() {}

    /** The exit code, the bytes written to stdout, and stderr as text. */
    public record Result(int exitCode, byte[] stdout, String err) {
        public String out() {
            return new String(stdout, StandardCharsets.UTF_8);
        }
    }

    public static synchronized Result run(List<String> arguments) {
        PrintStream out = System.out;
        PrintStream err = System.err;
        ByteArrayOutputStream capturedOut = new ByteArrayOutputStream();
        ByteArrayOutputStream capturedErr = new ByteArrayOutputStream();
        try {
            System.setOut(new PrintStream(capturedOut, true, StandardCharsets.UTF_8));
            System.setErr(new PrintStream(capturedErr, true, StandardCharsets.UTF_8));
            var commandLine = Main.commandLine();
            commandLine.setErr(new java.io.PrintWriter(System.err, true));
            int code = commandLine.execute(arguments.toArray(String[]::new));
            return new Result(code, capturedOut.toByteArray(), capturedErr.toString(StandardCharsets.UTF_8));
        } finally {
            System.setOut(out);
            System.setErr(err);
        }
    }
}
