"""``python -m memory_forest``: ``entry.main``, the lean gate path, then the full CLI."""

from .entry import main

if __name__ == "__main__":
    main()
