"""``python -m memory_forest``: the same entry point as the ``memory-forest`` script."""

from .cli import main

main()
