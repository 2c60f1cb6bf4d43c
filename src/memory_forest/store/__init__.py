"""The index store: every SQL statement run against the index and the vectors file.

The column order is written once, here, and callers read rows by name;
``index.py`` decides what a build changes and when, this package only says
how that is spelled in SQL. It is split by what each part owns, so that a
turn loads the reads it makes and nothing a build writes with:

- ``schema``: the layout, its version, ``meta``, soundness probes, path keys;
- ``lookups``: retrieval's reads (every turn);
- ``filerows``: what the index knows of each file (writers, builds, stats);
- ``statements``: a build's writes;
- ``vectorfile``: semantic ranking's chunk vectors, in their own file.
"""
