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
import io.netty.buffer.Unpooled;
import java.nio.file.Path;
import java.util.concurrent.CompletionException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class StorageServiceTest {
    @TempDir
    Path directory;

    @Test
    void expiredRequestsAreAnsweredWithoutDiskWork() {
        try (StorageService service = new StorageService(2)) {
            service.addTarget(ChunkStore.open(directory.resolve("t1"), 1, 0));
            RpcDispatcher dispatcher = new RpcDispatcher();
            service.register(dispatcher);
            ReadChunk read = new ReadChunk(1, new ChunkId(7, 0, 0), 0, 4096);

            Reply fresh = dispatcher.dispatch(new RequestContext(null, 0), read, Unpooled.EMPTY_BUFFER).join();
            assertThat(fresh.message()).isNotNull();

            RequestContext expired = new RequestContext(null, System.nanoTime() - 1_000_000);
            assertThatThrownBy(() -> dispatcher.dispatch(expired, read, Unpooled.EMPTY_BUFFER).join())
                    .isInstanceOf(CompletionException.class)
                    .cause().isInstanceOfSatisfying(PlinthException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.TIMED_OUT));

            ReadChunk unknownTarget = new ReadChunk(9, new ChunkId(7, 0, 0), 0, 4096);
            assertThatThrownBy(() -> dispatcher.dispatch(new RequestContext(null, 0), unknownTarget, Unpooled.EMPTY_BUFFER).join())
                    .cause().isInstanceOfSatisfying(PlinthException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.STALE_HANDLE));
        }
    }
}
