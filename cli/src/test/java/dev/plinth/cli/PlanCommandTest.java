package dev.plinth.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.plinth.common.PlinthException;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class PlanCommandTest {
    @Test
    void quantitiesAsPeopleWriteThem() {
        assertThat(PlanCommand.count("70B")).isEqualTo(70e9);
        assertThat(PlanCommand.count("1.5M")).isEqualTo(1.5e6);
        assertThat(PlanCommand.bytes("1.12TB")).isEqualTo(1.12e12);
        assertThat(PlanCommand.bytes("64KiB")).isEqualTo(65536);
        assertThat(PlanCommand.rate("400Gbps")).isEqualTo(50e9);
        assertThat(PlanCommand.rate("200Gb/s")).isEqualTo(25e9);
        assertThat(PlanCommand.rate("2GB/s")).isEqualTo(2e9);
        assertThat(PlanCommand.rate("500MiB/s")).isEqualTo(500 * 1048576.0);
        assertThatThrownBy(() -> PlanCommand.rate("2GB")).isInstanceOf(PlinthException.class).hasMessageContaining("per second");
        assertThatThrownBy(() -> PlanCommand.bytes("ten")).isInstanceOf(PlinthException.class);
    }

    @Test
    void printsThePlanAndRefusesNonsenseAsAUsageError() {
        PrintStream out = System.out;
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        System.setOut(new PrintStream(captured, true, StandardCharsets.UTF_8));
        int status;
        try {
            status = Main.run("plan", "--gpus", "10000", "--read-per-gpu", "720MB/s", "--shard-size", "256MB", "--replicas", "1",
                    "--node-network", "400Gbps", "--node-disk-read", "112GB/s", "--json");
        } finally {
            System.setOut(out);
        }
        assertThat(status).isZero();
        String json = captured.toString(StandardCharsets.UTF_8);
        assertThat(json).contains("\"storage_nodes\":{\"count\":180,\"bound_by\":\"sustained reads\"");
        assertThat(Main.run("plan", "--gpus", "8", "--ec", "8+3", "--replicas", "2")).isEqualTo(Main.EXIT_USAGE);
        assertThat(Main.run("plan", "--gpus", "0")).isEqualTo(Main.EXIT_USAGE);
    }
}
