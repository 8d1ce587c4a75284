package dev.plinth.common;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;

/** Waiting for tasks run on a pool, with their failures rethrown as what they were, not wrapped. */
public final class Futures {
    private Futures() {}

    /** The task's value; its IOException or unchecked failure rethrown as such; an interrupted wait as InterruptedIOException. */
    public static <T> T await(Future<T> future) throws IOException {
        try {
            return future.get();
        } catch (ExecutionException e) {
            if (e.getCause() instanceof IOException io) {
                throw io;
            }
            if (e.getCause() instanceof RuntimeException runtime) {
                throw runtime;
            }
            if (e.getCause() instanceof Error error) {
                throw error;
            }
            throw new IOException(e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new InterruptedIOException("interrupted while waiting for a task");
        }
    }

    /** Every task's value, in order; at the first failure the others are cancelled and the failure rethrown (see {@link #await}). */
    public static <T> List<T> awaitAll(List<? extends Future<T>> futures) throws IOException {
        List<T> values = new ArrayList<>(futures.size());
        try {
            for (Future<T> future : futures) {
                values.add(await(future));
            }
        } catch (IOException | RuntimeException | Error e) {
            futures.forEach(future -> future.cancel(true));
            throw e;
        }
        return values;
    }
}
