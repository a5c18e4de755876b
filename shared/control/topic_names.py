"""Names of Strait's own internal topics, and of the groups and transactional ids its clients use.

Topics all end in `.internal`, so no topic filter ever mirrors them. The reader groups only name clients that
assign partitions themselves: nothing is ever committed under them.
"""

CONTROL_TOPIC = "strait.control.internal"
STATUS_TOPIC = "strait.status.internal"
# Each flow's durable disaster-recovery state and the reports of its failovers and failbacks (shared/dr/records.py).
DR_TOPIC = "strait.dr.internal"
# Made by whichever service of a target cluster starts first: every service reads or writes all three.
COORDINATION_TOPICS = (CONTROL_TOPIC, STATUS_TOPIC, DR_TOPIC)


def progress_topic(source_alias: str) -> str:
    """Where data-mirror keeps its last mirrored source offsets for one source cluster (on the target)."""
    return f"strait.offsets.{source_alias}.internal"


CONTROL_READER_GROUP = "strait-data-mirror-control"
PROGRESS_READER_GROUP = "strait-data-mirror-progress"
STATUS_READER_GROUP = "strait-status-reader"
DR_READER_GROUP = "strait-dr-reader"


def mirror_source_group(flow: str) -> str:
    """The group id a flow's copy tasks read the source under (positions live in the progress topic)."""
    return f"strait-data-mirror.{flow}"


def mirror_transactional_id(flow: str, slot: int) -> str:
    """Stable per (flow, slot): a new copy task of the slot fences any earlier one that may still be open."""
    return f"strait-data-mirror.{flow}.{slot}"


def is_mirror_transactional_id(flow: str, transactional_id: str) -> bool:
    """True when `transactional_id` is one of `flow`'s copy-task slots (any slot number)."""
    prefix = mirror_transactional_id(flow, 0)[:-1]
    return transactional_id.startswith(prefix) and transactional_id[len(prefix) :].isdigit()
