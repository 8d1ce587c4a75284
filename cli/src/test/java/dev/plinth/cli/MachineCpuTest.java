package dev.plinth.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import org.junit.jupiter.api.Test;

class MachineCpuTest {
    @Test
    void busyIdleAndStolenTimeFromTheSummaryLine() {
        // user nice system idle iowait irq softirq steal guest guest_nice
        MachineCpu cpu = MachineCpu.parse(List.of("cpu  100 5 50 800 20 3 2 10 0 0", "cpu0 50 2 25 400 10 1 1 5 0 0",
                "cpu1 50 3 25 400 10 2 1 5 0 0", "intr 12345", "ctxt 999"));
        assertThat(cpu).isEqualTo(new MachineCpu(160, 820, 990, 2));
    }

    @Test
    void corePerGibFromTheBusyShareOfTheInterval() {
        MachineCpu before = new MachineCpu(1000, 1000, 2000, 2);
        // of 200 ticks, 150 busy and 50 idle: 3/4 of 2 CPUs over 2 s is 3 core-seconds, for 2 GiB
        MachineCpu after = new MachineCpu(1150, 1050, 2200, 2);
        assertThat(MachineCpu.per(before, after, 2L << 30, 2.0)).isEqualTo("; this machine 1.50 core-s per GiB, 25% idle");
    }

    @Test
    void nothingWhereASnapshotIsMissingOrNoTimePassed() {
        MachineCpu cpu = new MachineCpu(1, 1, 2, 1);
        assertThat(MachineCpu.per(null, cpu, 1 << 30, 1)).isEmpty();
        assertThat(MachineCpu.per(cpu, null, 1 << 30, 1)).isEmpty();
        assertThat(MachineCpu.per(cpu, cpu, 1 << 30, 1)).isEmpty();
        assertThatThrownBy(() -> MachineCpu.parse(List.of("intr 1"))).isInstanceOf(IllegalArgumentException.class);
    }
}
