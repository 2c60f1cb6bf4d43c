"""The write path: every command that changes canonical files.

One transaction engine (``transaction``) runs every writer: lock, recovery
of an interrupted transaction (``journal``), preconditions against the disk
(``view``), staging, a local validate + audit of the result (``check.check_staged``), the
write itself, the index update and the receipt (``receipts``). The modules
named after commands (``capture``, ``remember``, ``daily``, ``structured``,
``promote``, ``supersede``) only decide which bytes to stage.
"""
