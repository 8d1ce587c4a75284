package dev.plinth.integration;

/**
 * The main class of the {@code plinth} processes that tests start ({@link TestProcesses#plinth}):
 * {@link dev.plinth.cli.Main}, which also exits when the test's JVM is gone. A test closes its
 * processes when it ends; this is for a run that is killed first (a timeout, Ctrl-C), whose servers
 * would otherwise keep running, holding ports, disk and CPU.
 */
public final class ChildOfTest {
    /** The system property that names the test JVM's pid. */
    static final String PARENT_PROPERTY = "plinth.test.parent-pid";

    private ChildOfTest() {}

    public static void main(String[] args) {
        long parent = Long.getLong(PARENT_PROPERTY, -1);
        java.util.Optional<ProcessHandle> handle = ProcessHandle.of(parent);
        if (handle.isEmpty()) {
            System.err.println("the test process " + parent + " is gone; not starting");
            System.exit(1);
        }
        handle.get().onExit().thenRun(() -> {
            System.err.println("the test process " + parent + " ended; exiting");
            System.exit(1);
        });
        dev.plinth.cli.Main.main(args);
    }
}
