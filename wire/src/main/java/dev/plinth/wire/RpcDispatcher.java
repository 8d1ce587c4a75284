package dev.plinth.wire;

import dev.plinth.common.ErrorCode;
import dev.plinth.common.PlinthException;
import io.netty.buffer.ByteBuf;
import io.prometheus.metrics.core.metrics.Counter;
import io.prometheus.metrics.core.metrics.Histogram;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;

/** Routes each request type to the service that registered for it, and counts and times each. Thread-safe. */
public final class RpcDispatcher {
    private final Map<Class<?>, RpcHandler<?>> handlers = new ConcurrentHashMap<>();
    private final Counter requests;
    private final Histogram duration;

    public RpcDispatcher() {
        this(Metrics.unexposed());
    }

    public RpcDispatcher(PrometheusRegistry registry) {
        this.requests = Metrics.counter(registry, "plinth_rpc_server_requests", "RPC requests served, by message and result code.",
                "message", "code");
        this.duration = Metrics.latency(registry, "plinth_rpc_server_request_duration_seconds",
                "Time from a decoded request to its reply, by message.", "message");
    }

    public <Q extends Record> void register(Class<Q> requestType, RpcHandler<Q> handler) {
        if (!Protocol.isRequest(requestType)) {
            throw new IllegalArgumentException("not a registered request: " + requestType);
        }
        if (handlers.putIfAbsent(requestType, handler) != null) {
            throw new IllegalStateException("two handlers for " + requestType.getSimpleName());
        }
    }

    @SuppressWarnings("unchecked")
    /** Runs the handler registered for the request's type; what the server does for each decoded frame. */
    public CompletableFuture<Reply> dispatch(RequestContext context, Record request, ByteBuf data) {
        RpcHandler<Record> handler = (RpcHandler<Record>) handlers.get(request.getClass());
        String message = request.getClass().getSimpleName();
        if (handler == null) {
            requests.labelValues(message, ErrorCode.NOT_SUPPORTED.name()).inc();
            return CompletableFuture.failedFuture(new PlinthException(ErrorCode.NOT_SUPPORTED, "this node does not serve " + message));
        }
        long start = System.nanoTime();
        CompletableFuture<Reply> reply;
        try {
            reply = handler.handle(context, request, data);
        } catch (RuntimeException e) {
            reply = CompletableFuture.failedFuture(e);
        }
        return reply.whenComplete((answer, failure) -> {
            duration.labelValues(message).observe((System.nanoTime() - start) / 1e9);
            requests.labelValues(message, failure == null ? "OK" : codeOf(failure)).inc();
        });
    }

    /**
     * Whether the reply to {@code request} is to be lost on its way, as a network may lose it,
     * after the request was carried out: the fault point {@code rpc.drop-reply}, once, for the
     * request type it names. Callers then see a timeout and retry, with the same request id.
     */
    static boolean dropsReplyTo(Record request) {
        return dev.plinth.common.FaultPoints.takeIfValue(dev.plinth.common.FaultPoints.RPC_DROP_REPLY, request.getClass().getSimpleName());
    }

    private static String codeOf(Throwable failure) {
        Throwable cause = failure instanceof java.util.concurrent.CompletionException && failure.getCause() != null ? failure.getCause() : failure;
        return cause instanceof PlinthException plinth ? plinth.code().name() : ErrorCode.INTERNAL.name();
    }
}
