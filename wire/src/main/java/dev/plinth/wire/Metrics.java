package dev.plinth.wire;

import io.prometheus.metrics.core.metrics.Counter;
import io.prometheus.metrics.core.metrics.Histogram;
import io.prometheus.metrics.model.registry.PrometheusRegistry;

/**
 * Conventions for Plinth's Prometheus metrics, in one place: every name starts with
 * {@code plinth_}, carries its unit ({@code _seconds}, {@code _bytes}) and counters end in
 * {@code _total} (added by the library); labels take values from small fixed sets (message and
 * operation names, target and MDT ids, status codes), never from paths, keys or client ids.
 * Each process has one registry, exposed at {@code /metrics} on its HTTP listener; a component
 * that is given none registers into one nobody reads.
 */
public final class Metrics {
    /** Upper bounds for latencies, 50 µs to 10 s: RPCs on one host take tens of µs, a large S3 PUT seconds. */
    public static final double[] LATENCY_SECONDS_BUCKETS = {0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
            0.1, 0.25, 0.5, 1, 2.5, 5, 10};

    private Metrics() {}

    /** A registry for a component that nobody exposes (tests, tools). */
    public static PrometheusRegistry unexposed() {
        return new PrometheusRegistry();
    }

    public static Counter counter(PrometheusRegistry registry, String name, String help, String... labelNames) {
        return Counter.builder().name(name).help(help).labelNames(labelNames).register(registry);
    }

    /** A latency histogram in seconds (classic buckets, which every Prometheus reads). */
    public static Histogram latency(PrometheusRegistry registry, String name, String help, String... labelNames) {
        return Histogram.builder().name(name).help(help).labelNames(labelNames).classicOnly().classicUpperBounds(LATENCY_SECONDS_BUCKETS)
                .register(registry);
    }
}
