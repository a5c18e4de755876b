"""Entry point of `strait-heartbeat` (also `python -m services.heartbeat`)."""

from services.heartbeat.service import build
from services.heartbeat.settings import HeartbeatSettings
from shared.runner import run_service


def main() -> None:
    """Run heartbeat until SIGTERM/SIGINT."""
    run_service("strait-heartbeat", build, HeartbeatSettings)


if __name__ == "__main__":
    main()
