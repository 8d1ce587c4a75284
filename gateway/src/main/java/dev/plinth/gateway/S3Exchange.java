package dev.plinth.gateway;

import dev.plinth.common.NonBlocking;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.DefaultHttpContent;
import io.netty.handler.codec.http.DefaultHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import java.nio.charset.StandardCharsets;
import java.util.AbstractMap;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * One S3 request and its response, used by the request's own (virtual) thread. Responses are
 * written through Netty from this thread; a streamed body waits while the channel is not
 * writable, so a slow reader holds back the gateway instead of filling its memory.
 */
final class S3Exchange {
    private final ChannelHandlerContext context;
    private final HttpRequest request;
    private final BodyStream body;
    private final String requestId;
    private final String rawPath;
    private final String path;
    /** Why the request target could not be decoded (not UTF-8), or null: such a request is refused before anything else. */
    private final String encodingProblem;
    private final List<Map.Entry<String, String>> query;
    /** Each query parameter's first value, by name: a request asks for several (authentication alone six). */
    private final Map<String, String> parameters;
    private final ReentrantLock writableLock = new ReentrantLock();
    private final Condition writable = writableLock.newCondition();
    private final Completion onComplete;
    private boolean responseStarted;
    private boolean responseDone;
    private boolean closeAfterResponse;
    private final long startNanos = System.nanoTime();
    private volatile String operation = "Unknown";
    /** An object's lookup made on the event loop before the request went to its thread (design note 71). */
    private volatile S3Namespace.Found keptLookup;
    private volatile int status;

    /** Told once when the exchange is over, and whether the connection can serve the next request. */
    interface Completion {
        void done(S3Exchange exchange, boolean connectionReusable);
    }

    S3Exchange(ChannelHandlerContext context, HttpRequest request, BodyStream body, String requestId, Completion onComplete) {
        this.context = context;
        this.request = request;
        this.body = body;
        this.requestId = requestId;
        this.onComplete = onComplete;
        String uri = request.uri();
        int question = uri.indexOf('?');
        this.rawPath = question < 0 ? uri : uri.substring(0, question);
        String decodedPath = rawPath;
        String encodingProblem = null;
        List<Map.Entry<String, String>> parameters = new ArrayList<>();
        try {
            decodedPath = Http.decodeStrict(rawPath, false);
            if (question >= 0) {
                for (String pair : uri.substring(question + 1).split("&")) {
                    if (pair.isEmpty()) {
                        continue;
                    }
                    int equals = pair.indexOf('=');
                    String name = equals < 0 ? pair : pair.substring(0, equals);
                    String value = equals < 0 ? "" : pair.substring(equals + 1);
                    parameters.add(new AbstractMap.SimpleImmutableEntry<>(Http.decodeStrict(name, true), Http.decodeStrict(value, true)));
                }
            }
        } catch (Http.BadEncodingException e) {
            encodingProblem = e.getMessage();
            parameters.clear();
        }
        this.path = decodedPath;
        this.encodingProblem = encodingProblem;
        this.query = List.copyOf(parameters);
        java.util.HashMap<String, String> byName = new java.util.HashMap<>();
        for (Map.Entry<String, String> parameter : this.query) {
            byName.putIfAbsent(parameter.getKey(), parameter.getValue());
        }
        this.parameters = byName;
    }

    String method() {
        return request.method().name();
    }

    /** Why the path or query is not UTF-8 once percent-decoded, or null when it is. */
    String encodingProblem() {
        return encodingProblem;
    }

    /** The decoded path, e.g. {@code /bucket/a b/c}. */
    String path() {
        return path;
    }

    List<Map.Entry<String, String>> query() {
        return query;
    }

    boolean hasParameter(String name) {
        return parameters.containsKey(name);
    }

    /** The first value of a query parameter, or null. */
    String parameter(String name) {
        return parameters.get(name);
    }

    HttpHeaders headers() {
        return request.headers();
    }

    String header(String name) {
        return request.headers().get(name);
    }

    /** All values of a header joined by commas, as SigV4 signs them. */
    String joinedHeader(String name) {
        List<String> values = request.headers().getAll(name);
        return values.isEmpty() ? null : String.join(",", values);
    }

    BodyStream body() {
        return body;
    }

    String requestId() {
        return requestId;
    }

    /** Names the S3 operation this request is (for metrics and logs). */
    void operation(String name) {
        operation = name;
    }

    String operation() {
        return operation;
    }

    /** Keeps the lookup of a GET that goes on on its own thread, for that thread's {@link #takeLookup}. */
    void keepLookup(S3Namespace.Found found) {
        keptLookup = found;
    }

    /** The lookup kept by {@link #keepLookup}, once; null if none. */
    S3Namespace.Found takeLookup() {
        S3Namespace.Found found = keptLookup;
        keptLookup = null;
        return found;
    }

    /** The HTTP status answered (0 if none was: the connection was cut first). */
    int status() {
        return status;
    }

    long elapsedNanos() {
        return System.nanoTime() - startNanos;
    }

    // ---- responses

    private HttpHeaders standard(HttpResponse response) {
        HttpHeaders headers = response.headers();
        headers.set("x-amz-request-id", requestId);
        headers.set(HttpHeaderNames.SERVER, "Plinth");
        headers.set(HttpHeaderNames.DATE, Http.date(System.currentTimeMillis()));
        if (bodyPending()) {
            // answered before the body ended (a refusal, often before a client that expects 100-continue
            // sent any of it): the connection closes after this response, and the client must be told,
            // or it sends its next request into a connection that is draining
            closeAfterResponse = true;
            headers.set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
        }
        return headers;
    }

    /** Whether the request has a body that has not all arrived. */
    private boolean bodyPending() {
        boolean declaresBody = HttpUtil.getContentLength(request, 0L) > 0 || HttpUtil.isTransferEncodingChunked(request);
        return declaresBody && !body.ended();
    }

    /** A whole response. {@code content} may be null (no body; HEAD answers keep their Content-Length). */
    void respond(int status, HttpHeaders extra, byte[] content) {
        respondBuffer(status, extra, content == null ? Unpooled.EMPTY_BUFFER : Unpooled.wrappedBuffer(content));
    }

    /**
     * A whole response whose body is {@code buffer} (this takes its reference): one write to the
     * event loop, where a streamed one takes three (head, body, end), each a task the event loop
     * may have to be woken for.
     */
    void respondBuffer(int status, HttpHeaders extra, ByteBuf buffer) {
        try {
            startCheck();
        } catch (RuntimeException e) {
            buffer.release();
            throw e;
        }
        this.status = status;
        DefaultFullHttpResponse response = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.valueOf(status), buffer);
        HttpHeaders headers = standard(response);
        if (extra != null) {
            headers.add(extra);
        }
        if (!headers.contains(HttpHeaderNames.CONTENT_LENGTH)) {
            headers.setInt(HttpHeaderNames.CONTENT_LENGTH, buffer.readableBytes());
        }
        finish(context.writeAndFlush(response));
    }

    void respondXml(int status, String xml) {
        io.netty.handler.codec.http.DefaultHttpHeaders headers = new io.netty.handler.codec.http.DefaultHttpHeaders();
        headers.set(HttpHeaderNames.CONTENT_TYPE, "application/xml");
        respond(status, headers, xml.getBytes(StandardCharsets.UTF_8));
    }

    void respondError(S3Exception error) {
        refuseIfWaited();
        if (responseStarted) {
            // the status line is out: all that is left is to cut the connection, so the client sees a short body
            closeAfterResponse = true;
            context.close();
            complete();
            return;
        }
        if (method().equals("HEAD")) {
            respond(error.error().httpStatus(), null, null);
            return;
        }
        respondXml(error.error().httpStatus(), Xml.error(error.error().code(), error.getMessage(), path, requestId));
    }

    /**
     * Answers nothing once something that was not to wait asked to ({@link NonBlocking#refused}):
     * whatever was computed after that (an error some layer made of the refusal) is not the answer.
     */
    private static void refuseIfWaited() {
        if (NonBlocking.refused()) {
            NonBlocking.check("an answer after a refused wait");
        }
    }

    /** Whether the status line of the answer is out (a failure can then only cut the connection). */
    boolean responseStarted() {
        return responseStarted;
    }

    /** Starts a streamed response; with {@code contentLength} < 0 it is chunked. */
    void startStream(int status, HttpHeaders extra, long contentLength) {
        startCheck();
        this.status = status;
        DefaultHttpResponse response = new DefaultHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.valueOf(status));
        HttpHeaders headers = standard(response);
        if (extra != null) {
            headers.add(extra);
        }
        if (contentLength >= 0) {
            HttpUtil.setContentLength(response, contentLength);
        } else {
            HttpUtil.setTransferEncodingChunked(response, true);
        }
        context.writeAndFlush(response);
    }

    /** Sends a piece of a streamed body (this takes the buffer's reference); waits while the channel is not writable. */
    void streamChunk(ByteBuf content) {
        try {
            awaitWritable();
        } catch (RuntimeException e) {
            content.release(); // the client went away or stopped reading: the piece goes nowhere
            throw e;
        }
        context.writeAndFlush(new DefaultHttpContent(content));
    }

    void endStream() {
        finish(context.writeAndFlush(LastHttpContent.EMPTY_LAST_CONTENT));
    }

    private void awaitWritable() {
        writableLock.lock();
        try {
            long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.MINUTES.toNanos(2);
            while (!context.channel().isWritable() && context.channel().isActive()) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    throw new S3Exception(S3Error.INTERNAL_ERROR, "the client stopped reading");
                }
                try {
                    writable.awaitNanos(Math.min(left, java.util.concurrent.TimeUnit.MILLISECONDS.toNanos(100)));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new S3Exception(S3Error.INTERNAL_ERROR, "interrupted");
                }
            }
            if (!context.channel().isActive()) {
                throw new S3Exception(S3Error.INTERNAL_ERROR, "the client went away");
            }
        } finally {
            writableLock.unlock();
        }
    }

    /** Called on the event loop when the channel's writability changes. */
    void writabilityChanged() {
        writableLock.lock();
        try {
            writable.signalAll();
        } finally {
            writableLock.unlock();
        }
    }

    private void startCheck() {
        refuseIfWaited();
        if (responseStarted) {
            throw new IllegalStateException("a response was already started for " + requestId);
        }
        responseStarted = true;
    }

    /**
     * Ends the exchange once {@code written} is out. Whether the connection may serve another
     * request is decided then, on the event loop, when every piece of this request that had
     * arrived has been delivered: a body the handler did not read to its end leaves the
     * connection mid-request, so the gateway closes it (see {@link S3Gateway}).
     */
    private void finish(io.netty.channel.ChannelFuture written) {
        boolean keepAlive = HttpUtil.isKeepAlive(request) && !closeAfterResponse;
        responseDone = true;
        written.addListener(future -> onComplete.done(this, future.isSuccess() && keepAlive && body.ended()));
    }

    /** Ends an exchange whose connection was cut. */
    private void complete() {
        if (!responseDone) {
            responseDone = true;
            onComplete.done(this, false);
        }
    }

    /** Makes sure the exchange ends (a handler that returned without responding is a bug, answered 500). */
    void ensureDone() {
        if (!responseStarted) {
            respondError(new S3Exception(S3Error.INTERNAL_ERROR, "no response"));
        } else if (!responseDone) {
            closeAfterResponse = true;
            context.close();
            complete();
        }
        body.close();
    }
}
