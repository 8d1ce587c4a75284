package dev.plinth.storage;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.plinth.common.ErrorCode;
import dev.plinth.common.PlinthException;
import dev.plinth.wire.Reply;
import dev.plinth.wire.RequestContext;
import dev.plinth.wire.RpcDispatcher;
import dev.plinth.wire.messages.StorageMessages.ChunkId;
import dev.plinth.wire.messages.StorageMessages.ReadChunk;
import dev.plinth.wire.messages.MgmtMessages.ChainInfo;
import dev.plinth.wire.messages.MgmtMessages.ChainMember;
import dev.plinth.wire.messages.MgmtMessages.ClusterMap;
import dev.plinth.wire.messages.MgmtMessages.MemberState;
import dev.plinth.wire.messages.MgmtMessages.NodeInfo;
import dev.plinth.wire.messages.MgmtMessages.TargetInfo;
import dev.plinth.wire.messages.MgmtMessages.TargetState;
import io.netty.buffer.Unpooled;
import java.util.List;
import java.nio.file.Path;
import java.util.concurrent.CompletionException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class StorageServiceTest {
    /** A cluster of one target (1) in its own chain, as a lone node sees it. */
    private static final class OneTargetView implements ClusterView {
        private final ClusterMap map = new ClusterMap(1, List.of(new NodeInfo(1, "127.0.0.1:1", true)),
                List.of(new TargetInfo(1, 1, "t1", 0, 0, TargetState.ONLINE, 0)),
                List.of(new ChainInfo(1, 1, List.of(new ChainMember(1, MemberState.SERVING)))), List.of(), List.of(), List.of());

        @Override
        public ClusterMap map() {
            return map;
        }

        @Override
        public ClusterMap refresh() {
            return map;
        }

        @Override
        public boolean leaseValid() {
            return true;
        }

        @Override
        public dev.plinth.wire.RpcClient connectionTo(int targetId) {
            throw new UnsupportedOperationException("one target: nothing to forward to");
        }

        @Override
        public void reportUnreachable(ChainInfo chain, int fromTarget, int toTarget) {
            throw new UnsupportedOperationException("one target: no successor to lose");
        }
    }

    @TempDir
    Path directory;

    @Test
    void expiredRequestsAreAnsweredWithoutDiskWork() {
        try (StorageService service = new StorageService(2, new OneTargetView())) {
            service.addTarget(ChunkStore.open(directory.resolve("t1"), 1, 0));
            RpcDispatcher dispatcher = new RpcDispatcher();
            service.register(dispatcher);
            ReadChunk read = new ReadChunk(1, new ChunkId(7, 0, 0), 0, 4096, 1);

            Reply fresh = dispatcher.dispatch(new RequestContext(null, 0), read, Unpooled.EMPTY_BUFFER).join();
            assertThat(fresh.message()).isNotNull();

            RequestContext expired = new RequestContext(null, System.nanoTime() - 1_000_000);
            assertThatThrownBy(() -> dispatcher.dispatch(expired, read, Unpooled.EMPTY_BUFFER).join())
                    .isInstanceOf(CompletionException.class)
                    .cause().isInstanceOfSatisfying(PlinthException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.TIMED_OUT));

            ReadChunk unknownTarget = new ReadChunk(9, new ChunkId(7, 0, 0), 0, 4096, 9);
            assertThatThrownBy(() -> dispatcher.dispatch(new RequestContext(null, 0), unknownTarget, Unpooled.EMPTY_BUFFER).join())
                    .cause().isInstanceOfSatisfying(PlinthException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.STALE_HANDLE));
        }
    }
}
