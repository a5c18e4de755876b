/*
 * Strait benchmark tooling: times Kafka's own replica fetcher copying topics from one broker to another.
 *
 * Usage: java -cp <kafka classpath>:<dir> ReplicaCatchUp <bootstrap> <topics> <leader> <follower> <timeoutMs>
 * <topics> is one topic or a comma-separated list; every partition of each must have the single replica <leader>.
 * The tool asks for <follower> as a second replica of every partition (one AlterPartitionReassignments call) and polls both brokers' log sizes every
 * 20 ms (DescribeLogDirs): the last poll before the first byte on the follower, the moment its logs hold as many bytes as the
 * leader's (the copy, as the replica fetcher sends the stored batches unchanged), and then the moment it is
 * in every partition's ISR. Then it removes the replica again and waits until that reassignment is done, so
 * the next run starts from the same state. Times are from the reassignment request, printed as one JSON line:
 * {"partitions":12,"first_micros":..,"copied_micros":..,"in_sync_micros":..}
 * Exit 1 when the copy, the ISR or the removal does not finish within <timeoutMs> each.
 */

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.LogDirDescription;
import org.apache.kafka.clients.admin.NewPartitionReassignment;
import org.apache.kafka.clients.admin.ReplicaInfo;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;

public final class ReplicaCatchUp {

    private static final long POLL_MILLIS = 20;

    private ReplicaCatchUp() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 5) {
            System.err.println("usage: ReplicaCatchUp <bootstrap> <topics> <leader> <follower> <timeoutMs>");
            System.exit(2);
        }
        Set<String> topics = Set.of(args[1].split(","));
        int leader = Integer.parseInt(args[2]);
        int follower = Integer.parseInt(args[3]);
        long timeoutMillis = Long.parseLong(args[4]);
        Properties properties = new Properties();
        properties.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        try (Admin admin = Admin.create(properties)) {
            List<TopicPartition> partitions = partitionsOf(admin, topics);
            long started = System.nanoTime();
            long deadline = started + Duration.ofMillis(timeoutMillis).toNanos();
            reassign(admin, partitions, List.of(leader, follower));
            long lastEmpty = 0;  // the last poll that found nothing on the follower: the copy began after it
            long first = -1;
            long copied = -1;
            while (copied < 0 && System.nanoTime() < deadline) {
                long leaderBytes = logBytes(admin, topics, leader);
                long followerBytes = logBytes(admin, topics, follower);
                long now = (System.nanoTime() - started) / 1000;
                if (followerBytes == 0) {
                    lastEmpty = now;
                } else if (first < 0) {
                    first = lastEmpty;  // (never 0 s of copying, even when one poll sees it begin and end)
                }
                if (followerBytes == leaderBytes && leaderBytes > 0) {
                    copied = now;
                } else {
                    Thread.sleep(POLL_MILLIS);
                }
            }
            if (copied < 0 || !waitFor(admin, topics, timeoutMillis, info -> inIsr(info, follower))) {
                System.err.println("replica " + follower + " of " + topics + " not in sync after " + timeoutMillis + " ms");
                System.exit(1);
            }
            long inSync = (System.nanoTime() - started) / 1000;
            reassign(admin, partitions, List.of(leader));
            if (!waitFor(admin, topics, timeoutMillis, info -> info.replicas().size() == 1)) {
                System.err.println("replica " + follower + " of " + topics + " not removed after " + timeoutMillis + " ms");
                System.exit(1);
            }
            System.out.println("{\"partitions\":" + partitions.size() + ",\"first_micros\":" + first
                + ",\"copied_micros\":" + copied + ",\"in_sync_micros\":" + inSync + "}");
        }
    }

    private interface PartitionCheck {
        boolean holds(TopicPartitionInfo info);
    }

    private static Map<String, TopicDescription> describe(Admin admin, Set<String> topics) throws Exception {
        return admin.describeTopics(topics).allTopicNames().get();
    }

    private static List<TopicPartition> partitionsOf(Admin admin, Set<String> topics) throws Exception {
        List<TopicPartition> partitions = new ArrayList<>();
        for (TopicDescription description : describe(admin, topics).values()) {
            for (TopicPartitionInfo info : description.partitions()) {
                partitions.add(new TopicPartition(description.name(), info.partition()));
            }
        }
        return partitions;
    }

    /** Bytes of the topics' logs on one broker (0 before the broker has any). */
    private static long logBytes(Admin admin, Set<String> topics, int broker) throws Exception {
        long total = 0;
        Map<Integer, Map<String, LogDirDescription>> dirs = admin.describeLogDirs(List.of(broker)).allDescriptions().get();
        for (LogDirDescription dir : dirs.getOrDefault(broker, Map.of()).values()) {
            for (Map.Entry<TopicPartition, ReplicaInfo> replica : dir.replicaInfos().entrySet()) {
                if (topics.contains(replica.getKey().topic())) {
                    total += replica.getValue().size();
                }
            }
        }
        return total;
    }

    private static void reassign(Admin admin, List<TopicPartition> partitions, List<Integer> replicas)
            throws Exception {
        Map<TopicPartition, Optional<NewPartitionReassignment>> plan = new HashMap<>();
        for (TopicPartition partition : partitions) {
            plan.put(partition, Optional.of(new NewPartitionReassignment(replicas)));
        }
        admin.alterPartitionReassignments(plan).all().get();
    }

    /** True once no reassignment of the topics is pending and every partition passes the check. */
    private static boolean waitFor(Admin admin, Set<String> topics, long timeoutMillis, PartitionCheck check)
            throws Exception {
        long deadline = System.nanoTime() + Duration.ofMillis(timeoutMillis).toNanos();
        while (System.nanoTime() < deadline) {
            boolean done = true;
            for (TopicDescription description : describe(admin, topics).values()) {
                for (TopicPartitionInfo info : description.partitions()) {
                    done &= check.holds(info);
                }
            }
            if (done && admin.listPartitionReassignments().reassignments().get().keySet().stream()
                    .noneMatch(partition -> topics.contains(partition.topic()))) {
                return true;
            }
            Thread.sleep(POLL_MILLIS);
        }
        return false;
    }

    private static boolean inIsr(TopicPartitionInfo info, int broker) {
        for (Node node : info.isr()) {
            if (node.id() == broker) {
                return true;
            }
        }
        return false;
    }
}
