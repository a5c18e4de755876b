"""Entry point of the `strait` command."""

from services.cli.app import app


def main() -> None:
    """Run the `strait` command."""
    app()


if __name__ == "__main__":
    main()
