package dev.plinth.wire;

import static java.util.Objects.requireNonNull;

import dev.plinth.common.Config;
import dev.plinth.common.ErrorCode;
import dev.plinth.common.PlinthException;
import dev.plinth.common.Settings;
import dev.plinth.common.log.LogContext;
import dev.plinth.wire.messages.HandshakeMessages.Authenticate;
import dev.plinth.wire.messages.HandshakeMessages.Challenge;
import dev.plinth.wire.messages.HandshakeMessages.ErrorReply;
import dev.plinth.wire.messages.HandshakeMessages.Hello;
import dev.plinth.wire.messages.HandshakeMessages.Welcome;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.local.LocalAddress;
import io.netty.channel.local.LocalServerChannel;
import io.netty.handler.codec.DecoderException;
import java.net.InetSocketAddress;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one RPC listener of a process; every role registers its handlers in the dispatcher.
 *
 * <p>Each connection must authenticate first (Hello, Authenticate). After that each frame is
 * decoded, validated and dispatched; a bad header gets an error reply and the connection goes on,
 * a bad frame (framing, magic, version, length) gets an error and the connection is closed,
 * since the byte stream can no longer be trusted. Each connection has a bounded number of
 * requests in flight: beyond it the server stops reading from that socket (TCP backpressure).
 */
public final class RpcServer implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(RpcServer.class);

    private final RpcDispatcher dispatcher;
    private final ClusterSecret secret;
    private final int nodeId;
    private final long frameBytesMax;
    private final int inflightRequestsMax;
    private final long handshakeTimeoutMillis;
    private final EventLoopGroup bossGroup;
    private final EventLoopGroup workerGroup;
    private final boolean inProcess;
    private Channel serverChannel;
    private EventLoopGroup inProcessGroup;
    private Channel inProcessChannel;
    private HostPort inProcessAddress;
    private InProcessEndpoints.Endpoint inProcessEndpoint;

    public RpcServer(RpcDispatcher dispatcher, ClusterSecret secret, int nodeId, Config config) {
        this.dispatcher = requireNonNull(dispatcher, "dispatcher is null");
        this.secret = requireNonNull(secret, "secret is null");
        this.nodeId = nodeId;
        this.frameBytesMax = config.get(Settings.RPC_FRAME_BYTES_MAX);
        this.inflightRequestsMax = config.get(Settings.RPC_INFLIGHT_REQUESTS_MAX);
        this.handshakeTimeoutMillis = config.get(Settings.RPC_HANDSHAKE_TIMEOUT_MILLIS);
        this.bossGroup = Transport.newGroup(1);
        this.workerGroup = Transport.newGroup(Math.max(2, Runtime.getRuntime().availableProcessors()));
        this.inProcess = config.get(Settings.RPC_IN_PROCESS);
    }

    /** Every accepted connection, TCP and in-JVM (a channel leaves the group when it closes). */
    private final io.netty.channel.group.ChannelGroup connections =
            new io.netty.channel.group.DefaultChannelGroup(io.netty.util.concurrent.GlobalEventExecutor.INSTANCE);

    /** Binds and returns the bound address (the real port when asked for port 0). */
    public HostPort start(HostPort listen) {
        ServerBootstrap bootstrap = new ServerBootstrap()
                .group(bossGroup, workerGroup)
                .channel(Transport.serverChannel())
                .option(ChannelOption.SO_REUSEADDR, true)
                .childOption(ChannelOption.TCP_NODELAY, true)
                .childOption(ChannelOption.RCVBUF_ALLOCATOR, FrameCodec.receiveBuffers())
                .childHandler(connectionInitializer(false));
        try {
            serverChannel = bootstrap.bind(listen.toSocketAddress()).sync().channel();
        } catch (Exception e) {
            close();
            throw new PlinthException(ErrorCode.UNAVAILABLE, "cannot listen on " + listen + ": " + e.getMessage(), e);
        }
        InetSocketAddress bound = (InetSocketAddress) serverChannel.localAddress();
        HostPort address = new HostPort(listen.host(), bound.getPort());
        if (inProcess) {
            startInProcess(address);
        }
        return address;
    }

    /** Also listens on an in-JVM address, registered under the TCP address for clients in this process. */
    private void startInProcess(HostPort address) {
        inProcessGroup = Transport.newInProcessGroup(2);
        LocalAddress local = new LocalAddress("plinth-rpc-" + address + "-" + System.identityHashCode(this));
        try {
            inProcessChannel = new ServerBootstrap().group(inProcessGroup).channel(LocalServerChannel.class)
                    .childHandler(connectionInitializer(true)).bind(local).sync().channel();
        } catch (Exception e) {
            close();
            throw new PlinthException(ErrorCode.UNAVAILABLE, "cannot listen in-process: " + e.getMessage(), e);
        }
        inProcessAddress = address;
        inProcessEndpoint = new InProcessEndpoints.Endpoint(local, dispatcher);
        InProcessEndpoints.register(address, inProcessEndpoint);
    }

    private ChannelInitializer<Channel> connectionInitializer(boolean inProcessChannel) {
        return new ChannelInitializer<>() {
            @Override
            protected void initChannel(Channel channel) {
                connections.add(channel);
                FrameCodec.install(channel.pipeline(), frameBytesMax, inProcessChannel);
                channel.pipeline().addLast("rpc", new ConnectionHandler(!inProcessChannel));
            }
        };
    }

    @Override
    public void close() {
        if (inProcessAddress != null) {
            InProcessEndpoints.unregister(inProcessAddress, inProcessEndpoint);
        }
        if (inProcessChannel != null) {
            inProcessChannel.close().syncUninterruptibly();
        }
        if (serverChannel != null) {
            serverChannel.close().syncUninterruptibly();
        }
        // Close the accepted connections while both ends' event loops still run: an in-JVM channel
        // whose server side went away with its loop fails its client's later close (Netty logs a
        // RejectedExecutionException stack for each).
        connections.close().awaitUninterruptibly(2, TimeUnit.SECONDS);
        bossGroup.shutdownGracefully(0, 2, TimeUnit.SECONDS).syncUninterruptibly();
        workerGroup.shutdownGracefully(0, 2, TimeUnit.SECONDS).syncUninterruptibly();
        if (inProcessGroup != null) {
            inProcessGroup.shutdownGracefully(0, 2, TimeUnit.SECONDS).syncUninterruptibly();
        }
    }

    /**
     * What the caller is told of a failed request: a typed failure's code and detail (bounded), or
     * INTERNAL for anything else, which is a bug and logged here. Shared by TCP, in-JVM channels and
     * direct in-JVM calls, so a caller sees the same error whichever way its request went.
     */
    static ErrorReply errorReplyOf(Throwable failure, Record request, String requestId) {
        Throwable cause = failure instanceof CompletionException && failure.getCause() != null ? failure.getCause() : failure;
        if (cause instanceof PlinthException plinth) {
            return new ErrorReply(plinth.code().wireCode(), bounded(plinth.detail()));
        }
        LOG.error("request {} {} failed with a bug", request.getClass().getSimpleName(), requestId, cause);
        return new ErrorReply(ErrorCode.INTERNAL.wireCode(), bounded(cause.toString()));
    }

    private static String bounded(String message) {
        return message.length() > 1000 ? message.substring(0, 1000) : message;
    }

    private final class ConnectionHandler extends SimpleChannelInboundHandler<Frame> {
        private final byte[] serverNonce = ClusterSecret.nonce();
        private boolean helloSeen;
        /** The client name the peer gave in its Hello: the first part of its requests' ids in logs. */
        private String peerName = "?";
        private boolean authenticated;
        private int inflightRequests;
        private final boolean fileRegions;

        ConnectionHandler(boolean fileRegions) {
            super(false);
            this.fileRegions = fileRegions;
        }

        @Override
        public void channelActive(ChannelHandlerContext context) throws Exception {
            // a peer that connects and never authenticates must not hold a connection forever
            context.executor().schedule(() -> {
                if (!authenticated && context.channel().isActive()) {
                    LOG.warn("closing connection from {}: no handshake within {} ms", context.channel().remoteAddress(), handshakeTimeoutMillis);
                    context.close();
                }
            }, handshakeTimeoutMillis, TimeUnit.MILLISECONDS);
            super.channelActive(context);
        }

        @Override
        protected void channelRead0(ChannelHandlerContext context, Frame frame) {
            Channel channel = context.channel();
            long correlationId = frame.correlationId();
            int type = frame.messageType();
            Record request;
            try {
                if (frame.isResponse()) {
                    throw new PlinthException(ErrorCode.PROTOCOL_ERROR, "unexpected response frame");
                }
                request = Protocol.decode(Protocol.requestClass(type), frame.header());
            } catch (PlinthException e) {
                frame.release();
                sendError(channel, type, correlationId, e.code(), e.detail());
                if (!authenticated) {
                    channel.close();
                }
                return;
            } catch (RuntimeException e) {
                frame.release();
                sendError(channel, type, correlationId, ErrorCode.PROTOCOL_ERROR, e.toString());
                return;
            }
            if (!authenticated) {
                frame.release();
                handshake(channel, type, correlationId, request);
                return;
            }
            long deadlineNanos = frame.timeoutMillis() == 0 ? 0 : System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(frame.timeoutMillis());
            RequestContext requestContext = new RequestContext(channel.remoteAddress(), deadlineNanos, fileRegions, false);
            if (++inflightRequests >= inflightRequestsMax) {
                channel.config().setAutoRead(false);
            }
            String requestId = peerName + "@" + channel.remoteAddress() + "#" + correlationId;
            LogContext.withRequest(requestId, () -> dispatcher.dispatch(requestContext, request, frame.data())).whenComplete((reply, failure) -> {
                frame.release();
                boolean dropped = RpcDispatcher.dropsReplyTo(request);
                if (failure != null && !dropped) {
                    sendError(channel, type, correlationId, errorReplyOf(failure, request, requestId));
                } else if (failure != null) {
                    // the reply is lost on its way (a fault point)
                } else if (!channel.isActive() || dropped) {
                    reply.releaseData();
                } else {
                    FrameCodec.write(channel, Frame.FLAG_RESPONSE, type, correlationId, 0, reply.message(), reply.data(), reply.dataLength());
                }
                channel.eventLoop().execute(() -> {
                    if (--inflightRequests < inflightRequestsMax / 2 && !channel.config().isAutoRead()) {
                        channel.config().setAutoRead(true);
                    }
                });
            });
        }

        private void handshake(Channel channel, int type, long correlationId, Record request) {
            if (request instanceof Hello hello && !helloSeen) {
                helloSeen = true;
                peerName = hello.clientName() == null || hello.clientName().isEmpty() ? "?" : hello.clientName();
                if (hello.protocolVersion() != Frame.PROTOCOL_VERSION) {
                    sendError(channel, type, correlationId, ErrorCode.VERSION_MISMATCH, "client speaks version " + hello.protocolVersion());
                    channel.close();
                    return;
                }
                byte[] serverProof = secret.proof("server", hello.clientNonce());
                FrameCodec.write(channel, Frame.FLAG_RESPONSE, type, correlationId, 0,
                        new Challenge(nodeId, serverNonce, serverProof), null, 0);
            } else if (request instanceof Authenticate authenticate && helloSeen && secret.verify("client", serverNonce, authenticate.clientProof())) {
                authenticated = true;
                FrameCodec.write(channel, Frame.FLAG_RESPONSE, type, correlationId, 0, new Welcome(nodeId), null, 0);
            } else {
                LOG.warn("connection from {} failed to authenticate", channel.remoteAddress());
                sendError(channel, type, correlationId, ErrorCode.AUTHENTICATION_FAILED, "wrong cluster secret or handshake");
                channel.close();
            }
        }

        private void sendError(Channel channel, int type, long correlationId, ErrorCode code, String message) {
            sendError(channel, type, correlationId, new ErrorReply(code.wireCode(), bounded(message)));
        }

        private void sendError(Channel channel, int type, long correlationId, ErrorReply error) {
            if (channel.isActive()) {
                FrameCodec.write(channel, Frame.FLAG_RESPONSE | Frame.FLAG_ERROR, type, correlationId, 0, error, null, 0);
            }
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext context, Throwable cause) {
            Throwable root = cause instanceof DecoderException && cause.getCause() != null ? cause.getCause() : cause;
            Channel channel = context.channel();
            if (root instanceof PlinthException plinth) {
                LOG.warn("closing connection from {}: {}", channel.remoteAddress(), plinth.getMessage());
                sendErrorAndClose(channel, plinth.code(), plinth.detail());
            } else if (cause instanceof DecoderException) {
                LOG.warn("closing connection from {}: {}", channel.remoteAddress(), root.toString());
                sendErrorAndClose(channel, ErrorCode.PROTOCOL_ERROR, root.getMessage() == null ? root.toString() : root.getMessage());
            } else {
                LOG.debug("connection from {} failed: {}", channel.remoteAddress(), root.toString());
                channel.close();
            }
        }

        private void sendErrorAndClose(Channel channel, ErrorCode code, String message) {
            if (!channel.isActive()) {
                return;
            }
            var encoded = Protocol.encode(new ErrorReply(code.wireCode(), message == null ? "" : message));
            channel.writeAndFlush(Frame.encodePrefix(channel.alloc(), Frame.FLAG_RESPONSE | Frame.FLAG_ERROR, 0, 0, 0,
                    encoded.array(), encoded.length(), 0)).addListener(ChannelFutureListener.CLOSE);
        }
    }
}
