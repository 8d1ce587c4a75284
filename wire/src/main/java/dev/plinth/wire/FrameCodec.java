package dev.plinth.wire;

import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPipeline;
import io.netty.handler.codec.LengthFieldBasedFrameDecoder;
import io.netty.handler.codec.MessageToMessageDecoder;
import java.util.List;

/** Pipeline pieces shared by server and client: length-prefixed framing and frame writes. */
final class FrameCodec {
    private FrameCodec() {}

    /**
     * Receive buffers that grow to 1 MiB: Netty's default stops at 64 KiB, which cuts every
     * 1 MiB data frame into 16+ reads. Not more than 1 MiB: that is the largest buffer Netty's
     * adaptive allocator pools; a larger one is a fresh direct allocation that the JDK zeroes and
     * the kernel faults in page by page, which cost ~10% of both cores in a sequential read
     * (client event loops, perf) when the maximum was 2 MiB.
     */
    static io.netty.channel.RecvByteBufAllocator receiveBuffers() {
        return new io.netty.channel.AdaptiveRecvByteBufAllocator(512, 64 * 1024, 1 << 20);
    }

    /** Reads at least this large are kept as they arrived rather than copied into the frame they belong to. */
    static final int COMPOSE_BYTES_MIN = 64 * 1024;

    /**
     * Gathers what the socket delivers into frames. Small reads are copied into one buffer
     * (Netty's usual merge: cheap, and small frames stay contiguous); a large read, or one that
     * joins a frame already being gathered from large reads, is added as a component of a
     * composite instead. Without that, every byte of a 1 MiB data frame was copied once more after
     * the kernel's receive copy: ~17% of both cores in a sequential read (client side) or write
     * (target side). Consumers read frame data through {@code nioBuffers}, {@code getBytes} or a
     * write to a channel, never assuming one contiguous buffer.
     */
    private static final io.netty.handler.codec.ByteToMessageDecoder.Cumulator LARGE_READS_KEPT = (alloc, cumulation, in) ->
            in.readableBytes() >= COMPOSE_BYTES_MIN || cumulation instanceof io.netty.buffer.CompositeByteBuf
                    ? io.netty.handler.codec.ByteToMessageDecoder.COMPOSITE_CUMULATOR.cumulate(alloc, cumulation, in)
                    : io.netty.handler.codec.ByteToMessageDecoder.MERGE_CUMULATOR.cumulate(alloc, cumulation, in);

    /**
     * {@code inProcess}: frames arrive as the sender's own buffers (in-JVM channels), so the decoder
     * always gathers them into a composite; over TCP, see {@link #LARGE_READS_KEPT}.
     */
    static void install(ChannelPipeline pipeline, long frameBytesMax, boolean inProcess) {
        LengthFieldBasedFrameDecoder framing = new LengthFieldBasedFrameDecoder((int) Math.min(Integer.MAX_VALUE, frameBytesMax), 0, 4, 0, 4, true);
        framing.setCumulator(inProcess ? io.netty.handler.codec.ByteToMessageDecoder.COMPOSITE_CUMULATOR : LARGE_READS_KEPT);
        pipeline.addLast("framing", framing);
        pipeline.addLast("frames", new MessageToMessageDecoder<ByteBuf>() {
            @Override
            protected void decode(ChannelHandlerContext context, ByteBuf body, List<Object> out) {
                out.add(Frame.parse(body.retain()));
            }
        });
    }

    /**
     * Writes one frame. Prefix and data are written in one event-loop task so that frames sent
     * from different threads never interleave on the socket.
     */
    static void write(Channel channel, int flags, int messageType, long correlationId, int timeoutMillis,
                      Record message, Object data, long dataLength) {
        var encoded = Protocol.encode(message);
        ByteBuf prefix = Frame.encodePrefix(channel.alloc(), flags, messageType, correlationId, timeoutMillis,
                encoded.array(), encoded.length(), dataLength);
        Runnable send = () -> {
            if (data == null) {
                channel.writeAndFlush(prefix, channel.voidPromise());
            } else {
                channel.write(prefix, channel.voidPromise());
                channel.writeAndFlush(data, channel.voidPromise());
            }
        };
        if (channel.eventLoop().inEventLoop()) {
            send.run();
        } else {
            channel.eventLoop().execute(send);
        }
    }
}
