package dev.plinth.meta.store;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

/** The generation rules that keep cached records equal to what each query's snapshot holds, and the cache's bound. */
class RecordCacheTest {
    private static final byte[] KEY = MetaKeys.id(MetaKeys.INODE, 7);
    private static final long ONE_MIB = 1 << 20;

    @Test
    void aQueryStoresWhatItReadAndLaterQueriesUseIt() {
        RecordCache cache = new RecordCache(ONE_MIB);
        long query = cache.generation();
        cache.put(KEY, "v1", 100, query);
        assertThat(cache.get(KEY, query)).isEqualTo("v1");
        assertThat(cache.get(KEY.clone(), cache.generation())).as("keys compare by content").isEqualTo("v1");
        assertThat(cache.hits()).isEqualTo(2);
    }

    @Test
    void anAbsentKeyIsRememberedAsAbsentUntilACommitWritesIt() {
        RecordCache cache = new RecordCache(ONE_MIB);
        cache.put(KEY, RecordCache.ABSENT, 0, cache.generation());
        assertThat(cache.get(KEY, cache.generation())).isSameAs(RecordCache.ABSENT);
        cache.committing(List.of(KEY));
        cache.committed();
        assertThat(cache.get(KEY, cache.generation())).isNull();
    }

    @Test
    void aCommitForgetsItsKeysBeforeItWrites() {
        RecordCache cache = new RecordCache(ONE_MIB);
        cache.put(KEY, "v1", 100, cache.generation());
        cache.committing(List.of(KEY));
        assertThat(cache.get(KEY, cache.generation())).isNull();
        cache.committed();
        assertThat(cache.get(KEY, cache.generation())).isNull();
        assertThat(cache.bytes()).isZero();
    }

    @Test
    void nothingIsStoredWhileACommitIsUnderWay() {
        RecordCache cache = new RecordCache(ONE_MIB);
        cache.committing(List.of(KEY));
        long during = cache.generation(); // a query whose snapshot may or may not hold the commit
        cache.put(KEY, "maybe-old", 100, during);
        cache.committed();
        assertThat(cache.get(KEY, cache.generation())).isNull();
    }

    @Test
    void aQueryThatBeganBeforeACommitDoesNotStoreWhatItRead() {
        RecordCache cache = new RecordCache(ONE_MIB);
        long before = cache.generation(); // its snapshot predates the commit: it read the old record
        cache.committing(List.of(KEY));
        cache.committed();
        cache.put(KEY, "old", 100, before);
        assertThat(cache.get(KEY, cache.generation())).isNull();
    }

    @Test
    void aQueryDoesNotUseARecordStoredAfterItBegan() {
        RecordCache cache = new RecordCache(ONE_MIB);
        long older = cache.generation(); // snapshot taken before the commit: it must read the old record itself
        cache.committing(List.of(KEY));
        cache.committed();
        long newer = cache.generation();
        cache.put(KEY, "new", 100, newer);
        assertThat(cache.get(KEY, older)).isNull();
        assertThat(cache.get(KEY, newer)).isEqualTo("new");
    }

    @Test
    void commitsOfOtherKeysLeaveARecordInPlace() {
        RecordCache cache = new RecordCache(ONE_MIB);
        cache.put(KEY, "v1", 100, cache.generation());
        cache.committing(List.of(MetaKeys.id(MetaKeys.INODE, 8)));
        cache.committed();
        assertThat(cache.get(KEY, cache.generation())).isEqualTo("v1");
    }

    @Test
    void theCacheHoldsAtMostItsBudgetAndKeepsWhatIsReadAgain() {
        RecordCache cache = new RecordCache(ONE_MIB);
        cache.put(KEY, "hot", 1000, cache.generation());
        int records = 0;
        for (long id = 100; id < 10_100; id++) { // ~11 MiB of records through a 1 MiB cache
            cache.put(MetaKeys.id(MetaKeys.INODE, id), id, 1000, cache.generation());
            records++;
            assertThat(cache.bytes()).isLessThanOrEqualTo(ONE_MIB);
            if (id % 100 == 0) {
                assertThat(cache.get(KEY, cache.generation())).as("read every 100 records, after %d", records).isEqualTo("hot");
            }
        }
        assertThat(cache.get(MetaKeys.id(MetaKeys.INODE, 100), cache.generation())).as("read once, long ago").isNull();
        assertThat(cache.get(MetaKeys.id(MetaKeys.INODE, 10_099), cache.generation())).isEqualTo(10_099L);
        assertThat(cache.size()).isLessThan(1200);
    }

    @Test
    void aCommitForgetsARecordInTheOlderHalfToo() {
        RecordCache cache = new RecordCache(8 * 1024);
        cache.put(KEY, "v1", 1000, cache.generation());
        for (long id = 100; id < 103; id++) { // the next record starts a new recent half: KEY is in the older one
            cache.put(MetaKeys.id(MetaKeys.INODE, id), id, 1000, cache.generation());
        }
        cache.committing(List.of(KEY));
        cache.committed();
        assertThat(cache.get(KEY, cache.generation())).as("not moved back from the older half").isNull();
    }

    @Test
    void aCacheOfNoBytesKeepsNothing() {
        RecordCache cache = new RecordCache(0);
        cache.put(KEY, "v1", 0, cache.generation());
        assertThat(cache.get(KEY, cache.generation())).isNull();
        assertThat(cache.size()).isZero();
    }
}
