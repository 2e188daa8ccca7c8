"""The `qadi` command: `python -m service` and the console script."""

from service.collector import fewer_collections


def main() -> None:
    """The CLI, its start-up's imports made with fewer collections (service/collector.py)."""
    fewer_collections()
    from service.cli import app  # importing it is most of a command's start-up

    app()


if __name__ == "__main__":
    main()
