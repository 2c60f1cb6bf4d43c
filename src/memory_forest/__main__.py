"""``python -m memory_forest``: the same command line as the ``memory-forest`` script."""

from .cli import main

if __name__ == "__main__":
    main()
