package dev.plinth.wire;

import io.netty.buffer.ByteBuf;
import java.util.concurrent.CompletableFuture;

/**
 * Serves one request type. Called on a network thread: it must not block, so real work goes to
 * the service's own bounded executor. {@code data} (the frame's bulk data) is valid until the
 * returned future completes; retain it to keep it longer.
 */
@FunctionalInterface
public interface RpcHandler<Q extends Record> {
    CompletableFuture<Reply> handle(RequestContext context, Q request, ByteBuf data);
}
