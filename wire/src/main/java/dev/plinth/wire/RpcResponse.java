package dev.plinth.wire;

import io.netty.buffer.ByteBuf;

/** A response message and its bulk data; close it to release the data. */
public record RpcResponse<R extends Record>(R message, ByteBuf data) implements AutoCloseable {
    @Override
    public void close() {
        if (data.refCnt() > 0) {
            data.release();
        }
    }
}
