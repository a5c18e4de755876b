"""Entry point of `strait-audit` (also `python -m services.audit`)."""

from services.audit.service import build
from services.audit.settings import AuditSettings
from shared.runner import run_service


def main() -> None:
    """Run the audit until SIGTERM/SIGINT."""
    run_service("strait-audit", build, AuditSettings)


if __name__ == "__main__":
    main()
