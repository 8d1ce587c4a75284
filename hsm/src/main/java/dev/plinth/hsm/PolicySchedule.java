package dev.plinth.hsm;

import dev.plinth.client.PlinthClient;
import dev.plinth.common.Config;
import dev.plinth.common.Settings;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Evaluates the rules in {@code hsm.policy-file} every {@code hsm.policy-interval-millis}, the
 * file read again each time (an edit takes effect at the next run; a bad one is logged and that
 * run skipped). Nothing runs when the setting is empty.
 */
public final class PolicySchedule implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(PolicySchedule.class);
    private final ScheduledExecutorService executor;

    private PolicySchedule(ScheduledExecutorService executor) {
        this.executor = executor;
    }

    /** Starts the schedule where {@code hsm.policy-file} is set; null otherwise. */
    public static PolicySchedule startIfConfigured(PlinthClient client, Config config) {
        String file = config.get(Settings.HSM_POLICY_FILE);
        if (file.isEmpty()) {
            return null;
        }
        long interval = Math.max(1000, config.get(Settings.HSM_POLICY_INTERVAL_MILLIS));
        long rate = config.get(Settings.HSM_POLICY_SCAN_RATE);
        ScheduledExecutorService executor = Executors.newSingleThreadScheduledExecutor(Thread.ofPlatform().name("hsm-policy").daemon().factory());
        executor.scheduleWithFixedDelay(() -> runOnce(client, Path.of(file), rate), interval, interval, TimeUnit.MILLISECONDS);
        LOG.info("HSM policy {} runs every {} ms", file, interval);
        return new PolicySchedule(executor);
    }

    private static void runOnce(PlinthClient client, Path file, long rate) {
        try {
            PolicyRules rules = PolicyRules.parse(Files.readString(file));
            List<PolicyRun.RuleReport> reports = new PolicyRun(client, false, rate).run(rules);
            for (PolicyRun.RuleReport report : reports) {
                LOG.info("HSM policy line {}: {} files scanned, {} matched, actions {}, skipped {}", report.line, report.scannedFiles,
                        report.matchedFiles, report.actions.entrySet().stream().map(e -> e.getKey() + "=" + e.getValue()[0]).toList(),
                        report.skipped);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (Exception e) {
            LOG.warn("HSM policy {} not run: {}", file, e.getMessage());
        }
    }

    @Override
    public void close() {
        executor.shutdownNow();
    }
}
