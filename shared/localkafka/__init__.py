"""Real Apache Kafka on this machine without Docker: jars from Maven Central, KRaft brokers as processes.

Used by the test suite and by the local two-cluster run; never by a service in production.
"""

from shared.localkafka.cluster import KafkaCluster, SaslUser
from shared.localkafka.jars import HarnessError, kafka_classpath

__all__ = ["HarnessError", "KafkaCluster", "SaslUser", "kafka_classpath"]
