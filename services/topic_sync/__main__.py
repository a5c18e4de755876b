"""Entry point of `strait-topic-sync` (also `python -m services.topic_sync`)."""

from services.topic_sync.service import build
from services.topic_sync.settings import TopicSyncSettings
from shared.runner import run_service


def main() -> None:
    """Run topic-sync until SIGTERM/SIGINT."""
    run_service("strait-topic-sync", build, TopicSyncSettings)


if __name__ == "__main__":
    main()
