package dev.plinth.cli;

import dev.plinth.common.Json;
import dev.plinth.common.PlinthException;
import dev.plinth.common.sizing.SizingModel;
import dev.plinth.common.sizing.SizingModel.Count;
import dev.plinth.common.sizing.SizingModel.NodeType;
import dev.plinth.common.sizing.SizingModel.Plan;
import dev.plinth.common.sizing.SizingModel.Redundancy;
import dev.plinth.common.sizing.SizingModel.Workload;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** `plinth plan`: how many storage nodes, MDTs and gateways a training cluster needs (docs/sizing.md). */
@Command(name = "plan", mixinStandardHelpOptions = true,
        description = {"Sizes storage for a training cluster: checkpoint size, burst write and sustained read bandwidth, metadata "
                + "operations, hot and cold capacity, and the storage nodes, MDTs and S3 gateways they need, each with the "
                + "constraint that binds it. The model and where its figures come from: docs/sizing.md.",
                "Sizes take decimal or binary units (1.5TB, 64KiB), rates per second (2GB/s, 400Gbps), counts K, M, B or T (70B)."})
final class PlanCommand implements Callable<Integer> {
    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Option(names = "--gpus", required = true, paramLabel = "N", description = "GPUs in the cluster (each a training rank).")
    int gpus;

    @Option(names = "--parameters", paramLabel = "COUNT", defaultValue = "0", description = "Model parameters (70B). Default: ${DEFAULT-VALUE}.")
    String parameters;

    @Option(names = "--checkpoint-bytes-per-parameter", paramLabel = "BYTES", defaultValue = "16",
            description = "Checkpoint state per parameter: 16 for Adam in mixed precision (weights, fp32 master copy, two moments), "
                    + "2 for weights alone. Default: ${DEFAULT-VALUE}.")
    double checkpointBytesPerParameter;

    @Option(names = "--checkpoint-interval", paramLabel = "SECONDS", defaultValue = "1800", description = "Time between checkpoints. Default: ${DEFAULT-VALUE}.")
    double checkpointIntervalSeconds;

    @Option(names = "--checkpoint-stall", paramLabel = "SECONDS", defaultValue = "60",
            description = "How long a job may stand still while its checkpoint is written. Default: ${DEFAULT-VALUE}.")
    double checkpointStallSeconds;

    @Option(names = "--dataset", paramLabel = "SIZE", defaultValue = "0", description = "Training data kept in the hot tier. Default: ${DEFAULT-VALUE}.")
    String dataset;

    @Option(names = "--read-per-gpu", paramLabel = "RATE", defaultValue = "0", description = "Training data each GPU reads (50MB/s). Default: ${DEFAULT-VALUE}.")
    String readPerGpu;

    @Option(names = "--sample-size", paramLabel = "SIZE", defaultValue = "100KB", description = "Size of one sample. Default: ${DEFAULT-VALUE}.")
    String sampleSize;

    @Option(names = "--shard-size", paramLabel = "SIZE", defaultValue = "0",
            description = "Size of the shards samples are packed in (plinth pack); 0: one file per sample. Default: ${DEFAULT-VALUE}.")
    String shardSize;

    @Option(names = "--checkpoints-hot", paramLabel = "N", defaultValue = "2", description = "Checkpoints kept in the hot tier. Default: ${DEFAULT-VALUE}.")
    int checkpointsHot;

    @Option(names = "--checkpoints-cold", paramLabel = "N", defaultValue = "10", description = "Checkpoints kept in the cold tier. Default: ${DEFAULT-VALUE}.")
    int checkpointsCold;

    @Option(names = "--s3", paramLabel = "RATE", defaultValue = "0", description = "S3 traffic the gateways serve. Default: ${DEFAULT-VALUE}.")
    String s3;

    @Option(names = "--replicas", paramLabel = "N", description = "Copies of hot data (default 3, unless --ec).")
    Integer replicas;

    @Option(names = "--ec", paramLabel = "K+M", description = "Erasure-code hot data with K data and M parity cells instead (8+3).")
    String ec;

    @Option(names = "--cold-overhead", paramLabel = "FACTOR", defaultValue = "1.5",
            description = "Bytes the cold tier stores per byte (an 8+4 erasure-coded object store: 1.5). Default: ${DEFAULT-VALUE}.")
    double coldOverhead;

    @Option(names = "--node-disk-read", paramLabel = "RATE", defaultValue = "40GB/s",
            description = "One storage node's disks read, together (plinth bench on one node, or the drives' data sheet). Default: ${DEFAULT-VALUE}.")
    String nodeDiskRead;

    @Option(names = "--node-disk-write", paramLabel = "RATE", defaultValue = "20GB/s", description = "One storage node's disks write, together. Default: ${DEFAULT-VALUE}.")
    String nodeDiskWrite;

    @Option(names = "--node-network", paramLabel = "RATE", defaultValue = "400Gbps", description = "One node's network line rate, each way. Default: ${DEFAULT-VALUE}.")
    String nodeNetwork;

    @Option(names = "--node-capacity", paramLabel = "SIZE", defaultValue = "180TB", description = "What one storage node's disks hold. Default: ${DEFAULT-VALUE}.")
    String nodeCapacity;

    @Option(names = "--mdt-ops", paramLabel = "N", defaultValue = "20000",
            description = "Metadata operations one MDT serves per second (mdbench through the mount, bench/mdt-scaling.sh). Default: ${DEFAULT-VALUE}.")
    double mdtOperations;

    @Option(names = "--gateway-network", paramLabel = "RATE", defaultValue = "200Gbps", description = "One S3 gateway node's line rate. Default: ${DEFAULT-VALUE}.")
    String gatewayNetwork;

    @Option(names = "--network-efficiency", paramLabel = "FRACTION", defaultValue = "0.8",
            description = "Fraction of a line rate storage traffic reaches; 1 for rates measured end to end. Default: ${DEFAULT-VALUE}.")
    double networkEfficiency;

    @Option(names = "--json", description = "Machine-readable output.")
    boolean json;

    @Override
    public Integer call() {
        Plan plan;
        Redundancy redundancy;
        try {
            redundancy = redundancy();
            Workload workload = new Workload(gpus, count(parameters), checkpointBytesPerParameter, checkpointIntervalSeconds,
                    checkpointStallSeconds, bytes(dataset), rate(readPerGpu), bytes(sampleSize), bytes(shardSize), checkpointsHot,
                    checkpointsCold, rate(s3));
            NodeType node = new NodeType(rate(nodeDiskRead), rate(nodeDiskWrite), rate(nodeNetwork), bytes(nodeCapacity), mdtOperations,
                    networkEfficiency);
            plan = SizingModel.plan(workload, node, redundancy, coldOverhead, rate(gatewayNetwork));
        } catch (PlinthException e) {
            throw new CommandLine.ParameterException(spec.commandLine(), e.detail());
        }
        if (json) {
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("checkpoint_bytes", Math.round(plan.checkpointBytes()));
            out.put("burst_write_bytes_per_second", Math.round(plan.burstWriteBytesPerSecond()));
            out.put("sustained_write_bytes_per_second", Math.round(plan.sustainedWriteBytesPerSecond()));
            out.put("sustained_read_bytes_per_second", Math.round(plan.sustainedReadBytesPerSecond()));
            out.put("files_opened_per_second", Math.round(plan.filesOpenedPerSecond()));
            out.put("metadata_operations_per_second", Math.round(plan.metadataOperationsPerSecond()));
            out.put("hot_bytes", Math.round(plan.hotBytes()));
            out.put("cold_bytes", Math.round(plan.coldBytes()));
            out.put("redundancy", redundancy.toString());
            out.put("storage_nodes", count(plan.storageNodes()));
            out.put("mdts", count(plan.mdts()));
            out.put("gateways", count(plan.gateways()));
            out.put("read_bytes_per_second_possible", Math.round(plan.readBytesPerSecondPossible()));
            out.put("write_bytes_per_second_possible", Math.round(plan.writeBytesPerSecondPossible()));
            System.out.println(Json.write(out));
            return 0;
        }
        System.out.println("What the jobs ask for");
        System.out.printf("  %-22s %s (%s parameters x %s bytes)%n", "checkpoint", decimalBytes(plan.checkpointBytes()),
                decimalCount(count(parameters)), trim(checkpointBytesPerParameter));
        System.out.printf("  %-22s %s (a checkpoint within %s s)%n", "burst write", decimalRate(plan.burstWriteBytesPerSecond()),
                trim(checkpointStallSeconds));
        System.out.printf("  %-22s %s (one checkpoint per %s s)%n", "sustained write", decimalRate(plan.sustainedWriteBytesPerSecond()),
                trim(checkpointIntervalSeconds));
        System.out.printf("  %-22s %s (%d GPUs x %s)%n", "sustained read", decimalRate(plan.sustainedReadBytesPerSecond()), gpus,
                decimalRate(rate(readPerGpu)));
        System.out.printf("  %-22s %s/s, %s metadata operations/s%n", "files opened", decimalCount(plan.filesOpenedPerSecond()),
                decimalCount(plan.metadataOperationsPerSecond()));
        System.out.printf("  %-22s %s (%s)%n", "hot capacity", decimalBytes(plan.hotBytes()), redundancy);
        System.out.printf("  %-22s %s (x%s)%n", "cold capacity", decimalBytes(plan.coldBytes()), trim(coldOverhead));
        System.out.println("What serves it");
        print("storage nodes", plan.storageNodes());
        print("MDTs", plan.mdts());
        print("S3 gateways", plan.gateways());
        System.out.printf("  %-22s read %s, write %s%n", "these storage nodes", decimalRate(plan.readBytesPerSecondPossible()),
                decimalRate(plan.writeBytesPerSecondPossible()));
        return 0;
    }

    private Redundancy redundancy() {
        if (ec != null) {
            if (replicas != null) {
                throw new PlinthException(dev.plinth.common.ErrorCode.INVALID_ARGUMENT, "--ec and --replicas are one or the other");
            }
            Matcher matcher = Pattern.compile("(\\d+)\\+(\\d+)").matcher(ec.trim());
            if (!matcher.matches()) {
                throw new PlinthException(dev.plinth.common.ErrorCode.INVALID_ARGUMENT, "--ec takes K+M, as 8+3: '" + ec + "'");
            }
            return Redundancy.erasureCoded(Integer.parseInt(matcher.group(1)), Integer.parseInt(matcher.group(2)));
        }
        return Redundancy.replicated(replicas == null ? 3 : replicas);
    }

    private static Map<String, Object> count(Count count) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("count", count.nodes());
        out.put("bound_by", count.boundBy());
        out.put("exact", Math.round(count.exact() * 100) / 100.0);
        return out;
    }

    private static void print(String what, Count count) {
        if (count.nodes() == 0) {
            System.out.printf("  %-22s 0 (%s)%n", what, count.boundBy());
            return;
        }
        System.out.printf("  %-22s %d, bound by %s (%s needed)%n", what, count.nodes(), count.boundBy(), trim(Math.round(count.exact() * 100) / 100.0));
    }

    private static final Pattern QUANTITY = Pattern.compile("([0-9]*\\.?[0-9]+(?:[eE][0-9]+)?)\\s*([a-zA-Z/]*)");

    /** A count: 70B, 1.5M, 2e9. */
    static double count(String text) {
        Matcher matcher = QUANTITY.matcher(text.trim());
        if (!matcher.matches()) {
            throw bad("count", text);
        }
        double number = Double.parseDouble(matcher.group(1));
        return switch (matcher.group(2).toUpperCase(Locale.ROOT)) {
            case "" -> number;
            case "K" -> number * 1e3;
            case "M" -> number * 1e6;
            case "B", "G" -> number * 1e9;
            case "T" -> number * 1e12;
            default -> throw bad("count", text);
        };
    }

    /** A size in bytes: 100KB (decimal), 64KiB (binary), 1.5TB, 4096. */
    static double bytes(String text) {
        Matcher matcher = QUANTITY.matcher(text.trim());
        if (!matcher.matches()) {
            throw bad("size", text);
        }
        double multiplier = byteUnit(matcher.group(2), text);
        return Double.parseDouble(matcher.group(1)) * multiplier;
    }

    /** A rate in bytes per second: 2GB/s, 500MiB/s, or in bits: 400Gbps, 200Gb/s. */
    static double rate(String text) {
        Matcher matcher = QUANTITY.matcher(text.trim());
        if (!matcher.matches()) {
            throw bad("rate", text);
        }
        String unit = matcher.group(2);
        double number = Double.parseDouble(matcher.group(1));
        Matcher bits = Pattern.compile("([kKMGT]?)(?:bps|b/s|bit/s)").matcher(unit);
        if (bits.matches()) {
            return number * byteUnit(bits.group(1) + "B", text) / 8;
        }
        if (unit.endsWith("/s")) {
            unit = unit.substring(0, unit.length() - 2);
        } else if (!unit.isEmpty()) {
            throw bad("rate (per second: GB/s, Gbps)", text);
        }
        return number * byteUnit(unit, text);
    }

    private static double byteUnit(String unit, String text) {
        return switch (unit) {
            case "", "B" -> 1;
            case "kB", "KB", "k", "K" -> 1e3;
            case "MB", "M" -> 1e6;
            case "GB", "G" -> 1e9;
            case "TB", "T" -> 1e12;
            case "PB", "P" -> 1e15;
            case "KiB" -> 0x1p10;
            case "MiB" -> 0x1p20;
            case "GiB" -> 0x1p30;
            case "TiB" -> 0x1p40;
            case "PiB" -> 0x1p50;
            default -> throw bad("unit", text);
        };
    }

    private static PlinthException bad(String what, String text) {
        return new PlinthException(dev.plinth.common.ErrorCode.INVALID_ARGUMENT, "not a " + what + ": '" + text + "'");
    }

    private static String decimalBytes(double bytes) {
        return scaled(bytes, new String[] {"B", "kB", "MB", "GB", "TB", "PB", "EB"});
    }

    private static String decimalRate(double bytesPerSecond) {
        return scaled(bytesPerSecond, new String[] {"B/s", "kB/s", "MB/s", "GB/s", "TB/s", "PB/s", "EB/s"});
    }

    private static String decimalCount(double count) {
        return scaled(count, new String[] {"", "K", "M", "B", "T"}).replace(" ", "");
    }

    private static String scaled(double value, String[] units) {
        int unit = 0;
        while (Math.abs(value) >= 1000 && unit < units.length - 1) {
            value /= 1000;
            unit++;
        }
        return String.format(Locale.ROOT, value >= 100 || unit == 0 && value == Math.rint(value) ? "%.0f %s" : "%.3g %s", value, units[unit]).strip();
    }

    private static String trim(double value) {
        return value == Math.rint(value) ? Long.toString((long) value) : Double.toString(value);
    }
}
