package dev.plinth.integration;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/** Runs the real programs tests drive (Python, fio, the AWS CLI, s3cmd, rclone) with a time limit, and shows what they printed. */
public final class TestProcesses {
    private TestProcesses() {}

    /** What a finished program printed (stdout and stderr together) and its exit code. */
    public record Result(int exitCode, String output) {}

    /** Runs {@code command} and fails the test unless it exits 0 within {@code limit}; returns its output. */
    public static String run(List<String> command, Duration limit) throws IOException, InterruptedException {
        return run(command, Map.of(), limit);
    }

    /** {@code environment} adds variables to this process's; a null value removes one. */
    public static String run(List<String> command, Map<String, String> environment, Duration limit) throws IOException, InterruptedException {
        Result result = runAllowingFailure(command, environment, limit);
        assertThat(result.exitCode()).as("exit code of %s; output:%n%s", command, result.output()).isZero();
        return result.output();
    }

    /** Runs {@code command} and fails the test only if it does not finish within {@code limit}. */
    public static Result runAllowingFailure(List<String> command, Map<String, String> environment, Duration limit)
            throws IOException, InterruptedException {
        ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true);
        for (Map.Entry<String, String> variable : environment.entrySet()) {
            if (variable.getValue() == null) {
                builder.environment().remove(variable.getKey());
            } else {
                builder.environment().put(variable.getKey(), variable.getValue());
            }
        }
        Process process = builder.start();
        process.getOutputStream().close();
        StringBuilder output = new StringBuilder();
        Thread reader = Thread.ofPlatform().start(() -> {
            try {
                output.append(new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8));
            } catch (IOException e) {
                output.append("(output lost: ").append(e).append(")");
            }
        });
        boolean finished = process.waitFor(limit.toMillis(), TimeUnit.MILLISECONDS);
        if (!finished) {
            process.destroyForcibly();
        }
        reader.join(10_000);
        System.out.println("$ " + String.join(" ", command.subList(0, Math.min(4, command.size()))) + " ...\n" + output);
        assertThat(finished).as("%s finished within %d ms; output:%n%s", command.getFirst(), limit.toMillis(), output).isTrue();
        return new Result(process.exitValue(), output.toString());
    }

    /**
     * The command line of a `plinth` JVM on this test's class path, as the failure tests start
     * them: {@code jvmOptions} (heap, direct memory), SerialGC, then {@code arguments}. The process
     * exits if this JVM ends first ({@link ChildOfTest}).
     */
    public static java.util.List<String> plinth(List<String> jvmOptions, List<String> arguments) {
        String java = ProcessHandle.current().info().command().orElseThrow();
        java.util.List<String> command = new java.util.ArrayList<>(List.of(java));
        command.addAll(jvmOptions);
        command.addAll(List.of("-XX:+UseSerialGC", "--enable-native-access=ALL-UNNAMED", "--sun-misc-unsafe-memory-access=allow",
                "-D" + ChildOfTest.PARENT_PROPERTY + "=" + ProcessHandle.current().pid(),
                "-cp", System.getProperty("java.class.path"), ChildOfTest.class.getName()));
        command.addAll(arguments);
        return command;
    }

    /** The RPC address in a role's endpoints file. */
    private static final java.util.regex.Pattern RPC = java.util.regex.Pattern.compile("\"rpc\"\\s*:\\s*\"([^\"]+)\"");

    /** The last {@code lines} lines of a file, or why it could not be read. */
    static String tail(java.nio.file.Path file, int lines) {
        try {
            List<String> all = java.nio.file.Files.readAllLines(file, java.nio.charset.StandardCharsets.UTF_8);
            return String.join("\n", all.subList(Math.max(0, all.size() - lines), all.size()));
        } catch (IOException | java.io.UncheckedIOException e) {
            return "(unreadable: " + e + ")";
        }
    }

    /**
     * Waits (60 s at most) until {@code process} (called {@code name}, logging to {@code log})
     * has written its RPC address to {@code endpoints}, and returns that address; fails if it
     * exits first or takes longer (and kills it then).
     */
    public static dev.plinth.wire.HostPort awaitEndpoints(Process process, String name, java.nio.file.Path endpoints, java.nio.file.Path log)
            throws IOException, InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (System.nanoTime() < deadline) {
            if (!process.isAlive()) {
                // the log is in the test's temporary directory, gone by the time anyone reads the report: its end goes with the failure
                throw new IllegalStateException(name + " exited with " + process.exitValue() + "; the end of " + log + ":\n" + tail(log, 30));
            }
            if (java.nio.file.Files.exists(endpoints)) {
                java.util.regex.Matcher matcher = RPC.matcher(java.nio.file.Files.readString(endpoints));
                if (matcher.find()) {
                    return dev.plinth.wire.HostPort.parse(matcher.group(1));
                }
            }
            Thread.sleep(50);
        }
        process.destroyForcibly();
        throw new IllegalStateException(name + " did not start in 60 s; see " + log);
    }
}
