"""Entry point of the `strait` command."""

from services.cli.app import app
from shared.kafka.client_logs import quiet_client_info


def main() -> None:
    """Run the `strait` command (its console shows no librdkafka info lines; the demo's neither)."""
    quiet_client_info()
    app()


if __name__ == "__main__":
    main()
