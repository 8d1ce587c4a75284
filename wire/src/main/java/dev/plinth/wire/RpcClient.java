package dev.plinth.wire;

import static java.util.Objects.requireNonNull;

import dev.plinth.common.Config;
import dev.plinth.common.ErrorCode;
import dev.plinth.common.PlinthException;
import dev.plinth.common.Settings;
import dev.plinth.wire.messages.HandshakeMessages.Authenticate;
import dev.plinth.wire.messages.HandshakeMessages.Challenge;
import dev.plinth.wire.messages.HandshakeMessages.ErrorReply;
import dev.plinth.wire.messages.HandshakeMessages.Hello;
import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.util.concurrent.ScheduledFuture;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One authenticated connection to one server, with many requests in flight (matched by
 * correlation id). The number in flight is bounded: a caller waits for a free slot. Futures
 * complete on the connection's network thread, so callbacks must not block. Thread-safe.
 */
public final class RpcClient implements AutoCloseable {
    private final HostPort address;
    private final Channel channel;
    private final Semaphore inflightSlots;
    private final Duration defaultTimeout;
    private final Map<Long, Pending> pending = new ConcurrentHashMap<>();
    private final AtomicLong nextCorrelationId = new AtomicLong(1);
    private volatile int serverNodeId = -1;

    private record Pending(Class<? extends Record> responseType, CompletableFuture<RpcResponse<Record>> future,
                           ScheduledFuture<?> timeout) {}

    private RpcClient(HostPort address, Channel channel, Config config) {
        this.address = address;
        this.channel = channel;
        this.inflightSlots = new Semaphore(config.get(Settings.RPC_INFLIGHT_REQUESTS_MAX));
        this.defaultTimeout = Duration.ofMillis(config.get(Settings.RPC_TIMEOUT_MILLIS));
    }

    /** Connects and authenticates; fails with UNAVAILABLE or AUTHENTICATION_FAILED. */
    public static RpcClient connect(EventLoopGroup group, HostPort address, ClusterSecret secret, String clientName, Config config) {
        return connect(group, address, address.toSocketAddress(), false, secret, clientName, config);
    }

    /**
     * Connects to {@code address} at {@code target}: its TCP address, or with {@code inProcess}
     * its in-JVM address (then {@code group} must be an in-process group).
     */
    static RpcClient connect(EventLoopGroup group, HostPort address, java.net.SocketAddress target, boolean inProcess,
                             ClusterSecret secret, String clientName, Config config) {
        requireNonNull(secret, "secret is null");
        long frameBytesMax = config.get(Settings.RPC_FRAME_BYTES_MAX);
        RpcClient[] holder = new RpcClient[1];
        Bootstrap bootstrap = new Bootstrap().group(group);
        if (inProcess) {
            bootstrap.channel(io.netty.channel.local.LocalChannel.class);
        } else {
            bootstrap.channel(Transport.clientChannel())
                    .option(ChannelOption.TCP_NODELAY, true)
                    .option(ChannelOption.RCVBUF_ALLOCATOR, FrameCodec.receiveBuffers())
                    .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, 5000);
            String source = config.get(Settings.RPC_SOURCE_ADDRESS);
            if (!source.isEmpty()) {
                bootstrap.localAddress(source, 0);
            }
        }
        bootstrap.handler(new ChannelInitializer<Channel>() {
                    @Override
                    protected void initChannel(Channel channel) {
                        FrameCodec.install(channel.pipeline(), frameBytesMax, inProcess);
                        channel.pipeline().addLast("rpc", new SimpleChannelInboundHandler<Frame>(false) {
                            @Override
                            protected void channelRead0(ChannelHandlerContext context, Frame frame) {
                                holder[0].onFrame(frame);
                            }

                            @Override
                            public void channelInactive(ChannelHandlerContext context) {
                                holder[0].failAll(new LinkFailure(ErrorCode.UNAVAILABLE, "connection to " + address + " closed"));
                            }

                            @Override
                            public void exceptionCaught(ChannelHandlerContext context, Throwable cause) {
                                context.close();
                            }
                        });
                    }
                });
        Channel channel;
        try {
            var connectFuture = bootstrap.connect(target);
            channel = connectFuture.channel();
            holder[0] = new RpcClient(address, channel, config);
            connectFuture.sync();
        } catch (Exception e) {
            throw new LinkFailure(ErrorCode.UNAVAILABLE, "cannot connect to " + address + ": " + e.getMessage(), e);
        }
        RpcClient client = holder[0];
        try {
            byte[] clientNonce = ClusterSecret.nonce();
            Challenge challenge = client.request(new Hello(Frame.PROTOCOL_VERSION, clientName, clientNonce));
            if (!secret.verify("server", clientNonce, challenge.serverProof())) {
                throw new PlinthException(ErrorCode.AUTHENTICATION_FAILED, address + " does not know the cluster secret");
            }
            client.request(new Authenticate(secret.proof("client", challenge.serverNonce())));
            client.serverNodeId = challenge.nodeId();
            return client;
        } catch (RuntimeException e) {
            client.close();
            throw e;
        }
    }

    public HostPort address() {
        return address;
    }

    public int serverNodeId() {
        return serverNodeId;
    }

    public boolean isOpen() {
        return channel.isActive();
    }

    /** Sends a request without data and waits for the response message. */
    public <R extends Record> R request(Record request) {
        return request(request, defaultTimeout);
    }

    /** As above, waiting at most {@code timeout}. */
    public <R extends Record> R request(Record request, Duration timeout) {
        try (RpcResponse<R> response = await(callAsync(request, null, timeout))) {
            return response.message();
        }
    }

    /** Sends a request and waits; the caller must close the response. */
    public <R extends Record> RpcResponse<R> call(Record request) {
        return await(callAsync(request, null, defaultTimeout));
    }

    public static <R extends Record> RpcResponse<R> await(CompletableFuture<RpcResponse<R>> future) {
        try {
            return future.get();
        } catch (ExecutionException e) {
            RuntimeException failure = unwrap(e.getCause());
            if (failure instanceof PlinthException plinth) {
                // rethrown here so the stack shows the caller, not the network thread
                throw plinth instanceof LinkFailure ? new LinkFailure(plinth.code(), plinth.detail(), plinth)
                        : new PlinthException(plinth.code(), plinth.detail(), plinth);
            }
            throw failure;
        } catch (InterruptedException e) {
            // nobody will take the response now: release its buffer whenever it comes
            future.thenAccept(RpcResponse::close);
            Thread.currentThread().interrupt();
            throw new PlinthException(ErrorCode.UNAVAILABLE, "interrupted");
        }
    }

    public static RuntimeException unwrap(Throwable failure) {
        Throwable cause = failure;
        while ((cause instanceof CompletionException || cause instanceof ExecutionException) && cause.getCause() != null) {
            cause = cause.getCause();
        }
        if (cause instanceof RuntimeException runtime) {
            return runtime;
        }
        return new PlinthException(ErrorCode.INTERNAL, cause.toString(), cause);
    }

    /**
     * Sends a request with optional bulk data (released by this call) and returns its response.
     * Blocks while the in-flight window is full, so it must not be called on a network thread.
     */
    @SuppressWarnings("unchecked")
    public <R extends Record> CompletableFuture<RpcResponse<R>> callAsync(Record request, ByteBuf data, Duration timeout) {
        int type = Protocol.typeOf(request);
        if (channel.eventLoop().inEventLoop()) {
            throw new IllegalStateException("RPC calls must not be made on a network thread");
        }
        try {
            if (!inflightSlots.tryAcquire(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                release(data);
                return CompletableFuture.failedFuture(new PlinthException(ErrorCode.TIMED_OUT, "no free request slot to " + address));
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            release(data);
            return CompletableFuture.failedFuture(new PlinthException(ErrorCode.UNAVAILABLE, "interrupted"));
        }
        long correlationId = nextCorrelationId.getAndIncrement();
        CompletableFuture<RpcResponse<Record>> future = new CompletableFuture<>();
        ScheduledFuture<?> timer = channel.eventLoop().schedule(() -> {
            Pending expired = pending.remove(correlationId);
            if (expired != null) {
                inflightSlots.release();
                expired.future().completeExceptionally(new LinkFailure(ErrorCode.TIMED_OUT,
                        request.getClass().getSimpleName() + " to " + address + " took longer than " + timeout.toMillis() + " ms"));
            }
        }, timeout.toMillis(), TimeUnit.MILLISECONDS);
        pending.put(correlationId, new Pending(Protocol.responseClass(type), future, timer));
        if (!channel.isActive()) {
            release(data);
            failOne(correlationId, new LinkFailure(ErrorCode.UNAVAILABLE, "connection to " + address + " closed"));
        } else {
            try {
                FrameCodec.write(channel, 0, type, correlationId, (int) Math.min(Integer.MAX_VALUE, timeout.toMillis()), request,
                        data, data == null ? 0 : data.readableBytes());
            } catch (RuntimeException e) {
                release(data);
                failOne(correlationId, e);
            }
        }
        return (CompletableFuture<RpcResponse<R>>) (CompletableFuture<?>) future;
    }

    private static void release(ByteBuf data) {
        if (data != null) {
            data.release();
        }
    }

    private void onFrame(Frame frame) {
        Pending waiting = pending.remove(frame.correlationId());
        if (waiting == null) {
            if (frame.correlationId() == 0 && frame.isError()) {
                // A connection-level error from the server: it will close the connection.
                failAll(decodeError(frame));
            }
            frame.release();
            return;
        }
        waiting.timeout().cancel(false);
        inflightSlots.release();
        try {
            if (frame.isError()) {
                waiting.future().completeExceptionally(decodeError(frame));
            } else {
                Record message = Protocol.decode(waiting.responseType(), frame.header());
                waiting.future().complete(new RpcResponse<>(message, frame.data().retain()));
            }
        } catch (RuntimeException e) {
            waiting.future().completeExceptionally(e);
        } finally {
            frame.release();
        }
    }

    private static PlinthException decodeError(Frame frame) {
        try {
            ErrorReply error = (ErrorReply) Protocol.decode(ErrorReply.class, frame.header());
            return new PlinthException(ErrorCode.fromWireCode(error.code()), error.message());
        } catch (RuntimeException e) {
            return new PlinthException(ErrorCode.PROTOCOL_ERROR, "undecodable error reply");
        }
    }

    private void failOne(long correlationId, RuntimeException failure) {
        Pending waiting = pending.remove(correlationId);
        if (waiting != null) {
            waiting.timeout().cancel(false);
            inflightSlots.release();
            waiting.future().completeExceptionally(failure);
        }
    }

    private void failAll(RuntimeException failure) {
        for (Long correlationId : pending.keySet()) {
            failOne(correlationId, failure);
        }
    }

    @Override
    public void close() {
        channel.close().syncUninterruptibly();
        failAll(new LinkFailure(ErrorCode.UNAVAILABLE, "connection to " + address + " closed"));
    }

}
