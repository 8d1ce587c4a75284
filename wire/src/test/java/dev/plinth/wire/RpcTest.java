package dev.plinth.wire;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.plinth.common.Config;
import dev.plinth.common.ErrorCode;
import dev.plinth.common.PlinthException;
import dev.plinth.common.codec.BinaryWriter;
import dev.plinth.common.codec.RecordCodec;
import dev.plinth.wire.messages.HandshakeMessages;
import dev.plinth.wire.messages.MgmtMessages.ClusterMap;
import dev.plinth.wire.messages.MgmtMessages.GetClusterMap;
import dev.plinth.wire.messages.StorageMessages.ChunkId;
import dev.plinth.wire.messages.StorageMessages.WriteChunk;
import dev.plinth.wire.messages.StorageMessages.WriteChunkResult;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.Socket;
import java.time.Duration;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class RpcTest {
    private final ClusterSecret secret = ClusterSecret.generate();
    private final Config config = Config.defaults();
    private RpcServer server;
    private HostPort address;
    private RpcConnections connections;

    @BeforeEach
    void start() {
        server = new RpcServer(dispatcher(), secret, 3, config);
        address = server.start(new HostPort("127.0.0.1", 0));
        connections = new RpcConnections(secret, "test", config);
    }

    private static RpcDispatcher dispatcher() {
        RpcDispatcher dispatcher = new RpcDispatcher();
        dispatcher.register(GetClusterMap.class, (context, request, data) ->
                CompletableFuture.completedFuture(Reply.of(new ClusterMap(7, List.of(), List.of(), List.of(), List.of(), List.of(), List.of()))));
        // Echoes the data's length and CRC, and sends the data back.
        dispatcher.register(WriteChunk.class, (context, request, data) -> {
            if (request.chunkOffset() < 0) {
                return CompletableFuture.failedFuture(new PlinthException(ErrorCode.INVALID_ARGUMENT, "negative offset"));
            }
            int crc = dev.plinth.common.Crc32cBlocks.crc(data.nioBuffer());
            return CompletableFuture.completedFuture(Reply.withData(new WriteChunkResult(crc, data.readableBytes()), data.retainedDuplicate()));
        });
        // a bug in a handler (inode 1), and an answer that comes later from another thread (inode 2) or never (inode 3)
        dispatcher.register(dev.plinth.wire.messages.StorageMessages.RemoveFile.class, (context, request, data) -> switch ((int) request.inodeId()) {
            case 1 -> throw new IllegalStateException("a bug");
            case 2 -> CompletableFuture.supplyAsync(() -> Reply.of(new dev.plinth.wire.messages.HandshakeMessages.Empty()),
                    CompletableFuture.delayedExecutor(50, java.util.concurrent.TimeUnit.MILLISECONDS));
            default -> new CompletableFuture<>();
        });
        return dispatcher;
    }

    @AfterEach
    void stop() {
        connections.close();
        server.close();
    }

    @Test
    void callsAndBulkData() {
        RpcClient client = connections.get(address);
        assertThat(client.serverNodeId()).isEqualTo(3);
        ClusterMap map = client.request(new GetClusterMap());
        assertThat(map.version()).isEqualTo(7);

        byte[] payload = new byte[3 << 20];
        new Random(1).nextBytes(payload);
        try (RpcResponse<WriteChunkResult> response = RpcClient.await(client.callAsync(
                WriteChunk.fromClient(1, new ChunkId(1, 0, 0), 0, List.of(), 1, 1), Unpooled.wrappedBuffer(payload), Duration.ofSeconds(10)))) {
            assertThat(response.message().chunkLength()).isEqualTo(payload.length);
            byte[] back = new byte[response.data().readableBytes()];
            response.data().readBytes(back);
            assertThat(back).isEqualTo(payload);
        }
    }

    /**
     * Many calls in flight at once, small and large mixed, so that frames start and end anywhere
     * in the socket's reads: the decoder copies small reads into one buffer and keeps large ones
     * as they arrived (FrameCodec.LARGE_READS_KEPT), on both sides. Every byte must come back.
     */
    @Test
    void mixedSizesInFlightArriveIntact() {
        RpcClient client = connections.get(address);
        long seed = System.nanoTime();
        Random random = new Random(seed);
        List<byte[]> payloads = new java.util.ArrayList<>();
        List<CompletableFuture<RpcResponse<WriteChunkResult>>> calls = new java.util.ArrayList<>();
        for (int i = 0; i < 60; i++) {
            int size = switch (random.nextInt(3)) {
                case 0 -> random.nextInt(200);
                case 1 -> 1_000 + random.nextInt(80_000);
                default -> (1 << 20) + random.nextInt(2 << 20);
            };
            byte[] payload = new byte[size];
            random.nextBytes(payload);
            payloads.add(payload);
            calls.add(client.callAsync(WriteChunk.fromClient(1, new ChunkId(1, 0, 0), 0, List.of(), 1, 1),
                    Unpooled.wrappedBuffer(payload), Duration.ofSeconds(30)));
        }
        for (int i = 0; i < calls.size(); i++) {
            byte[] payload = payloads.get(i);
            try (RpcResponse<WriteChunkResult> response = RpcClient.await(calls.get(i))) {
                assertThat(response.message().chunkLength()).as("seed %d call %d", seed, i).isEqualTo(payload.length);
                assertThat(response.message().chunkVersion()).as("seed %d call %d: CRC the server saw", seed, i)
                        .isEqualTo(dev.plinth.common.Crc32cBlocks.crc(java.nio.ByteBuffer.wrap(payload)));
                byte[] back = new byte[response.data().readableBytes()];
                response.data().readBytes(back);
                assertThat(back).as("seed %d call %d", seed, i).isEqualTo(payload);
            }
        }
    }

    @Test
    void typedErrorsReachTheCaller() {
        RpcClient client = connections.get(address);
        assertThatThrownBy(() -> client.request(WriteChunk.fromClient(1, new ChunkId(1, 0, 0), -1, List.of(), 1, 1)))
                .isInstanceOfSatisfying(PlinthException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.INVALID_ARGUMENT));
        // a registered type that this node does not serve
        assertThatThrownBy(() -> client.request(new dev.plinth.wire.messages.StorageMessages.SyncFile(1, 1)))
                .isInstanceOfSatisfying(PlinthException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.NOT_SUPPORTED));
        assertThat(client.<ClusterMap>request(new GetClusterMap()).version()).isEqualTo(7);
    }

    /**
     * A client in the server's JVM calls its dispatcher directly; one elsewhere goes over TCP. Both
     * must see the same answers, data, errors and timeouts.
     */
    @Test
    void directCallsAnswerAsTcpCallsDo() {
        try (RpcConnections overTcp = new RpcConnections(secret, "tcp", config.with("rpc.in-process", "false"))) {
            List<String> direct = answers(connections.get(address));
            List<String> tcp = answers(overTcp.get(address));
            assertThat(direct).isEqualTo(tcp);
            assertThat(direct).contains("INVALID_ARGUMENT: negative offset", "INTERNAL: java.lang.IllegalStateException: a bug", "Empty[]",
                    "TIMED_OUT", "NOT_SUPPORTED: this node does not serve SyncFile");
        }
    }

    private static List<String> answers(RpcClient client) {
        List<String> answers = new java.util.ArrayList<>();
        java.util.function.Consumer<java.util.function.Supplier<Object>> record = call -> {
            try {
                answers.add(String.valueOf(call.get()));
            } catch (PlinthException e) {
                // a timeout's message names the address, which differs between the two paths
                answers.add(e.code() == ErrorCode.TIMED_OUT ? e.code().name() : e.code().name() + ": " + e.detail());
            }
        };
        record.accept(() -> client.<ClusterMap>request(new GetClusterMap()));
        byte[] payload = new byte[100_000];
        new Random(2).nextBytes(payload);
        record.accept(() -> {
            try (RpcResponse<WriteChunkResult> response = RpcClient.await(client.callAsync(
                    WriteChunk.fromClient(1, new ChunkId(1, 0, 0), 0, List.of(), 1, 1), Unpooled.wrappedBuffer(payload), Duration.ofSeconds(10)))) {
                byte[] back = new byte[response.data().readableBytes()];
                response.data().readBytes(back);
                return response.message() + " " + java.util.Arrays.equals(back, payload);
            }
        });
        record.accept(() -> client.request(WriteChunk.fromClient(1, new ChunkId(1, 0, 0), -1, List.of(), 1, 1)));
        record.accept(() -> client.request(new dev.plinth.wire.messages.StorageMessages.RemoveFile(1, 1)));
        record.accept(() -> client.request(new dev.plinth.wire.messages.StorageMessages.RemoveFile(1, 2)));
        record.accept(() -> client.request(new dev.plinth.wire.messages.StorageMessages.RemoveFile(1, 3), Duration.ofMillis(200)));
        record.accept(() -> client.request(new dev.plinth.wire.messages.StorageMessages.SyncFile(1, 1)));
        return answers;
    }

    @Test
    void wrongSecretIsRefused() {
        try (RpcConnections stranger = new RpcConnections(ClusterSecret.generate(), "stranger", config)) {
            assertThatThrownBy(() -> stranger.get(address)).isInstanceOfSatisfying(PlinthException.class,
                    e -> assertThat(e.code()).isEqualTo(ErrorCode.AUTHENTICATION_FAILED));
        }
    }

    @Test
    void hostileFramesGetErrorsAndServerKeepsServing() throws IOException {
        // bad magic, wrong version, huge length, short frame, unknown type before auth, request before auth
        assertThat(rawExchange(frame(0x1234, 1, 1, 1, new byte[0]))).isEqualTo(ErrorCode.PROTOCOL_ERROR);
        assertThat(rawExchange(frame(Frame.MAGIC, 9, 1, 1, new byte[0]))).isEqualTo(ErrorCode.VERSION_MISMATCH);
        assertThat(rawExchange(new byte[] {0x7f, (byte) 0xff, (byte) 0xff, (byte) 0xff, 1, 2, 3})).isEqualTo(ErrorCode.PROTOCOL_ERROR);
        assertThat(rawExchange(new byte[] {0, 0, 0, 3, 0x50, 0x4c, 1})).isEqualTo(ErrorCode.PROTOCOL_ERROR);
        assertThat(rawExchange(frame(Frame.MAGIC, 1, 9999, 1, new byte[0]))).isEqualTo(ErrorCode.NOT_SUPPORTED);
        assertThat(rawExchange(frame(Frame.MAGIC, 1, 10, 1, RecordCodec.encode(new GetClusterMap()))))
                .isEqualTo(ErrorCode.AUTHENTICATION_FAILED);
        // random garbage of random lengths
        Random random = new Random(5);
        for (int i = 0; i < 50; i++) {
            byte[] noise = new byte[1 + random.nextInt(100)];
            random.nextBytes(noise);
            try (Socket socket = new Socket("127.0.0.1", address.port())) {
                socket.getOutputStream().write(noise);
            }
        }
        // and a properly authenticated client still works
        assertThat(connections.get(address).<ClusterMap>request(new GetClusterMap()).version()).isEqualTo(7);
    }

    /**
     * A server of its own with a short handshake timeout: the shared one keeps the default, since
     * a real handshake on a loaded two-core machine took longer than 300 ms (a flaky failure).
     */
    @Test
    void silentConnectionsAreClosedAfterTheHandshakeTimeout() throws IOException {
        try (RpcServer impatient = new RpcServer(dispatcher(), secret, 4, config.with("rpc.handshake-timeout-millis", "1000"))) {
            HostPort impatientAddress = impatient.start(new HostPort("127.0.0.1", 0));
            try (Socket socket = new Socket("127.0.0.1", impatientAddress.port())) {
                socket.setSoTimeout(10_000); // a read that is not ended by the server's close fails with a timeout
                assertThat(socket.getInputStream().read()).isEqualTo(-1); // closed by the server, nothing sent
            }
            // authenticated connections are not affected
            RpcClient client = connections.get(impatientAddress);
            try {
                Thread.sleep(1_500);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            assertThat(client.<ClusterMap>request(new GetClusterMap()).version()).isEqualTo(7);
        }
    }

    @Test
    void malformedHeaderAfterAuthenticationKeepsConnection() throws IOException {
        try (Socket socket = new Socket("127.0.0.1", address.port())) {
            DataOutputStream out = new DataOutputStream(socket.getOutputStream());
            DataInputStream in = new DataInputStream(socket.getInputStream());
            byte[] clientNonce = new byte[16];
            out.write(frame(Frame.MAGIC, 1, 1, 1, RecordCodec.encode(new HandshakeMessages.Hello(1, "raw", clientNonce))));
            HandshakeMessages.Challenge challenge = RecordCodec.decode(HandshakeMessages.Challenge.class, readFrameHeader(in));
            out.write(frame(Frame.MAGIC, 1, 2, 2, RecordCodec.encode(new HandshakeMessages.Authenticate(
                    secret.proof("client", challenge.serverNonce())))));
            RecordCodec.decode(HandshakeMessages.Welcome.class, readFrameHeader(in));
            // a WriteChunk header cut short
            byte[] header = RecordCodec.encode(WriteChunk.fromClient(1, new ChunkId(1, 0, 0), 0, List.of(), 1, 1));
            out.write(frame(Frame.MAGIC, 1, 20, 3, java.util.Arrays.copyOf(header, header.length - 3)));
            HandshakeMessages.ErrorReply error = RecordCodec.decode(HandshakeMessages.ErrorReply.class, readFrameHeader(in));
            assertThat(ErrorCode.fromWireCode(error.code())).isEqualTo(ErrorCode.PROTOCOL_ERROR);
            // same connection, valid request
            out.write(frame(Frame.MAGIC, 1, 10, 4, RecordCodec.encode(new GetClusterMap())));
            assertThat(RecordCodec.decode(ClusterMap.class, readFrameHeader(in)).version()).isEqualTo(7);
        }
    }

    private ErrorCode rawExchange(byte[] bytes) throws IOException {
        try (Socket socket = new Socket("127.0.0.1", address.port())) {
            socket.setSoTimeout(5000);
            socket.getOutputStream().write(bytes);
            DataInputStream in = new DataInputStream(socket.getInputStream());
            HandshakeMessages.ErrorReply error = RecordCodec.decode(HandshakeMessages.ErrorReply.class, readFrameHeader(in));
            return ErrorCode.fromWireCode(error.code());
        }
    }

    private static byte[] readFrameHeader(DataInputStream in) throws IOException {
        int length = in.readInt();
        byte[] body = new byte[length];
        in.readFully(body);
        ByteBuf buffer = Unpooled.wrappedBuffer(body);
        buffer.skipBytes(Frame.FIXED_BYTES - 4);
        int headerLength = buffer.readInt();
        byte[] header = new byte[headerLength];
        buffer.readBytes(header);
        return header;
    }

    private static byte[] frame(int magic, int version, int type, long correlationId, byte[] header) {
        BinaryWriter writer = new BinaryWriter(64, 1 << 20);
        writer.writeInt(Frame.FIXED_BYTES + header.length);
        writer.writeByte(magic >>> 8);
        writer.writeByte(magic);
        writer.writeByte(version);
        writer.writeByte(0);
        writer.writeInt(type);
        writer.writeLong(correlationId);
        writer.writeInt(1000);
        writer.writeInt(header.length);
        writer.writeRaw(header, 0, header.length);
        return writer.toByteArray();
    }
}
