package dev.plinth.common.sizing;

import dev.plinth.common.ErrorCode;
import dev.plinth.common.PlinthException;

/**
 * How much storage a training cluster needs, from what its jobs do and what one node of a kind
 * can do: the arithmetic behind {@code plinth plan} and {@code docs/sizing.md}. Everything is in
 * bytes, seconds and operations; decimal units are the caller's business.
 *
 * <p>Each count is the largest of what its constraints ask for, and the plan names that one: a
 * storage node count bound by burst writes says that checkpoints, not reads or capacity, decide
 * what to buy.
 */
public final class SizingModel {
    private SizingModel() {}

    /**
     * The fraction of a link's line rate that storage reads reach end to end, where the node
     * figures are data-sheet ones: DeepSeek's 3FS read 6.6 TiB/s over 180 nodes of 400 Gb/s (0.81);
     * Perlmutter's Lustre reached over 0.9 of its SSDs' bandwidth at the OST and LNet levels in low-level tests.
     */
    public static final double DEFAULT_NETWORK_EFFICIENCY = 0.8;

    /**
     * What the cluster's jobs do. {@code checkpointStallSeconds}: how long a job may stand still while
     * its checkpoint is written (the whole checkpoint must land in it); {@code shardBytes}: 0 where each
     * sample is a file of its own, else the size of the shards samples are packed in.
     */
    public record Workload(int gpus, double parameters, double checkpointBytesPerParameter, double checkpointIntervalSeconds,
                           double checkpointStallSeconds, double datasetBytes, double readBytesPerSecondPerGpu, double sampleBytes,
                           double shardBytes, int checkpointsKeptHot, int checkpointsKeptCold, double s3BytesPerSecond) {
        public Workload {
            positive("GPUs", gpus);
            positive("checkpoint stall", checkpointStallSeconds);
            positive("checkpoint interval", checkpointIntervalSeconds);
            positive("sample size", sampleBytes);
            notNegative("parameters", parameters);
            notNegative("checkpoint bytes per parameter", checkpointBytesPerParameter);
            notNegative("dataset size", datasetBytes);
            notNegative("read rate per GPU", readBytesPerSecondPerGpu);
            notNegative("shard size", shardBytes);
            notNegative("checkpoints kept hot", checkpointsKeptHot);
            notNegative("checkpoints kept cold", checkpointsKeptCold);
            notNegative("S3 traffic", s3BytesPerSecond);
        }
    }

    /**
     * What one node of a kind does, measured or from its data sheet: its disks' aggregate read and
     * write rates, its network's line rate (each direction), the capacity its disks hold, the
     * metadata operations one MDT on such a node serves per second, and {@code networkEfficiency},
     * the fraction of the line rate storage traffic achieves (1 for figures measured end to end).
     */
    public record NodeType(double diskReadBytesPerSecond, double diskWriteBytesPerSecond, double networkBytesPerSecond,
                           double capacityBytes, double mdtOperationsPerSecond, double networkEfficiency) {
        public NodeType {
            positive("disk read rate", diskReadBytesPerSecond);
            positive("disk write rate", diskWriteBytesPerSecond);
            positive("network rate", networkBytesPerSecond);
            positive("capacity", capacityBytes);
            positive("MDT operations per second", mdtOperationsPerSecond);
            if (!(networkEfficiency > 0 && networkEfficiency <= 1)) {
                throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "network efficiency must be in (0, 1]: " + networkEfficiency);
            }
        }

        /** Bytes per second one node serves to readers: its disks or its network, whichever is less. */
        public double readBytesPerSecond() {
            return Math.min(diskReadBytesPerSecond, networkBytesPerSecond * networkEfficiency);
        }

        /**
         * Bytes per second of clients' writes one node absorbs under {@code redundancy}: every byte a
         * client writes arrives at {@code overhead} nodes' networks and disks (a chain passes it from
         * replica to replica; erasure coding sends each node its cell).
         */
        public double writeBytesPerSecond(Redundancy redundancy) {
            return Math.min(diskWriteBytesPerSecond, networkBytesPerSecond * networkEfficiency) / redundancy.overhead();
        }
    }

    /** How the hot tier keeps data: {@code replicas} copies, or erasure coding with {@code ecData} + {@code ecParity} cells. */
    public record Redundancy(int replicas, int ecData, int ecParity) {
        public Redundancy {
            if (ecData > 0 ? replicas != 1 || ecParity < 1 : replicas < 1 || ecParity != 0) {
                throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "either replicas, or erasure coding K+M with one replica");
            }
        }

        public static Redundancy replicated(int replicas) {
            return new Redundancy(replicas, 0, 0);
        }

        public static Redundancy erasureCoded(int data, int parity) {
            return new Redundancy(1, data, parity);
        }

        /** Bytes stored (and sent to storage nodes) per byte written. */
        public double overhead() {
            return ecData > 0 ? (double) (ecData + ecParity) / ecData : replicas;
        }

        /** Nodes one file's stripe needs at least: its replicas, or its cells. */
        public int width() {
            return ecData > 0 ? ecData + ecParity : replicas;
        }

        @Override
        public String toString() {
            return ecData > 0 ? "EC " + ecData + "+" + ecParity : replicas + (replicas == 1 ? " replica" : " replicas");
        }
    }

    /** A count of nodes, the constraint that set it, and the fraction of nodes that constraint asks for before rounding up. */
    public record Count(int nodes, String boundBy, double exact) {}

    /** What one constraint asks for: {@code nodes} nodes, unrounded. */
    private record Need(String constraint, double nodes) {}

    /** The plan: what the workload asks for, and the nodes that serve it. */
    public record Plan(double checkpointBytes, double burstWriteBytesPerSecond, double sustainedWriteBytesPerSecond,
                       double sustainedReadBytesPerSecond, double filesOpenedPerSecond, double metadataOperationsPerSecond,
                       double hotBytes, double coldBytes, Count storageNodes, Count mdts, Count gateways,
                       double readBytesPerSecondPossible, double writeBytesPerSecondPossible) {}

    /**
     * Metadata operations an open of a file costs a reader: the lookup of its name, the open and the
     * close (its attributes come with the lookup). A checkpoint file costs its create and its close.
     */
    static final int OPERATIONS_PER_FILE_READ = 3;
    static final int OPERATIONS_PER_CHECKPOINT_FILE = 2;

    /**
     * Plans for {@code workload} on nodes of kind {@code node}, the hot tier kept with
     * {@code redundancy} and the cold tier with {@code coldOverhead} stored bytes per byte (an
     * erasure-coded object store: 1.5 for 8+4); an S3 gateway node has a link of
     * {@code gatewayNetworkBytesPerSecond}, used at the node kind's network efficiency.
     */
    public static Plan plan(Workload workload, NodeType node, Redundancy redundancy, double coldOverhead, double gatewayNetworkBytesPerSecond) {
        positive("gateway network rate", gatewayNetworkBytesPerSecond);
        if (!(coldOverhead >= 1)) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "cold overhead must be at least 1: " + coldOverhead);
        }
        double checkpointBytes = workload.parameters() * workload.checkpointBytesPerParameter();
        double burstWrite = checkpointBytes / workload.checkpointStallSeconds();
        double sustainedWrite = checkpointBytes / workload.checkpointIntervalSeconds();
        double read = workload.gpus() * workload.readBytesPerSecondPerGpu();
        double fileBytes = workload.shardBytes() > 0 ? workload.shardBytes() : workload.sampleBytes();
        double filesOpened = read / fileBytes;
        // every rank writes its own checkpoint file within the stall
        double metadata = filesOpened * OPERATIONS_PER_FILE_READ
                + (double) workload.gpus() * OPERATIONS_PER_CHECKPOINT_FILE / workload.checkpointStallSeconds();
        double hot = (workload.datasetBytes() + workload.checkpointsKeptHot() * checkpointBytes) * redundancy.overhead();
        double cold = (workload.datasetBytes() + workload.checkpointsKeptCold() * checkpointBytes) * coldOverhead;

        double forReads = read / node.readBytesPerSecond();
        double forWrites = burstWrite / node.writeBytesPerSecond(redundancy);
        double forCapacity = hot / node.capacityBytes();
        Count storage = count(redundancy.width(), "the stripe width (" + redundancy + ")",
                new Need("sustained reads", forReads), new Need("checkpoint burst writes", forWrites), new Need("hot capacity", forCapacity));
        Count mdts = count(1, "one MDT at least", new Need("metadata operations", metadata / node.mdtOperationsPerSecond()));
        double perGateway = gatewayNetworkBytesPerSecond * node.networkEfficiency();
        Count gateways = workload.s3BytesPerSecond() == 0 ? new Count(0, "no S3 traffic given", 0)
                : count(1, "one gateway at least", new Need("S3 traffic", workload.s3BytesPerSecond() / perGateway));
        return new Plan(checkpointBytes, burstWrite, sustainedWrite, read, filesOpened, metadata, hot, cold, storage, mdts, gateways,
                storage.nodes() * node.readBytesPerSecond(), storage.nodes() * node.writeBytesPerSecond(redundancy));
    }

    /** Aggregate read rate of {@code nodes} storage nodes of kind {@code node}. */
    public static double aggregateReadBytesPerSecond(int nodes, NodeType node) {
        return nodes * node.readBytesPerSecond();
    }

    /** Aggregate write rate clients get from {@code nodes} storage nodes of kind {@code node} under {@code redundancy}. */
    public static double aggregateWriteBytesPerSecond(int nodes, NodeType node, Redundancy redundancy) {
        return nodes * node.writeBytesPerSecond(redundancy);
    }

    /** The most any of {@code needs} asks for, rounded up, and at least {@code floor}. */
    private static Count count(int floor, String floorReason, Need... needs) {
        Need most = needs[0];
        for (Need need : needs) {
            if (need.nodes() > most.nodes()) {
                most = need;
            }
        }
        int nodes = (int) Math.ceil(most.nodes() - 1e-9); // 2.0000000001 from rounding in the divisions is 2
        return nodes < floor ? new Count(floor, floorReason, most.nodes()) : new Count(nodes, most.constraint(), most.nodes());
    }

    private static void positive(String what, double value) {
        if (!(value > 0)) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, what + " must be positive: " + value);
        }
    }

    private static void notNegative(String what, double value) {
        if (!(value >= 0)) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, what + " must not be negative: " + value);
        }
    }
}
