package dev.plinth.gateway;

import static java.util.Objects.requireNonNull;

import dev.plinth.client.PlinthClient;
import dev.plinth.common.Config;
import dev.plinth.common.Credentials;
import dev.plinth.common.ErrorCode;
import dev.plinth.common.PlinthException;
import dev.plinth.common.Settings;
import dev.plinth.wire.HostPort;
import dev.plinth.wire.Transport;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.handler.codec.TooLongFrameException;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import java.io.File;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The S3 gateway: an HTTP/1.1 server (Netty) whose requests each run on a virtual thread against
 * the native client. The event loop moves bytes: it hands a request's body to its thread through
 * a bounded {@link BodyStream} and writes what the thread answers. A GET or HEAD whose answer needs
 * nothing that could wait (the key, records and bytes all in memory) the event loop answers itself,
 * and anything that would wait sends the request to its thread instead (design note 71). A connection serves
 * one request at a time (what arrives of the next waits, unread further, until the answer is out), and at most
 * {@code s3.requests-inflight-max} requests run at once; beyond that the answer is SlowDown.
 */
public final class S3Gateway implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(S3Gateway.class);

    private final S3Router router;
    private final Semaphore inflight;
    private final int headerBytesMax;
    private final SslContext tls;
    private final EventLoopGroup bossGroup = Transport.newGroup(1);
    private final EventLoopGroup workerGroup = Transport.newGroup(2);
    private final AtomicLong requestIds = new AtomicLong();
    private final String requestIdPrefix = Long.toHexString(System.nanoTime() & 0xffffff).toUpperCase();
    private Channel serverChannel;
    private HostPort address;

    private final io.prometheus.metrics.core.metrics.Counter requests;
    private final io.prometheus.metrics.core.metrics.Histogram duration;
    private final io.prometheus.metrics.core.metrics.Counter refusals;
    private final io.prometheus.metrics.core.metrics.Counter eventLoopAnswers;

    private S3Gateway(PlinthClient client, Config config, io.prometheus.metrics.model.registry.PrometheusRegistry registry) {
        this.requests = dev.plinth.wire.Metrics.counter(registry, "plinth_s3_requests", "S3 requests answered, by operation and HTTP status.",
                "operation", "status");
        this.duration = dev.plinth.wire.Metrics.latency(registry, "plinth_s3_request_duration_seconds",
                "Time from an S3 request's headers to the end of its answer, by operation.", "operation");
        this.refusals = dev.plinth.wire.Metrics.counter(registry, "plinth_s3_refused_requests",
                "Requests refused before an operation ran (bad HTTP, oversize headers, too many in progress), by error code.", "code");
        this.eventLoopAnswers = dev.plinth.wire.Metrics.counter(registry, "plinth_s3_event_loop_answers",
                "Requests answered on the network event loop, everything they needed in memory (the rest run on threads of their own).");
        S3Namespace namespace = new S3Namespace(client, config.get(Settings.S3_ROOT), new ServerSideEncryption.Channel(
                !config.get(Settings.S3_TLS_CERTIFICATE_FILE).isEmpty(), config.get(Settings.S3_SSE_C_OVER_HTTP)));
        int anonymousUid = config.get(Settings.S3_ANONYMOUS_UID);
        Authenticator authenticator = new Authenticator(new AccessKeys(client),
                anonymousUid < 0 ? null : new Credentials(anonymousUid, anonymousUid, java.util.List.of()), client.clock());
        this.router = new S3Router(authenticator, namespace, config.get(Settings.S3_REGION), client,
                config.get(Settings.S3_DOMAIN));
        this.inflight = new Semaphore(config.get(Settings.S3_REQUESTS_INFLIGHT_MAX));
        this.headerBytesMax = Math.toIntExact(config.get(Settings.S3_HEADER_BYTES_MAX));
        String certificate = config.get(Settings.S3_TLS_CERTIFICATE_FILE);
        String key = config.get(Settings.S3_TLS_KEY_FILE);
        if (!certificate.isEmpty() || !key.isEmpty()) {
            try {
                tls = SslContextBuilder.forServer(new File(certificate), new File(key)).build();
            } catch (Exception | Error e) {
                throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "cannot load the S3 TLS certificate " + certificate + " and key " + key
                        + ": " + e.getMessage(), e);
            }
        } else {
            tls = null;
        }
    }

    /** Starts a gateway over {@code client} (whose own credentials are not used: each request acts as its key's uid/gid). */
    public static S3Gateway start(PlinthClient client, Config config, HostPort listen) {
        return start(client, config, listen, dev.plinth.wire.Metrics.unexposed());
    }

    /** As {@link #start(PlinthClient, Config, HostPort)}, counting requests into {@code registry}. */
    public static S3Gateway start(PlinthClient client, Config config, HostPort listen, io.prometheus.metrics.model.registry.PrometheusRegistry registry) {
        requireNonNull(client, "client is null");
        S3Gateway gateway = new S3Gateway(client, config, registry);
        try {
            gateway.bind(listen);
            return gateway;
        } catch (RuntimeException e) {
            gateway.close();
            throw e;
        }
    }

    private void bind(HostPort listen) {
        ServerBootstrap bootstrap = new ServerBootstrap().group(bossGroup, workerGroup).channel(Transport.serverChannel())
                .option(ChannelOption.SO_REUSEADDR, true)
                .childOption(ChannelOption.TCP_NODELAY, true)
                .childOption(ChannelOption.AUTO_READ, false)
                .childOption(ChannelOption.ALLOW_HALF_CLOSURE, true)
                .childOption(ChannelOption.WRITE_BUFFER_WATER_MARK, new WriteBufferWaterMark(1 << 20, 4 << 20))
                .childHandler(new ChannelInitializer<Channel>() {
                    @Override
                    protected void initChannel(Channel channel) {
                        if (tls != null) {
                            channel.pipeline().addLast("tls", tls.newHandler(channel.alloc()));
                        }
                        channel.pipeline().addLast("http", new HttpServerCodec(8192, headerBytesMax, 256 * 1024));
                        channel.pipeline().addLast("s3", new ConnectionHandler());
                    }
                });
        try {
            serverChannel = bootstrap.bind(listen.toSocketAddress()).sync().channel();
        } catch (Exception e) {
            throw new PlinthException(ErrorCode.UNAVAILABLE, "cannot listen for S3 on " + listen + ": " + e.getMessage(), e);
        }
        address = new HostPort(listen.host(), ((InetSocketAddress) serverChannel.localAddress()).getPort());
    }

    public HostPort address() {
        return address;
    }

    public boolean tls() {
        return tls != null;
    }

    @Override
    public void close() {
        if (serverChannel != null) {
            serverChannel.close().syncUninterruptibly();
        }
        bossGroup.shutdownGracefully(0, 1, java.util.concurrent.TimeUnit.SECONDS).syncUninterruptibly();
        workerGroup.shutdownGracefully(0, 1, java.util.concurrent.TimeUnit.SECONDS).syncUninterruptibly();
    }

    /** How long a connection that is being closed keeps reading (and dropping) what its client still sends. */
    private static final long LINGER_MILLIS = 2_000;
    /** How much it drops before it closes anyway. */
    private static final long LINGER_BYTES_MAX = 64L << 20;

    /**
     * Asks the channel for more input, unless there is none to come: on Netty's epoll channel a
     * read asked for after the client closed its side fails (the socket is no longer watched) and
     * the connection dies with the answer still to be written. Every read the gateway asks for
     * goes through here; call it on the event loop.
     */
    static void readMore(ChannelHandlerContext context) {
        Channel channel = context.channel();
        if (channel.isActive() && !(channel instanceof io.netty.channel.socket.DuplexChannel duplex && duplex.isInputShutdown())) {
            context.read();
        }
    }

    /**
     * One connection: at most one request in progress. A connection closed while its client may
     * still be sending (an answer before the body was read: a refused upload, oversize headers)
     * closes lingering, as web servers do: it sends FIN after the answer and drops what still
     * arrives for a while, so the client reads the answer instead of a reset.
     *
     * <p>Once a request has arrived whole, the connection asks for the next one at once rather than
     * after the answer: with auto-read off, a channel that has no read asked for when its socket
     * read ends stops watching the socket, and asking again watches it anew, two {@code epoll_ctl}
     * calls per request (8% of the gateway's CPU in a profile of small GETs, design note 65).
     * What a client sends before its answer (HTTP pipelining) is kept in order, unread further,
     * and served when the answer is out.
     */
    private final class ConnectionHandler extends ChannelInboundHandlerAdapter {
        private BodyStream body;
        private S3Exchange exchange;
        /** A request without a body that the event loop may answer itself, once its end has arrived (design note 71). */
        private S3Exchange answerHere;
        /** Whether the request in progress has arrived whole: what arrives now belongs to the next one. */
        private boolean requestReceived;
        /**
         * What arrived for later requests while one was in progress, in order. Nothing more is read
         * while anything waits here, so it holds at most one socket read's bytes, or, once the
         * client has closed its side (Netty then reads to the end), what its socket buffer held.
         */
        private final java.util.ArrayDeque<Object> parked = new java.util.ArrayDeque<>();
        private boolean inputShutdown;
        /** Answered without a request thread and closing once that answer is out: what still arrives is dropped. */
        private boolean refused;
        private boolean draining;
        private long drainedBytes;

        @Override
        public void channelActive(ChannelHandlerContext context) {
            readMore(context);
        }

        @Override
        public void channelRead(ChannelHandlerContext context, Object message) {
            if (serving() && (!parked.isEmpty() || answering())) {
                parked.add(message);
                return;
            }
            receive(context, message);
        }

        /** Takes a message for the request in progress or, if it starts one, for the next. */
        private void receive(ChannelHandlerContext context, Object message) {
            if (draining) {
                if (message instanceof HttpContent content) {
                    drainedBytes += content.content().readableBytes();
                }
                io.netty.util.ReferenceCountUtil.release(message);
                if (drainedBytes > LINGER_BYTES_MAX) {
                    context.close();
                } else {
                    readMore(context);
                }
                return;
            }
            if (refused) {
                io.netty.util.ReferenceCountUtil.release(message);
                return;
            }
            if (message instanceof HttpRequest request) {
                startRequest(context, request);
            }
            if (message instanceof HttpContent content) {
                if (body == null) {
                    content.release(); // the rest of a request we already answered and are closing
                    return;
                }
                if (content.decoderResult().isFailure()) {
                    content.release();
                    body.fail(content.decoderResult().cause());
                    handOffWaiting();
                    return;
                }
                boolean last = content instanceof LastHttpContent;
                boolean more = body.offer(content.content());
                if (last) {
                    body.end();
                    requestReceived = true;
                    S3Exchange received = answerHere;
                    if (received != null) {
                        answerHere = null;
                        boolean answered = false;
                        try {
                            answered = router.answerWithoutWaiting(received);
                        } finally {
                            if (answered) {
                                eventLoopAnswers.inc();
                                received.ensureDone();
                            } else {
                                handOff(received); // something it needs would make it wait
                            }
                        }
                    }
                    readIfReady(context);
                } else if (more && parked.isEmpty()) {
                    readMore(context);
                }
            } else if (!(message instanceof HttpRequest)) {
                io.netty.util.ReferenceCountUtil.release(message);
            }
        }

        private void startRequest(ChannelHandlerContext context, HttpRequest request) {
            requestReceived = false;
            String requestId = requestIdPrefix + Long.toHexString(requestIds.incrementAndGet()).toUpperCase();
            if (request.decoderResult().isFailure()) {
                Throwable cause = request.decoderResult().cause();
                S3Error error = cause instanceof TooLongFrameException ? S3Error.REQUEST_HEADER_TOO_LARGE : S3Error.INVALID_REQUEST;
                refuse(context, error, "bad HTTP request: " + cause.getMessage(), requestId);
                return;
            }
            if (!inflight.tryAcquire()) {
                refuse(context, S3Error.SLOW_DOWN, "too many requests in progress; reduce your request rate", requestId);
                return;
            }
            body = new BodyStream(context, HttpUtil.is100ContinueExpected(request));
            BodyStream requestBody = body;
            exchange = new S3Exchange(context, request, requestBody, requestId, (finished, reusable) -> {
                inflight.release();
                requests.labelValues(finished.operation(), Integer.toString(finished.status())).inc();
                duration.labelValues(finished.operation()).observe(finished.elapsedNanos() / 1e9);
                context.channel().eventLoop().execute(() -> {
                    if (body == requestBody) {
                        body = null;
                        exchange = null;
                        requestReceived = false;
                    }
                    if (!context.channel().isActive()) {
                        releaseParked();
                        return;
                    }
                    if (!reusable) {
                        lingeringClose(context);
                        return;
                    }
                    // what the client sent before this answer comes first (a request it sent before closing its side too)
                    while (!parked.isEmpty() && serving() && !answering()) {
                        receive(context, parked.poll());
                    }
                    if (exchange == null && parked.isEmpty() && inputShutdown) {
                        lingeringClose(context);
                    } else {
                        readIfReady(context);
                    }
                });
            });
            if (parked.isEmpty() && (HttpUtil.getContentLength(request, 0L) > 0 || HttpUtil.isTransferEncodingChunked(request))) {
                // a body is to come: asked for now, the socket stays watched (design note 65). A client that
                // expects 100-continue sends nothing until the handler reads and the gateway answers 100, so
                // a request refused first still never has its body sent; BodyStream bounds what comes early.
                readMore(context);
            }
            S3Exchange started = exchange;
            String method = request.method().name();
            if ((method.equals("GET") || method.equals("HEAD")) && HttpUtil.getContentLength(request, 0L) == 0
                    && !HttpUtil.isTransferEncodingChunked(request) && !HttpUtil.is100ContinueExpected(request)) {
                answerHere = started; // tried on this event loop when its (empty) end arrives, right after
                return;
            }
            handOff(started);
        }

        /**
         * Runs a request on a virtual thread of its own: one that needs no waiting is answered on the
         * event loop (it skips two thread wake-ups, most of a small GET's time on an idle server);
         * anything else may wait, for the disk, the targets or a body, and must not hold up the loop.
         */
        private void handOff(S3Exchange started) {
            Thread.ofVirtual().name("s3-" + started.requestId()).start(() -> {
                try {
                    router.handle(started);
                } catch (RuntimeException e) {
                    LOG.warn("{} failed", started.requestId(), e);
                } finally {
                    started.ensureDone();
                }
            });
        }

        /** A request held for the event loop whose end will not come: it runs on a thread, which answers or cleans up. */
        private void handOffWaiting() {
            S3Exchange waiting = answerHere;
            if (waiting != null) {
                answerHere = null;
                handOff(waiting);
            }
        }

        /** Answers on the event loop, without a request thread, and closes the connection. */
        private void refuse(ChannelHandlerContext context, S3Error error, String message, String requestId) {
            refusals.labelValues(error.code()).inc();
            byte[] xml = Xml.error(error.code(), message, "/", requestId).getBytes(StandardCharsets.UTF_8);
            DefaultFullHttpResponse response = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.valueOf(error.httpStatus()),
                    Unpooled.wrappedBuffer(xml));
            response.headers().set(HttpHeaderNames.CONTENT_TYPE, "application/xml").setInt(HttpHeaderNames.CONTENT_LENGTH, xml.length)
                    .set(HttpHeaderNames.CONNECTION, "close").set("x-amz-request-id", requestId);
            body = null;
            refused = true;
            releaseParked();
            context.writeAndFlush(response).addListener(written -> lingeringClose(context));
        }

        /** Whether messages go to requests: not once the connection answered a refusal or drains before it closes. */
        private boolean serving() {
            return !draining && !refused;
        }

        /** Whether a request has arrived whole and is being answered: what arrives now is for the next one. */
        private boolean answering() {
            return exchange != null && requestReceived;
        }

        /**
         * Asks for more input when nothing waits in {@link #parked} and the connection is between
         * requests or has the current one whole. Mid-body, the body stream asks as its reader makes room.
         */
        private void readIfReady(ChannelHandlerContext context) {
            if (parked.isEmpty() && serving() && (exchange == null || answering())) {
                readMore(context);
            }
        }

        private void releaseParked() {
            while (!parked.isEmpty()) {
                io.netty.util.ReferenceCountUtil.release(parked.poll());
            }
        }

        private void lingeringClose(ChannelHandlerContext context) {
            releaseParked();
            Channel channel = context.channel();
            if (draining || !channel.isActive()) {
                return;
            }
            draining = true;
            if (channel instanceof io.netty.channel.socket.DuplexChannel duplex && !inputShutdown) {
                duplex.shutdownOutput();
                channel.eventLoop().schedule(() -> {
                    channel.close();
                }, LINGER_MILLIS, java.util.concurrent.TimeUnit.MILLISECONDS);
                readMore(context);
            } else {
                channel.close();
            }
        }

        @Override
        public void userEventTriggered(ChannelHandlerContext context, Object event) {
            if (event instanceof io.netty.channel.socket.ChannelInputShutdownEvent) {
                // the client sent all it will send: a body cut short fails; an idle or draining connection is done
                inputShutdown = true;
                if (draining || exchange == null) {
                    context.close();
                } else if (body != null && !body.ended()) {
                    body.fail(new java.io.IOException("the client closed its side of the connection before the body ended"));
                }
                return;
            }
            context.fireUserEventTriggered(event);
        }

        @Override
        public void channelReadComplete(ChannelHandlerContext context) {
            // reads are asked for by the body stream (room to buffer) and by a finished response (next request)
        }

        @Override
        public void channelWritabilityChanged(ChannelHandlerContext context) {
            if (exchange != null) {
                exchange.writabilityChanged();
            }
        }

        @Override
        public void channelInactive(ChannelHandlerContext context) {
            releaseParked();
            handOffWaiting();
            if (body != null) {
                body.fail(new java.io.IOException("the client closed the connection"));
            }
            if (exchange != null) {
                exchange.writabilityChanged();
            }
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext context, Throwable cause) {
            LOG.debug("S3 connection failed: {}", cause.toString());
            if (body != null) {
                body.fail(cause);
            }
            context.close();
        }
    }
}
