package dev.plinth.common.sizing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.plinth.common.PlinthException;
import dev.plinth.common.sizing.SizingModel.NodeType;
import dev.plinth.common.sizing.SizingModel.Plan;
import dev.plinth.common.sizing.SizingModel.Redundancy;
import dev.plinth.common.sizing.SizingModel.Workload;
import org.assertj.core.data.Percentage;
import org.junit.jupiter.api.Test;

/** The model against published systems and the arithmetic everyone quotes (docs/sizing.md says where each figure comes from). */
class SizingModelTest {
    private static final double GB = 1e9;
    private static final double TB = 1e12;
    private static final double TIB = Math.pow(2, 40);
    private static final double GBIT = 1e9 / 8;

    /** A 70B-parameter model trained with Adam in mixed precision keeps about 16 bytes per parameter: 1.12 TB per checkpoint. */
    @Test
    void aSeventyBillionParameterCheckpointIsAboutATerabyte() {
        Workload workload = workload(1024, 70e9, 16, 600, 60);
        Plan plan = SizingModel.plan(workload, node(14 * GB, 10 * GB, 2 * 200 * GBIT, 100 * TB, 50_000), Redundancy.replicated(3), 1.5, 200 * GBIT);
        assertThat(plan.checkpointBytes()).isCloseTo(1.12 * TB, Percentage.withPercentage(1));
        assertThat(plan.burstWriteBytesPerSecond()).isCloseTo(1.12 * TB / 60, Percentage.withPercentage(1));
        // three replicas: every byte reaches three nodes, so a node absorbs a third of its disks' or network's rate
        assertThat(plan.storageNodes().boundBy()).isEqualTo("checkpoint burst writes");
        assertThat(plan.storageNodes().nodes()).isEqualTo((int) Math.ceil(1.12 * TB / 60 / (10 * GB / 3)));
    }

    /**
     * DeepSeek's 3FS: 180 storage nodes, each with 2 x 200 Gbps InfiniBand and 16 PCIe 4.0 NVMe
     * drives, read at about 6.6 TiB/s in aggregate. The network binds (the drives read far more);
     * at the default 0.8 of line rate the model gives the same figure, and its plan for that read
     * rate asks for about as many nodes.
     */
    @Test
    void threeFsReadRateFromItsNodeFigures() {
        NodeType node = node(16 * 7 * GB, 16 * 5 * GB, 2 * 200 * GBIT, 16 * 14 * TIB, 100_000);
        double aggregate = SizingModel.aggregateReadBytesPerSecond(180, node);
        assertThat(aggregate / TIB).isCloseTo(6.6, Percentage.withPercentage(10));
        double perGpu = 6.6 * TIB / 10_000;
        Workload reads = new Workload(10_000, 0, 0, 3600, 60, 0, perGpu, 1 << 20, 256 << 20, 0, 0, 0);
        Plan plan = SizingModel.plan(reads, node, Redundancy.replicated(1), 1.5, 200 * GBIT);
        assertThat(plan.storageNodes().boundBy()).isEqualTo("sustained reads");
        assertThat(plan.storageNodes().nodes()).isBetween(170, 190);
    }

    /**
     * NERSC Perlmutter's scratch file system (Lustre, 2021): 274 OSSes, each on one 200 Gb/s
     * Slingshot link, over 5 TB/s in aggregate. The model with those links gives that order.
     */
    @Test
    void perlmutterLustreBandwidthFromItsNodeFigures() {
        NodeType oss = node(12 * 3.5 * GB, 12 * 2 * GB, 200 * GBIT, 128 * TB, 50_000);
        double aggregate = SizingModel.aggregateReadBytesPerSecond(274, oss);
        assertThat(aggregate).isBetween(5 * TB, 5 * TB * 1.5);
    }

    @Test
    void eachCountNamesWhatBindsIt() {
        NodeType node = node(10 * GB, 5 * GB, 100 * GBIT, 100 * TB, 20_000);
        // a small job with a large dataset: capacity decides
        Workload big = new Workload(64, 1e9, 16, 3600, 60, 5_000 * TB, 0.01 * GB, 100_000, 0, 2, 10, 0);
        Plan plan = SizingModel.plan(big, node, Redundancy.erasureCoded(8, 3), 1.5, 100 * GBIT);
        assertThat(plan.storageNodes().boundBy()).isEqualTo("hot capacity");
        assertThat(plan.hotBytes()).isCloseTo((5_000 * TB + 2 * 16e9) * 11 / 8, Percentage.withPercentage(0.01));
        assertThat(plan.coldBytes()).isCloseTo((5_000 * TB + 10 * 16e9) * 1.5, Percentage.withPercentage(0.01));
        // individual 100 kB samples at 640 MB/s: 6,400 files a second, three operations each, plus the checkpoint's files
        assertThat(plan.metadataOperationsPerSecond()).isCloseTo(6_400 * 3 + 64 * 2 / 60.0, Percentage.withPercentage(0.01));
        assertThat(plan.mdts().nodes()).isEqualTo(1);
        assertThat(plan.gateways().nodes()).isZero();
        // a tiny one: the stripe width is the floor
        Workload tiny = new Workload(8, 1e6, 16, 3600, 60, 1 * GB, 0.001 * GB, 1 << 20, 0, 1, 1, 1 * GB);
        Plan small = SizingModel.plan(tiny, node, Redundancy.erasureCoded(8, 3), 1.5, 100 * GBIT);
        assertThat(small.storageNodes().nodes()).isEqualTo(11);
        assertThat(small.storageNodes().boundBy()).isEqualTo("the stripe width (EC 8+3)");
        assertThat(small.gateways().nodes()).isEqualTo(1);
        // many small files read fast: the MDTs multiply
        Workload smallFiles = new Workload(4096, 1e9, 16, 3600, 60, 100 * TB, 0.05 * GB, 100_000, 0, 1, 1, 0);
        assertThat(SizingModel.plan(smallFiles, node, Redundancy.replicated(2), 1.5, 100 * GBIT).mdts().nodes()).isEqualTo(
                (int) Math.ceil((4096 * 0.05 * GB / 100_000 * 3 + 4096 * 2 / 60.0) / 20_000));
    }

    @Test
    void nonsenseIsRefused() {
        assertThatThrownBy(() -> new Workload(0, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0)).isInstanceOf(PlinthException.class).hasMessageContaining("GPUs");
        assertThatThrownBy(() -> new Redundancy(2, 8, 3)).isInstanceOf(PlinthException.class);
        assertThatThrownBy(() -> new NodeType(1, 1, 1, 1, 1, 1.5)).isInstanceOf(PlinthException.class);
    }

    private static Workload workload(int gpus, double parameters, double bytesPerParameter, double intervalSeconds, double stallSeconds) {
        return new Workload(gpus, parameters, bytesPerParameter, intervalSeconds, stallSeconds, 0, 0, 1 << 20, 0, 1, 1, 0);
    }

    private static NodeType node(double diskRead, double diskWrite, double network, double capacity, double mdtOperations) {
        return new NodeType(diskRead, diskWrite, network, capacity, mdtOperations, SizingModel.DEFAULT_NETWORK_EFFICIENCY);
    }
}
