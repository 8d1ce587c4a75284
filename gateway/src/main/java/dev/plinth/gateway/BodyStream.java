package dev.plinth.gateway;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpVersion;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.util.ArrayDeque;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * A request body as it arrives from Netty, read by the request's (virtual) thread. The channel
 * does not read on its own (auto-read is off): this stream asks for more only while it holds
 * less than {@link #BUFFERED_BYTES_MAX} ({@link #EARLY_BYTES_MAX} before its reader starts), so a
 * fast client of a slow upload is held back by TCP and memory does not grow with the object's size.
 * "Expect: 100-continue" is answered when the handler first reads, so a request refused before that
 * (bad signature) never gets its body sent.
 */
final class BodyStream extends ByteArrayReads {
    static final int BUFFERED_BYTES_MAX = 4 << 20;
    /**
     * What is read of a body before its handler starts reading: the first bytes of a small body
     * often come right behind its head, and reading them keeps the socket watched (stopping and
     * starting again costs two {@code epoll_ctl} calls, design note 65). At most this much per
     * request in flight.
     */
    static final int EARLY_BYTES_MAX = 64 << 10;
    private static final long IDLE_TIMEOUT_MILLIS = 120_000;

    private final ChannelHandlerContext context;
    private final long idleTimeoutMillis;
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition arrived = lock.newCondition();
    private final ArrayDeque<ByteBuf> queue = new ArrayDeque<>();
    private boolean expectContinue;
    private int queuedBytes;
    private boolean ended;
    private boolean released;
    private Throwable failure;
    private boolean started;
    /** When the reader began waiting for bytes in its current read (System.nanoTime()), or 0 while it is not waiting. */
    private long waitingSince;
    /**
     * Fails the body once the reader has waited the idle limit in one read. A
     * timer on the shared wheel rather than a timed wait: a virtual thread's timed wait goes
     * through the JDK scheduler's delay queue and its thread, which cost small PUTs 0.02-0.03 ms
     * of CPU each for a limit that is two minutes long (design note 58).
     */
    private io.netty.util.Timeout idleWatch;

    BodyStream(ChannelHandlerContext context, boolean expectContinue) {
        this(context, expectContinue, IDLE_TIMEOUT_MILLIS);
    }

    /** With another idle limit: for tests. */
    BodyStream(ChannelHandlerContext context, boolean expectContinue, long idleTimeoutMillis) {
        this.context = context;
        this.expectContinue = expectContinue;
        this.idleTimeoutMillis = idleTimeoutMillis;
    }

    // ---- called on the event loop

    /** Takes a piece of the body (the caller's reference). Returns whether the channel should read more now. */
    boolean offer(ByteBuf content) {
        lock.lock();
        try {
            if (released) {
                content.release();
                return true; // nobody reads any more: let the rest drain
            }
            if (content.isReadable()) {
                queue.add(content);
                queuedBytes += content.readableBytes();
            } else {
                content.release();
            }
            arrived.signalAll();
            return queuedBytes < (started ? BUFFERED_BYTES_MAX : EARLY_BYTES_MAX);
        } finally {
            lock.unlock();
        }
    }

    void end() {
        lock.lock();
        try {
            ended = true;
            arrived.signalAll();
        } finally {
            lock.unlock();
        }
    }

    void fail(Throwable cause) {
        lock.lock();
        try {
            if (failure == null) {
                failure = cause;
            }
            arrived.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /** Whether the whole body has arrived (so the connection can serve the next request). */
    boolean ended() {
        lock.lock();
        try {
            return ended && failure == null;
        } finally {
            lock.unlock();
        }
    }

    // ---- called by the request's thread

    @Override
    public int read(byte[] target, int offset, int length) throws IOException {
        if (length == 0) {
            return 0;
        }
        boolean askForMore = false;
        lock.lock();
        try {
            if (!started) {
                started = true;
                askForMore = !ended;
                if (expectContinue && !ended) {
                    expectContinue = false;
                    context.writeAndFlush(new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.CONTINUE));
                }
            }
            if (askForMore) {
                requestRead();
            }
            try {
                while (queue.isEmpty() && !ended && failure == null) {
                    if (waitingSince == 0) {
                        waitingSince = System.nanoTime() | 1; // never 0
                    }
                    if (idleWatch == null) {
                        watchIdle(idleTimeoutMillis);
                    }
                    try {
                        arrived.await();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        throw new InterruptedIOException("interrupted while reading the request body");
                    }
                }
            } finally {
                waitingSince = 0;
            }
            if (failure != null) {
                throw new IOException("request body failed: " + failure.getMessage(), failure);
            }
            if (queue.isEmpty()) {
                return -1;
            }
            int copied = 0;
            while (copied < length && !queue.isEmpty()) {
                ByteBuf head = queue.peek();
                int count = Math.min(length - copied, head.readableBytes());
                head.readBytes(target, offset + copied, count);
                copied += count;
                if (!head.isReadable()) {
                    queue.poll().release();
                }
            }
            int before = queuedBytes;
            queuedBytes -= copied;
            if (!ended && before >= BUFFERED_BYTES_MAX / 2 && queuedBytes < BUFFERED_BYTES_MAX / 2) {
                requestRead();
            } else if (!ended && queuedBytes == 0) {
                requestRead();
            }
            return copied;
        } finally {
            lock.unlock();
        }
    }

    /** Arms the idle watch to look in {@code millis}: it fails a reader that has waited the limit, and looks again later otherwise. */
    private void watchIdle(long millis) {
        idleWatch = dev.plinth.wire.Deadlines.after(millis, () -> {
            lock.lock();
            try {
                idleWatch = null;
                if (released || ended || failure != null) {
                    return;
                }
                long waitedMillis = waitingSince == 0 ? 0 : TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - waitingSince);
                if (waitedMillis >= idleTimeoutMillis) {
                    failure = new IOException("no request body bytes for " + idleTimeoutMillis + " ms");
                    arrived.signalAll();
                } else if (waitingSince != 0) {
                    watchIdle(idleTimeoutMillis - waitedMillis);
                }
                // not waiting: the next wait arms the watch again
            } finally {
                lock.unlock();
            }
        });
    }

    private void requestRead() {
        context.channel().eventLoop().execute(() -> S3Gateway.readMore(context));
    }

    /** Frees what is queued; later pieces are dropped as they come. */
    @Override
    public void close() {
        lock.lock();
        try {
            released = true;
            if (idleWatch != null) {
                idleWatch.cancel();
                idleWatch = null;
            }
            while (!queue.isEmpty()) {
                queue.poll().release();
            }
            queuedBytes = 0;
        } finally {
            lock.unlock();
        }
    }
}
