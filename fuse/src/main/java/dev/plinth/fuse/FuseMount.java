package dev.plinth.fuse;

import static dev.plinth.fuse.Libfuse.*;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import dev.plinth.client.PlinthClient;
import dev.plinth.common.ErrorCode;
import dev.plinth.common.PlinthException;
import dev.plinth.common.Settings;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A mounted Plinth file system: a libfuse session on a mount point, served by worker threads
 * that each read a request from /dev/fuse and answer it ({@link FuseOperations}).
 *
 * <p>The mount ends when {@link #close()} is called or when someone else unmounts it
 * ({@code fusermount3 -u}, {@code umount}): the kernel then fails the workers' reads with
 * ENODEV, they stop, and {@link #awaitUnmounted()} returns. The mount is made with
 * {@code auto_unmount}, so even a killed process leaves no stale mount behind (except a mount
 * asked to honour devices or set-id bits, which fusermount3 cannot make).
 */
public final class FuseMount implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(FuseMount.class);

    private final Path mountpoint;
    private final FuseOperations operations;
    private final Arena arena = Arena.ofShared();
    private final MemorySegment session;
    private final List<Thread> workers = new ArrayList<>();
    private final CountDownLatch stopped;
    private boolean closed;

    private FuseMount(Path mountpoint, PlinthClient client, MountOptions options, PrometheusRegistry registry) throws Throwable {
        this.mountpoint = mountpoint;
        this.operations = new FuseOperations(client, options, registry);
        List<String> args = new ArrayList<>(List.of("plinth", "-o", kernelOptions(client, options)));
        if (options.debug()) {
            args.add("-d");
        }
        MemorySegment argv = arena.allocate(ADDRESS, args.size() + 1);
        for (int i = 0; i < args.size(); i++) {
            argv.setAtIndex(ADDRESS, i, arena.allocateFrom(args.get(i)));
        }
        MemorySegment fuseArgs = arena.allocate(ARGS_SIZE, 8);
        fuseArgs.set(JAVA_INT, 0, args.size());
        fuseArgs.set(ADDRESS, 8, argv);
        MemorySegment ops = operations.operationsTable(arena);
        this.session = (MemorySegment) SESSION_NEW.invokeExact(fuseArgs, ops, (long) OPS_SIZE, MemorySegment.NULL);
        if (session.equals(MemorySegment.NULL)) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "libfuse rejected the mount options " + args);
        }
        operations.attach(session);
        int result = (int) SESSION_MOUNT.invokeExact(session, arena.allocateFrom(mountpoint.toString()));
        if (result != 0) {
            SESSION_DESTROY.invokeExact(session);
            throw new PlinthException(ErrorCode.IO_ERROR, "cannot mount on " + mountpoint
                    + " (is it a directory, and is FUSE available? libfuse printed why above)");
        }
        int threads = Math.max(1, options.config().get(Settings.MOUNT_THREADS));
        this.stopped = new CountDownLatch(threads);
        for (int i = 0; i < threads; i++) {
            workers.add(Thread.ofPlatform().name("plinth-fuse-" + i).daemon().start(this::serve));
        }
    }

    /**
     * Mounts the cluster that {@code client} talks to on {@code mountpoint} (an existing directory)
     * and starts serving it. The client stays owned by the caller.
     */
    public static FuseMount mount(PlinthClient client, Path mountpoint, MountOptions options) {
        return mount(client, mountpoint, options, dev.plinth.wire.Metrics.unexposed());
    }

    /** As {@link #mount(PlinthClient, Path, MountOptions)}, counting and timing FUSE operations into {@code registry}. */
    public static FuseMount mount(PlinthClient client, Path mountpoint, MountOptions options, PrometheusRegistry registry) {
        requireMountable();
        Path absolute = mountpoint.toAbsolutePath().normalize();
        if (!Files.isDirectory(absolute)) {
            throw new PlinthException(ErrorCode.NOT_FOUND, "mount point " + absolute + " is not a directory");
        }
        try {
            return new FuseMount(absolute, client, options, registry);
        } catch (PlinthException | Error e) {
            throw e;
        } catch (Throwable e) {
            throw new PlinthException(ErrorCode.INTERNAL, "mount failed: " + e, e);
        }
    }

    private static String kernelOptions(PlinthClient client, MountOptions options) {
        StringBuilder kernel = new StringBuilder("fsname=plinth@" + client.options().server() + ",subtype=plinth,default_permissions");
        kernel.append(",max_read=").append(FuseOperations.MAX_IO_BYTES);
        if (options.allowOther()) {
            kernel.append(",allow_other");
        }
        if (options.readOnly()) {
            kernel.append(",ro");
        }
        kernel.append(options.devices() ? ",dev" : ",nodev").append(options.setIdBits() ? ",suid" : ",nosuid");
        if (!options.devices() && !options.setIdBits()) {
            // auto_unmount mounts through fusermount3, which always adds nosuid,nodev; a mount that
            // asks for devices or set-id bits is made by libfuse's own mount(2) as root instead, and a
            // killed mount process leaves it to umount
            kernel.append(",auto_unmount");
        }
        return kernel.toString();
    }

    public Path mountpoint() {
        return mountpoint;
    }

    /** One worker: reads a request, serves it (libfuse calls back into {@link FuseOperations}), until unmounted. */
    private void serve() {
        try (Arena local = Arena.ofConfined()) {
            MemorySegment buffer = local.allocate(BUF_SIZE, 8);
            try {
                while ((int) SESSION_EXITED.invokeExact(session) == 0) {
                    int received = (int) SESSION_RECEIVE_BUF.invokeExact(session, buffer);
                    if (received == -EINTR || received == -EAGAIN) {
                        continue;
                    }
                    if (received <= 0) {
                        break;
                    }
                    SESSION_PROCESS_BUF.invokeExact(session, buffer);
                }
                SESSION_EXIT.invokeExact(session); // wake the others' loops: one saw the end
            } finally {
                MemorySegment memory = buffer.get(ADDRESS, BUF_MEM);
                if (!memory.equals(MemorySegment.NULL)) {
                    FREE.invokeExact(memory);
                }
            }
        } catch (Throwable e) {
            LOG.error("FUSE worker failed", e);
        } finally {
            stopped.countDown();
        }
    }

    /** Waits until the file system is unmounted (by {@link #close()} or from outside). */
    public void awaitUnmounted() throws InterruptedException {
        stopped.await();
    }

    public boolean awaitUnmounted(long timeout, TimeUnit unit) throws InterruptedException {
        return stopped.await(timeout, unit);
    }

    /** Unmounts (lazily, so a busy mount point does not block this) and waits for the workers. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            if (stopped.getCount() > 0) {
                unmount(mountpoint);
            }
            if (!stopped.await(30, TimeUnit.SECONDS)) {
                LOG.warn("FUSE workers of {} did not stop; leaving the session open", mountpoint);
                return;
            }
            operations.stop();
            SESSION_UNMOUNT.invokeExact(session);
            SESSION_DESTROY.invokeExact(session);
            arena.close();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (Throwable e) {
            LOG.warn("unmounting {} failed: {}", mountpoint, e.toString());
        }
    }

    /** Fails at once, naming what is missing and what provides it, where this machine cannot mount (no /dev/fuse, no fuse3). */
    public static void requireMountable() {
        String missing = FusePrerequisites.missing();
        if (missing != null) {
            throw new PlinthException(ErrorCode.NOT_SUPPORTED, missing);
        }
    }

    /** Unmounts a Plinth (or any FUSE) mount point the way a user would: fusermount3 -u, lazily. */
    public static void unmount(Path mountpoint) {
        List<List<String>> attempts = List.of(
                List.of("fusermount3", "-u", "-z", mountpoint.toString()),
                List.of("umount", "-l", mountpoint.toString()));
        StringBuilder errors = new StringBuilder();
        for (List<String> command : attempts) {
            try {
                Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
                String output = new String(process.getInputStream().readAllBytes()).strip();
                if (process.waitFor() == 0) {
                    return;
                }
                errors.append(String.join(" ", command)).append(": ").append(output).append("; ");
            } catch (IOException e) {
                errors.append(String.join(" ", command)).append(": ").append(e.getMessage()).append("; ");
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
        throw new PlinthException(ErrorCode.IO_ERROR, "cannot unmount " + mountpoint + ": " + errors);
    }

    /** Whether {@code mountpoint} is a mount point of a Plinth file system now (from /proc/self/mountinfo). */
    public static boolean isMounted(Path mountpoint) {
        String target = mountpoint.toAbsolutePath().normalize().toString();
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/mountinfo"))) {
                String[] fields = line.split(" ");
                int separator = line.indexOf(" - ");
                if (fields.length > 4 && fields[4].equals(target) && separator > 0
                        && line.substring(separator + 3).startsWith("fuse.plinth ")) {
                    return true;
                }
            }
        } catch (IOException e) {
            return false;
        }
        return false;
    }
}
