"""Names of Strait's own internal topics; all end in `.internal`, so no topic filter ever mirrors them."""

CONTROL_TOPIC = "strait.control.internal"
STATUS_TOPIC = "strait.status.internal"


def progress_topic(source_alias: str) -> str:
    """Where data-mirror keeps its last mirrored source offsets for one source cluster (on the target)."""
    return f"strait.offsets.{source_alias}.internal"
