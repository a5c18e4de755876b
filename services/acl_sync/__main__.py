"""Entry point of `strait-acl-sync` (also `python -m services.acl_sync`)."""

from services.acl_sync.service import build
from services.acl_sync.settings import AclSyncSettings
from shared.runner import run_service


def main() -> None:
    """Run acl-sync until SIGTERM/SIGINT."""
    run_service("strait-acl-sync", build, AclSyncSettings)


if __name__ == "__main__":
    main()
