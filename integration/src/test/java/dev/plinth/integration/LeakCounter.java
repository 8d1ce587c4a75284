package dev.plinth.integration;

import io.netty.buffer.PooledByteBufAllocator;
import io.netty.util.ResourceLeakDetector;
import io.netty.util.ResourceLeakDetectorFactory;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Counts Netty buffer leaks (the tests run with paranoid leak detection) so that a test can fail
 * on them instead of a log line nobody reads. Leaks are found when the garbage collector frees an
 * unreleased buffer; {@link #collect()} provokes that.
 */
final class LeakCounter {
    static final AtomicInteger LEAKS = new AtomicInteger();
    static final StringBuffer REPORTS = new StringBuffer();

    static {
        ResourceLeakDetectorFactory.setResourceLeakDetectorFactory(new ResourceLeakDetectorFactory() {
            @Override
            public <T> ResourceLeakDetector<T> newResourceLeakDetector(Class<T> resource, int samplingInterval, long maxActive) {
                return new ResourceLeakDetector<>(resource, samplingInterval) {
                    @Override
                    protected void reportTracedLeak(String resourceType, String records) {
                        LEAKS.incrementAndGet();
                        REPORTS.append(records).append('\n');
                    }

                    @Override
                    protected void reportUntracedLeak(String resourceType) {
                        LEAKS.incrementAndGet();
                    }
                };
            }
        });
    }

    private LeakCounter() {}

    /** Runs the collector and allocates, so that detectors report what was freed unreleased. */
    static int collect() {
        for (int round = 0; round < 3; round++) {
            System.gc();
            try {
                Thread.sleep(100);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            PooledByteBufAllocator.DEFAULT.directBuffer(64).release();
            PooledByteBufAllocator.DEFAULT.heapBuffer(64).release();
        }
        return LEAKS.get();
    }
}
