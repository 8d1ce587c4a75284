package dev.plinth.wire;

import dev.plinth.common.ErrorCode;
import dev.plinth.common.PlinthException;
import io.netty.buffer.ByteBuf;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;

/** Routes each request type to the service that registered for it. Thread-safe. */
public final class RpcDispatcher {
    private final Map<Class<?>, RpcHandler<?>> handlers = new ConcurrentHashMap<>();

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
        if (handler == null) {
            return CompletableFuture.failedFuture(new PlinthException(ErrorCode.NOT_SUPPORTED,
                    "this node does not serve " + request.getClass().getSimpleName()));
        }
        try {
            return handler.handle(context, request, data);
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }
}
