"""The only place that imports a Kafka client: factories, property translation, error mapping, topics."""

from shared.kafka.client_props import ClientProps, to_aiokafka, to_librdkafka
from shared.kafka.errors import translate_kafka_error

__all__ = ["ClientProps", "to_aiokafka", "to_librdkafka", "translate_kafka_error"]
