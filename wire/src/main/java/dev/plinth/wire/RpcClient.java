package dev.plinth.wire;

import static java.util.Objects.requireNonNull;

import dev.plinth.common.Config;
import dev.plinth.common.ErrorCode;
import dev.plinth.common.NonBlocking;
import dev.plinth.common.PlinthException;
import dev.plinth.common.Settings;
import dev.plinth.wire.messages.HandshakeMessages.Authenticate;
import dev.plinth.wire.messages.HandshakeMessages.Challenge;
import dev.plinth.wire.messages.HandshakeMessages.ErrorReply;
import dev.plinth.wire.messages.HandshakeMessages.Hello;
import io.netty.bootstrap.Bootstrap;
import dev.plinth.common.codec.RecordCodec;
import dev.plinth.common.log.LogContext;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
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
    /** The server's dispatcher when it runs in this JVM: requests skip the channel (set after the handshake). */
    private volatile RpcDispatcher direct;
    private volatile String clientName = "?";

    private record Pending(Class<? extends Record> responseType, CompletableFuture<RpcResponse<Record>> future,
                           io.netty.util.Timeout timeout) {}

    private RpcClient(HostPort address, Channel channel, Config config) {
        this.address = address;
        this.channel = channel;
        this.inflightSlots = new Semaphore(config.get(Settings.RPC_INFLIGHT_REQUESTS_MAX));
        this.defaultTimeout = Duration.ofMillis(config.get(Settings.RPC_TIMEOUT_MILLIS));
    }

    /** Connects and authenticates; fails with UNAVAILABLE or AUTHENTICATION_FAILED. */
    public static RpcClient connect(EventLoopGroup group, HostPort address, ClusterSecret secret, String clientName, Config config) {
        return connect(group, address, address.toSocketAddress(), null, secret, clientName, config);
    }

    /**
     * Connects to a server in this JVM ({@code group} must be an in-process group). The handshake
     * goes over an in-JVM channel as over TCP; after it, requests are handed to the server's
     * dispatcher on the caller's thread (see {@link #callDirect}).
     */
    static RpcClient connectInProcess(EventLoopGroup group, HostPort address, InProcessEndpoints.Endpoint endpoint,
                                      ClusterSecret secret, String clientName, Config config) {
        return connect(group, address, endpoint.local(), endpoint, secret, clientName, config);
    }

    private static RpcClient connect(EventLoopGroup group, HostPort address, java.net.SocketAddress target,
                                     InProcessEndpoints.Endpoint endpoint, ClusterSecret secret, String clientName, Config config) {
        requireNonNull(secret, "secret is null");
        boolean inProcess = endpoint != null;
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
            client.direct = endpoint == null ? null : endpoint.dispatcher();
            client.clientName = clientName;
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
        RpcDispatcher dispatcher = direct;
        boolean mustNotWait = NonBlocking.active();
        if (mustNotWait && (dispatcher == null || !channel.isActive())) {
            release(data); // work that must not wait: an answer from the network comes later
            return CompletableFuture.failedFuture(NonBlocking.refuse("a call to " + address));
        }
        try {
            if (!(mustNotWait ? inflightSlots.tryAcquire() : inflightSlots.tryAcquire(timeout.toMillis(), TimeUnit.MILLISECONDS))) {
                release(data);
                return mustNotWait ? CompletableFuture.failedFuture(NonBlocking.refuse("a request slot to " + address))
                        : CompletableFuture.failedFuture(new PlinthException(ErrorCode.TIMED_OUT, "no free request slot to " + address));
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            release(data);
            return CompletableFuture.failedFuture(new PlinthException(ErrorCode.UNAVAILABLE, "interrupted"));
        }
        long correlationId = nextCorrelationId.getAndIncrement();
        if (dispatcher != null && channel.isActive()) {
            return (CompletableFuture<RpcResponse<R>>) (CompletableFuture<?>) callDirect(dispatcher, request, data, correlationId, timeout);
        }
        CompletableFuture<RpcResponse<Record>> future = new CompletableFuture<>();
        pending.put(correlationId, new Pending(Protocol.responseClass(type), future, startTimer(correlationId, request, timeout)));
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

    /**
     * Fails the call with TIMED_OUT unless it is answered within {@code timeout}. On the shared
     * wheel, not the channel's event loop: for a call served in this JVM the timer was the only
     * thing that woke a network thread, twice per call (schedule, cancel).
     */
    private io.netty.util.Timeout startTimer(long correlationId, Record request, Duration timeout) {
        return Deadlines.after(timeout.toMillis(), () -> {
            Pending expired = pending.remove(correlationId);
            if (expired != null) {
                inflightSlots.release();
                expired.future().completeExceptionally(new LinkFailure(ErrorCode.TIMED_OUT,
                        request.getClass().getSimpleName() + " to " + address + " took longer than " + timeout.toMillis() + " ms"));
            }
        });
    }

    /**
     * Serves a request of a server in this JVM without a channel: the request and its response are
     * encoded and decoded as on the wire (so both are validated as any frame is), the handler runs
     * on the calling thread, and its answer completes the call as a response frame would. This
     * saves four thread hand-offs per call (client loop, server loop, and back), which on a small
     * VM cost more than the work of a metadata lookup. A handler may run short blocking work inline
     * when the caller is a platform thread ({@link RequestContext#onCallerThread()}); an answer
     * ready when the handler returns needs no timer either.
     */
    private CompletableFuture<RpcResponse<Record>> callDirect(RpcDispatcher dispatcher, Record request, ByteBuf data,
                                                              long correlationId, Duration timeout) {
        Class<? extends Record> responseType = Protocol.responseClass(Protocol.typeOf(request));
        CompletableFuture<RpcResponse<Record>> future = new CompletableFuture<>();
        Record decoded;
        try {
            decoded = roundTrip(request, request.getClass());
        } catch (RuntimeException e) {
            release(data);
            inflightSlots.release();
            future.completeExceptionally(e instanceof PlinthException ? e : new PlinthException(ErrorCode.PROTOCOL_ERROR, e.toString()));
            return future;
        }
        ByteBuf payload = data == null ? Unpooled.EMPTY_BUFFER : data;
        RequestContext context = new RequestContext(channel.localAddress(), System.nanoTime() + timeout.toNanos(), false,
                !Thread.currentThread().isVirtual());
        String requestId = clientName + "@in-jvm#" + correlationId;
        CompletableFuture<Reply> reply;
        try {
            reply = LogContext.withRequest(requestId, () -> dispatcher.dispatch(context, decoded, payload));
        } catch (RuntimeException e) {
            reply = CompletableFuture.failedFuture(e);
        }
        if (RpcDispatcher.dropsReplyTo(decoded)) {
            // carried out, but the reply is lost: the caller times out, as over a network that lost it
            pending.put(correlationId, new Pending(responseType, future, startTimer(correlationId, request, timeout)));
            reply.whenComplete((answer, failure) -> releaseUnwanted(payload, answer));
            return future;
        }
        if (reply.isDone()) {
            inflightSlots.release();
            answerDirect(reply, payload, decoded, requestId, responseType, future);
            return future;
        }
        if (NonBlocking.active()) {
            // answered later, by another thread: nobody will wait for it here, so its answer is dropped when it comes
            inflightSlots.release();
            reply.whenComplete((answer, failure) -> releaseUnwanted(payload, answer));
            return CompletableFuture.failedFuture(NonBlocking.refuse(request.getClass().getSimpleName() + " served later in this JVM"));
        }
        Pending waiting = new Pending(responseType, future, startTimer(correlationId, request, timeout));
        pending.put(correlationId, waiting);
        CompletableFuture<Reply> answered = reply;
        reply.whenComplete((answer, failure) -> {
            if (pending.remove(correlationId) == null) {
                releaseUnwanted(payload, answer); // the call timed out or the client closed meanwhile
                return;
            }
            waiting.timeout().cancel();
            inflightSlots.release();
            answerDirect(answered, payload, decoded, requestId, responseType, future);
        });
        return future;
    }

    /** Releases a direct call's request bytes and its answer's (null if it failed) when nobody waits for the answer. */
    private static void releaseUnwanted(ByteBuf payload, Reply answer) {
        payload.release();
        if (answer != null) {
            answer.releaseData();
        }
    }

    /** Completes a direct call from its handler's finished answer, as {@link #onFrame} does from a response frame. */
    private static void answerDirect(CompletableFuture<Reply> reply, ByteBuf payload, Record request, String requestId,
                                     Class<? extends Record> responseType, CompletableFuture<RpcResponse<Record>> future) {
        payload.release();
        Reply answer;
        try {
            answer = reply.join();
        } catch (RuntimeException failure) {
            future.completeExceptionally(failureOf(RpcServer.errorReplyOf(failure, request, requestId)));
            return;
        }
        try {
            Record message = roundTrip(answer.message(), responseType);
            if (answer.data() != null && !(answer.data() instanceof ByteBuf)) {
                throw new PlinthException(ErrorCode.INTERNAL, "a file region in the reply to an in-JVM call");
            }
            future.complete(new RpcResponse<>(message, answer.data() == null ? Unpooled.EMPTY_BUFFER : (ByteBuf) answer.data()));
        } catch (RuntimeException e) {
            answer.releaseData();
            future.completeExceptionally(e);
        }
    }

    /** The message as the other side would decode it from a frame. */
    private static Record roundTrip(Record message, Class<? extends Record> type) {
        var encoded = Protocol.encode(message);
        return RecordCodec.decode(type, java.nio.ByteBuffer.wrap(encoded.array(), 0, encoded.length()));
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
        waiting.timeout().cancel();
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
            return failureOf((ErrorReply) Protocol.decode(ErrorReply.class, frame.header()));
        } catch (RuntimeException e) {
            return new PlinthException(ErrorCode.PROTOCOL_ERROR, "undecodable error reply");
        }
    }

    /** The failure a caller sees for a server's error reply, whether it came in a frame or from a direct call. */
    private static PlinthException failureOf(ErrorReply error) {
        return new PlinthException(ErrorCode.fromWireCode(error.code()), error.message());
    }

    private void failOne(long correlationId, RuntimeException failure) {
        Pending waiting = pending.remove(correlationId);
        if (waiting != null) {
            waiting.timeout().cancel();
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
