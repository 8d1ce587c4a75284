package dev.plinth.client;

import io.netty.buffer.ByteBuf;

/** Where the bytes of a read go: copied into a caller's buffer, or collected as retained slices. */
interface ExtentSink {
    void bytes(ByteBuf source, int index, int length);

    void zeros(int length);
}
