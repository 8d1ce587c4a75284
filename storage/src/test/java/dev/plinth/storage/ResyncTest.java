package dev.plinth.storage;

import static org.assertj.core.api.Assertions.assertThat;

import dev.plinth.wire.messages.StorageMessages.ChunkEntry;
import dev.plinth.wire.messages.StorageMessages.ChunkId;
import dev.plinth.wire.messages.StorageMessages.ChunkList;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

class ResyncTest {
    /** A listing served from a sorted map in pages of {@code pageSize}, as ListChunks serves one. */
    private static Resync.Listing listing(TreeMap<ChunkId, Long> chunks, int pageSize) {
        return new Resync.Listing(after -> {
            var tail = after == null ? chunks : chunks.tailMap(after, false);
            List<ChunkEntry> page = tail.entrySet().stream().limit(pageSize + 1)
                    .map(e -> new ChunkEntry(e.getKey(), e.getValue(), 0)).toList();
            boolean truncated = page.size() > pageSize;
            return new ChunkList(truncated ? page.subList(0, pageSize) : page, truncated);
        });
    }

    @Test
    void walkingBothListingsCopiesWhatDiffersAndRemovesWhatTheSourceLacks() {
        Random random = new Random(5);
        TreeMap<ChunkId, Long> source = new TreeMap<>(ChunkStore.CHUNK_ORDER);
        TreeMap<ChunkId, Long> here = new TreeMap<>(ChunkStore.CHUNK_ORDER);
        List<ChunkId> expectCopied = new ArrayList<>();
        List<ChunkId> expectRemoved = new ArrayList<>();
        for (int i = 0; i < 3000; i++) {
            ChunkId chunk = new ChunkId(1 + random.nextInt(500) * 256L + random.nextInt(4), random.nextInt(2), random.nextInt(3));
            if (source.containsKey(chunk) || here.containsKey(chunk)) {
                continue;
            }
            switch (random.nextInt(4)) {
                case 0 -> { // same on both
                    source.put(chunk, 7L);
                    here.put(chunk, 7L);
                }
                case 1 -> { // newer at the source
                    source.put(chunk, 9L);
                    here.put(chunk, 7L);
                    expectCopied.add(chunk);
                }
                case 2 -> { // missing here
                    source.put(chunk, 7L);
                    expectCopied.add(chunk);
                }
                default -> { // gone at the source
                    here.put(chunk, 7L);
                    expectRemoved.add(chunk);
                }
            }
        }
        List<ChunkId> copied = new ArrayList<>();
        List<ChunkId> removed = new ArrayList<>();
        Resync.compare(listing(source, 100), listing(here, 37), copied::add, removed::add, () -> false);

        assertThat(copied).containsExactlyInAnyOrderElementsOf(expectCopied).isSortedAccordingTo(ChunkStore.CHUNK_ORDER);
        assertThat(removed).containsExactlyInAnyOrderElementsOf(expectRemoved);
    }
}
