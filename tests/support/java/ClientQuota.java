/*
 * Strait test tooling: sets (or removes) the default client quota on a cluster's produce rate, as an operator
 * throttles the clients of a shared cluster (kafka-configs --entity-type clients --entity-default).
 *
 * Usage: java -cp <kafka classpath>:<dir> ClientQuota <bootstrap> <producerBytesPerSecond|none> <timeoutMs>
 * Waits until the cluster describes the quota as set (or gone). Prints {"producer_byte_rate":N} or
 * {"producer_byte_rate":null}. Exit 1 when it does not show within <timeoutMs>.
 */

import java.time.Duration;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.common.quota.ClientQuotaAlteration;
import org.apache.kafka.common.quota.ClientQuotaEntity;
import org.apache.kafka.common.quota.ClientQuotaFilter;
import org.apache.kafka.common.quota.ClientQuotaFilterComponent;

public final class ClientQuota {

    private static final String PRODUCE_RATE = "producer_byte_rate";
    private static final long POLL_MILLIS = 100;

    private ClientQuota() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 3) {
            System.err.println("usage: ClientQuota <bootstrap> <producerBytesPerSecond|none> <timeoutMs>");
            System.exit(2);
        }
        Double rate = "none".equals(args[1]) ? null : Double.valueOf(args[1]);
        long deadline = System.currentTimeMillis() + Long.parseLong(args[2]);
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        try (Admin admin = Admin.create(props)) {
            // The default entity of the client-id type: every client without a quota of its own.
            ClientQuotaEntity everyClient = new ClientQuotaEntity(Collections.singletonMap(ClientQuotaEntity.CLIENT_ID, null));
            ClientQuotaAlteration.Op op = new ClientQuotaAlteration.Op(PRODUCE_RATE, rate);
            admin.alterClientQuotas(List.of(new ClientQuotaAlteration(everyClient, List.of(op)))).all().get();
            ClientQuotaFilter filter = ClientQuotaFilter.containsOnly(
                List.of(ClientQuotaFilterComponent.ofDefaultEntity(ClientQuotaEntity.CLIENT_ID)));
            while (true) {
                Map<ClientQuotaEntity, Map<String, Double>> quotas = admin.describeClientQuotas(filter).entities().get();
                Double shown = quotas.getOrDefault(everyClient, Map.of()).get(PRODUCE_RATE);
                if (rate == null ? shown == null : rate.equals(shown)) {
                    System.out.println("{\"producer_byte_rate\":" + (rate == null ? "null" : String.valueOf(rate.longValue())) + "}");
                    return;
                }
                if (System.currentTimeMillis() > deadline) {
                    System.err.println("quota not shown within the time-out: " + quotas);
                    System.exit(1);
                }
                Thread.sleep(POLL_MILLIS);
            }
        }
    }
}
