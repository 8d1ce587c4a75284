package dev.plinth.wire;

import io.netty.channel.EventLoopGroup;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.ServerChannel;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.epoll.EpollSocketChannel;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;

/** Picks epoll where the native transport loads (Linux), NIO elsewhere. */
public final class Transport {
    static {
        NettyDefaults.apply(); // for library users whose process did not start in our Main
    }

    private Transport() {}

    public static EventLoopGroup newGroup(int threads) {
        IoHandlerFactory factory = Epoll.isAvailable() ? EpollIoHandler.newFactory() : NioIoHandler.newFactory();
        return new MultiThreadIoEventLoopGroup(threads, factory);
    }

    /** Event loops for in-JVM channels (they cannot share epoll's loops). */
    static EventLoopGroup newInProcessGroup(int threads) {
        return new MultiThreadIoEventLoopGroup(threads, io.netty.channel.local.LocalIoHandler.newFactory());
    }

    public static Class<? extends ServerChannel> serverChannel() {
        return Epoll.isAvailable() ? EpollServerSocketChannel.class : NioServerSocketChannel.class;
    }

    static Class<? extends SocketChannel> clientChannel() {
        return Epoll.isAvailable() ? EpollSocketChannel.class : NioSocketChannel.class;
    }
}
