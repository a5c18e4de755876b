/*
 * Strait test tooling: moves the leader of every partition of a topic to another live broker, as an operator's
 * reassignment or an automatic rebalancer (Cruise Control) does, with no broker stopping.
 *
 * Usage: java -cp <kafka classpath>:<dir> MoveLeaders <bootstrap> <topic> <timeoutMs>
 * Each partition's replica list is rotated by one (the same replicas, so nothing is copied), the reassignment is
 * awaited, and a preferred-leader election makes the new first replica the leader. Prints one JSON line per
 * partition: {"partition":0,"from":1,"to":2}. Exit 1 when a leader did not move within <timeoutMs>.
 */

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewPartitionReassignment;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.ElectionType;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;

public final class MoveLeaders {

    private static final long POLL_MILLIS = 100;

    private MoveLeaders() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 3) {
            System.err.println("usage: MoveLeaders <bootstrap> <topic> <timeoutMs>");
            System.exit(2);
        }
        String topic = args[1];
        long deadline = System.nanoTime() + Duration.ofMillis(Long.parseLong(args[2])).toNanos();
        Properties properties = new Properties();
        properties.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        try (Admin admin = Admin.create(properties)) {
            Map<Integer, Integer> before = new HashMap<>();
            Map<TopicPartition, Optional<NewPartitionReassignment>> plan = new HashMap<>();
            for (TopicPartitionInfo info : describe(admin, topic).partitions()) {
                List<Integer> replicas = new ArrayList<>();
                for (Node node : info.replicas()) {
                    replicas.add(node.id());
                }
                if (replicas.size() < 2) {
                    System.err.println(topic + "-" + info.partition() + " has one replica: its leader cannot move");
                    System.exit(1);
                }
                replicas.add(replicas.remove(0));
                before.put(info.partition(), info.leader().id());
                plan.put(new TopicPartition(topic, info.partition()), Optional.of(new NewPartitionReassignment(replicas)));
            }
            admin.alterPartitionReassignments(plan).all().get();
            while (!admin.listPartitionReassignments(plan.keySet()).reassignments().get().isEmpty()) {
                waitOrFail(deadline, "the reassignment of " + topic);
            }
            Set<TopicPartition> pending = new HashSet<>(plan.keySet());
            while (!pending.isEmpty()) {
                try {
                    admin.electLeaders(ElectionType.PREFERRED, pending).partitions().get();
                } catch (Exception retried) {
                    // a replica not yet in sync: asked again below
                }
                for (TopicPartitionInfo info : describe(admin, topic).partitions()) {
                    TopicPartition partition = new TopicPartition(topic, info.partition());
                    if (pending.contains(partition) && info.leader() != null
                            && info.leader().id() != before.get(info.partition())) {
                        pending.remove(partition);
                        System.out.println("{\"partition\":" + info.partition() + ",\"from\":"
                            + before.get(info.partition()) + ",\"to\":" + info.leader().id() + "}");
                    }
                }
                if (!pending.isEmpty()) {
                    waitOrFail(deadline, "new leaders for " + pending);
                }
            }
        }
    }

    private static TopicDescription describe(Admin admin, String topic) throws Exception {
        return admin.describeTopics(Set.of(topic)).allTopicNames().get().get(topic);
    }

    private static void waitOrFail(long deadline, String what) throws InterruptedException {
        if (System.nanoTime() > deadline) {
            System.err.println("timed out waiting for " + what);
            System.exit(1);
        }
        Thread.sleep(POLL_MILLIS);
    }
}
