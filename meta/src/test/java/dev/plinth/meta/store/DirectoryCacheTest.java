package dev.plinth.meta.store;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

/** The generation rules that keep cached directory records equal to what each query's snapshot holds. */
class DirectoryCacheTest {
    private static final byte[] KEY = MetaKeys.id(MetaKeys.INODE, 7);

    @Test
    void aQueryStoresWhatItReadAndLaterQueriesUseIt() {
        DirectoryCache cache = new DirectoryCache();
        long query = cache.generation();
        cache.put(KEY, "v1", query);
        assertThat(cache.get(KEY, query)).isEqualTo("v1");
        assertThat(cache.get(KEY.clone(), cache.generation())).as("keys compare by content").isEqualTo("v1");
    }

    @Test
    void aCommitForgetsItsKeysBeforeItWrites() {
        DirectoryCache cache = new DirectoryCache();
        cache.put(KEY, "v1", cache.generation());
        cache.committing(List.of(KEY));
        assertThat(cache.get(KEY, cache.generation())).isNull();
        cache.committed();
        assertThat(cache.get(KEY, cache.generation())).isNull();
    }

    @Test
    void nothingIsStoredWhileACommitIsUnderWay() {
        DirectoryCache cache = new DirectoryCache();
        cache.committing(List.of(KEY));
        long during = cache.generation(); // a query whose snapshot may or may not hold the commit
        cache.put(KEY, "maybe-old", during);
        cache.committed();
        assertThat(cache.get(KEY, cache.generation())).isNull();
    }

    @Test
    void aQueryThatBeganBeforeACommitDoesNotStoreWhatItRead() {
        DirectoryCache cache = new DirectoryCache();
        long before = cache.generation(); // its snapshot predates the commit: it read the old record
        cache.committing(List.of(KEY));
        cache.committed();
        cache.put(KEY, "old", before);
        assertThat(cache.get(KEY, cache.generation())).isNull();
    }

    @Test
    void aQueryDoesNotUseARecordStoredAfterItBegan() {
        DirectoryCache cache = new DirectoryCache();
        long older = cache.generation(); // snapshot taken before the commit: it must read the old record itself
        cache.committing(List.of(KEY));
        cache.committed();
        long newer = cache.generation();
        cache.put(KEY, "new", newer);
        assertThat(cache.get(KEY, older)).isNull();
        assertThat(cache.get(KEY, newer)).isEqualTo("new");
    }

    @Test
    void commitsOfOtherKeysLeaveARecordInPlace() {
        DirectoryCache cache = new DirectoryCache();
        cache.put(KEY, "v1", cache.generation());
        cache.committing(List.of(MetaKeys.id(MetaKeys.INODE, 8)));
        cache.committed();
        assertThat(cache.get(KEY, cache.generation())).isEqualTo("v1");
    }

    @Test
    void aFullCacheStartsOver() {
        DirectoryCache cache = new DirectoryCache();
        for (int i = 0; i <= DirectoryCache.ENTRIES_MAX; i++) {
            cache.put(MetaKeys.id(MetaKeys.INODE, i), i, cache.generation());
        }
        assertThat(cache.size()).isEqualTo(1);
    }
}
