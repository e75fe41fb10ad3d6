"""``python -m core.cli``: the ``ragtune`` command."""

from core.cli.command import run

if __name__ == "__main__":
    run()
