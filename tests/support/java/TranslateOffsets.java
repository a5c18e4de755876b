/*
 * Strait test tooling: asks MM2's own client library where a consumer group resumes on this cluster.
 *
 * Usage: java -cp <kafka classpath>:<dir> TranslateOffsets <remoteClusterAlias> <consumerGroupId> <timeoutMs>
 *            [key=value ...]
 * The key=value pairs are MirrorClientConfig properties (bootstrap.servers, security settings,
 * replication.policy.class, replication.policy.separator, ...). Prints one JSON object per
 * translated partition on stdout, sorted by topic and partition:
 *   {"topic":"A.orders","partition":0,"offset":42,"metadata":""}
 */

import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.connect.mirror.RemoteClusterUtils;

public final class TranslateOffsets {

    private TranslateOffsets() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 3) {
            System.err.println("usage: TranslateOffsets <remoteClusterAlias> <consumerGroupId> <timeoutMs> [key=value ...]");
            System.exit(2);
        }
        String remoteClusterAlias = args[0];
        String consumerGroupId = args[1];
        Duration timeout = Duration.ofMillis(Long.parseLong(args[2]));
        Map<String, Object> properties = new HashMap<>();
        for (int i = 3; i < args.length; i++) {
            int equals = args[i].indexOf('=');
            if (equals <= 0) {
                System.err.println("not a key=value pair: " + args[i]);
                System.exit(2);
            }
            properties.put(args[i].substring(0, equals), args[i].substring(equals + 1));
        }

        Map<TopicPartition, OffsetAndMetadata> offsets =
            RemoteClusterUtils.translateOffsets(properties, remoteClusterAlias, consumerGroupId, timeout);

        List<Map.Entry<TopicPartition, OffsetAndMetadata>> entries = new ArrayList<>(offsets.entrySet());
        entries.sort(Comparator.comparing((Map.Entry<TopicPartition, OffsetAndMetadata> e) -> e.getKey().topic())
            .thenComparingInt(e -> e.getKey().partition()));
        StringBuilder out = new StringBuilder();
        for (Map.Entry<TopicPartition, OffsetAndMetadata> entry : entries) {
            String metadata = entry.getValue().metadata() == null ? "" : entry.getValue().metadata();
            out.append("{\"topic\":").append(quote(entry.getKey().topic()))
                .append(",\"partition\":").append(entry.getKey().partition())
                .append(",\"offset\":").append(entry.getValue().offset())
                .append(",\"metadata\":").append(quote(metadata))
                .append("}\n");
        }
        System.out.print(out);
        System.out.flush();
    }

    private static String quote(String text) {
        StringBuilder quoted = new StringBuilder("\"");
        for (char c : text.toCharArray()) {
            switch (c) {
                case '"': quoted.append("\\\""); break;
                case '\\': quoted.append("\\\\"); break;
                case '\n': quoted.append("\\n"); break;
                case '\r': quoted.append("\\r"); break;
                case '\t': quoted.append("\\t"); break;
                default:
                    if (c < 0x20) {
                        quoted.append(String.format("\\u%04x", (int) c));
                    } else {
                        quoted.append(c);
                    }
            }
        }
        return quoted.append('"').toString();
    }
}
