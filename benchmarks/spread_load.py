"""A load generator that spreads records over many topics' partitions (Kafka's perf tool writes one topic).

Run as its own process (`python -m benchmarks.spread_load ...`) so its CPU is not the measuring consumer's: it
fills a backlog as fast as the broker takes it (`--rate 0`) or holds a steady rate for a number of seconds,
going round the partitions in turn and stamping each record with the wall clock at send time (CreateTime). On
exit it prints one JSON line: how many records it sent, and how many of them were stamped inside `--window`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence

from confluent_kafka import KafkaException, Producer

PACE_S = 0.005  # how often a steady load tops up to the rate
FLUSH_TIMEOUT_S = 300.0


def _arguments(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topics", required=True, help="a file with one topic name per line")
    parser.add_argument("--partitions", type=int, required=True, help="partitions of every topic")
    parser.add_argument("--size", type=int, default=1024, help="value bytes per record")
    parser.add_argument("--rate", type=int, default=0, help="records/s; 0: as fast as the broker takes them")
    parser.add_argument("--records", type=int, default=0, help="stop after this many (0: only --seconds stops)")
    parser.add_argument("--seconds", type=float, default=0.0, help="stop after this long (0: only --records)")
    parser.add_argument("--window", type=float, nargs=2, default=None, help="wall-clock ms [start, end) to count")
    parser.add_argument(
        "--keys", action="store_true", help="key each record with its number (a check can tell them apart)"
    )
    parser.add_argument("--producer", action="append", default=[], help="key=value producer setting")
    parser.add_argument(
        "--flush-timeout",
        type=float,
        default=FLUSH_TIMEOUT_S,
        help="seconds to wait for the last acknowledgements (a broker making thousands of logs is slow to answer)",
    )
    return parser.parse_args(argv)


def run(argv: Sequence[str]) -> dict[str, int]:
    """Produce as the arguments say; the counts printed on exit."""
    args = _arguments(argv)
    if not args.records and not args.seconds:
        raise SystemExit("give --records or --seconds")
    with open(args.topics) as lines:
        topics = [line.strip() for line in lines if line.strip()]
    targets = [(topic, partition) for partition in range(args.partitions) for topic in topics]
    settings = dict(item.split("=", 1) for item in args.producer)
    producer = Producer({"bootstrap.servers": args.bootstrap, **settings})
    failures: list[str] = []

    def on_delivery(err: object, _msg: object) -> None:
        if err is not None and len(failures) < 5:
            failures.append(str(err))

    value = os.urandom(args.size)
    window = args.window
    sent = in_window = 0
    began = time.monotonic()
    stop_at = began + args.seconds if args.seconds else float("inf")
    while (not args.records or sent < args.records) and time.monotonic() < stop_at:
        due = args.records or sent + 10_000
        if args.rate:
            due = int((time.monotonic() - began) * args.rate)
        while sent < due and (not args.records or sent < args.records):
            topic, partition = targets[sent % len(targets)]
            stamp = int(time.time() * 1000)
            try:
                key = str(sent).encode() if args.keys else None
                producer.produce(topic, value, key, partition=partition, timestamp=stamp, on_delivery=on_delivery)
            except BufferError:
                producer.poll(0.01)
                continue
            except KafkaException as exc:
                raise SystemExit(f"produce failed: {exc}") from exc
            sent += 1
            if window is not None and window[0] <= stamp < window[1]:
                in_window += 1
        producer.poll(0)
        if args.rate:
            time.sleep(PACE_S)
    left = producer.flush(args.flush_timeout)
    if left or failures:
        raise SystemExit(f"{left} records not acknowledged; errors: {failures}")
    return {"sent": sent, "in_window": in_window}


if __name__ == "__main__":
    print(json.dumps(run(sys.argv[1:])), flush=True)
