"""Entry point of `strait-checkpoint` (also `python -m services.checkpoint`)."""

from services.checkpoint.service import build
from services.checkpoint.settings import CheckpointSettings
from shared.runner import run_service


def main() -> None:
    """Run checkpoint until SIGTERM/SIGINT."""
    run_service("strait-checkpoint", build, CheckpointSettings)


if __name__ == "__main__":
    main()
