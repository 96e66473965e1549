// Times Kafka 3.9's own AdminUtils.assignReplicasToBrokers (the ZooKeeper-mode placement that
// kafka-topics --create and kafka-reassign-partitions --generate use) for bench/compare_kafka.py.
//
//   java -cp <dir>:<kafka 3.9 classpath> AssignBench BROKERS RACKS PARTITIONS RF FIXED_START \
//       WARMUP_PARTITIONS REPEATS OUT_FILE
//
// Brokers are 1..BROKERS; broker i sits on rack "r" + ((i - 1) % RACKS), no racks when RACKS is 0
// (the same inputs compare_kafka.py gives kreplica.kafka.assign_replicas). A fixed start index
// (>= 0) makes Kafka skip its static RAND, so the output is deterministic and needs no -Xint.
//
// Only the call is timed (System.nanoTime around it). "cold" is the first call in this JVM,
// after the class is loaded and initialised (timed separately as class_init_ns); "warm" are
// REPEATS calls after warm-up calls totalling at least WARMUP_PARTITIONS partitions (>= 2 calls).
// The cold call's result goes to OUT_FILE as little-endian int32: partition, replicas..., for
// each partition in id order; every warm result must equal it (same=true). Prints one line of
// key=value pairs on stdout.
import java.io.FileOutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import org.apache.kafka.admin.AdminUtils;
import org.apache.kafka.admin.BrokerMetadata;

public class AssignBench {
    public static void main(String[] args) throws Exception {
        int nBrokers = Integer.parseInt(args[0]);
        int nRacks = Integer.parseInt(args[1]);
        int nPartitions = Integer.parseInt(args[2]);
        int rf = Integer.parseInt(args[3]);
        int fixedStart = Integer.parseInt(args[4]);
        long warmupPartitions = Long.parseLong(args[5]);
        int repeats = Integer.parseInt(args[6]);
        String outFile = args[7];

        List<BrokerMetadata> brokers = new ArrayList<>();
        for (int i = 1; i <= nBrokers; i++) {
            Optional<String> rack = nRacks == 0 ? Optional.empty() : Optional.of("r" + ((i - 1) % nRacks));
            brokers.add(new BrokerMetadata(i, rack));
        }

        long t0 = System.nanoTime();
        Class.forName("org.apache.kafka.admin.AdminUtils", true, AssignBench.class.getClassLoader());
        long classInit = System.nanoTime() - t0;

        t0 = System.nanoTime();
        Map<Integer, List<Integer>> cold = AdminUtils.assignReplicasToBrokers(brokers, nPartitions, rf, fixedStart, -1);
        long coldNs = System.nanoTime() - t0;
        write(cold, outFile);

        int warmups = 0;
        long warmed = 0;
        while (warmups < 2 || warmed < warmupPartitions) {
            Map<Integer, List<Integer>> r = AdminUtils.assignReplicasToBrokers(brokers, nPartitions, rf, fixedStart, -1);
            if (r.size() != cold.size()) throw new IllegalStateException("warm-up result differs");
            warmups++;
            warmed += nPartitions;
        }

        boolean same = true;
        StringBuilder warm = new StringBuilder();
        for (int i = 0; i < repeats; i++) {
            t0 = System.nanoTime();
            Map<Integer, List<Integer>> r = AdminUtils.assignReplicasToBrokers(brokers, nPartitions, rf, fixedStart, -1);
            long ns = System.nanoTime() - t0;
            same &= r.equals(cold);
            if (i > 0) warm.append(',');
            warm.append(ns);
        }
        System.out.println("class_init_ns=" + classInit + " cold_ns=" + coldNs + " warmups=" + warmups
            + " warm_ns=" + warm + " same=" + same + " java=" + System.getProperty("java.version"));
    }

    static void write(Map<Integer, List<Integer>> result, String path) throws Exception {
        int ints = 0;
        for (List<Integer> replicas : result.values()) ints += 1 + replicas.size();
        ByteBuffer buf = ByteBuffer.allocate(4 * ints).order(ByteOrder.LITTLE_ENDIAN);
        for (Map.Entry<Integer, List<Integer>> e : new TreeMap<>(result).entrySet()) {
            buf.putInt(e.getKey());
            for (int b : e.getValue()) buf.putInt(b);
        }
        buf.flip();
        try (FileChannel ch = new FileOutputStream(path).getChannel()) {
            while (buf.hasRemaining()) ch.write(buf);
        }
    }
}
