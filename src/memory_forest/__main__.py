"""``python -m memory_forest``: the same command line as the ``memory-forest`` script."""

from .warm import main

if __name__ == "__main__":
    main()
