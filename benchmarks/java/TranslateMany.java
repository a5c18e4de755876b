/*
 * Strait benchmark tooling: calls MM2's own RemoteClusterUtils.translateOffsets once per consumer group,
 * all in one JVM, and times each call.
 *
 * Usage: java -cp <kafka classpath>:<dir> TranslateMany <remoteClusterAlias> <timeoutMs> <groupsFile>
 *            [key=value ...]
 * groupsFile holds one consumer group per line. The key=value pairs are MirrorClientConfig properties
 * (bootstrap.servers, security settings, replication.policy.*). Prints one JSON object per call on stdout:
 *   {"group":"g1","micros":1234,"offsets":[["A.orders",0,42],...]}
 */

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.connect.mirror.RemoteClusterUtils;

public final class TranslateMany {

    private TranslateMany() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 3) {
            System.err.println("usage: TranslateMany <remoteClusterAlias> <timeoutMs> <groupsFile> [key=value ...]");
            System.exit(2);
        }
        String alias = args[0];
        Duration timeout = Duration.ofMillis(Long.parseLong(args[1]));
        List<String> groups = new ArrayList<>();
        for (String line : Files.readAllLines(Paths.get(args[2]), StandardCharsets.UTF_8)) {
            if (!line.isBlank()) {
                groups.add(line.strip());
            }
        }
        Map<String, Object> properties = new HashMap<>();
        for (int i = 3; i < args.length; i++) {
            int equals = args[i].indexOf('=');
            if (equals <= 0) {
                System.err.println("not a key=value pair: " + args[i]);
                System.exit(2);
            }
            properties.put(args[i].substring(0, equals), args[i].substring(equals + 1));
        }
        for (String group : groups) {
            long started = System.nanoTime();
            Map<TopicPartition, OffsetAndMetadata> offsets =
                RemoteClusterUtils.translateOffsets(properties, alias, group, timeout);
            long micros = (System.nanoTime() - started) / 1000;
            StringBuilder out = new StringBuilder("{\"group\":").append(quote(group))
                .append(",\"micros\":").append(micros).append(",\"offsets\":[");
            boolean first = true;
            for (Map.Entry<TopicPartition, OffsetAndMetadata> entry : offsets.entrySet()) {
                out.append(first ? "" : ",").append('[').append(quote(entry.getKey().topic()))
                    .append(',').append(entry.getKey().partition())
                    .append(',').append(entry.getValue().offset()).append(']');
                first = false;
            }
            System.out.println(out.append("]}"));
            System.out.flush();
        }
    }

    private static String quote(String text) {
        StringBuilder quoted = new StringBuilder("\"");
        for (char c : text.toCharArray()) {
            if (c == '"' || c == '\\') {
                quoted.append('\\').append(c);
            } else if (c < 0x20) {
                quoted.append(String.format("\\u%04x", (int) c));
            } else {
                quoted.append(c);
            }
        }
        return quoted.append('"').toString();
    }
}
