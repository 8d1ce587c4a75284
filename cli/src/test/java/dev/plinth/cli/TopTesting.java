package dev.plinth.cli;

import dev.plinth.wire.messages.MgmtMessages.JobStat;
import java.io.PrintStream;
import java.util.List;

/** Lets tests outside this package render `plinth top --by job`. */
public final class TopTesting {
    private TopTesting() {}

    public static void printJobs(PrintStream out, List<JobStat> jobs) {
        TopCommand.printJobs(out, "test", jobs);
    }
}
