"""The plain-text scan of simple Markdown must agree exactly with the parser."""

from __future__ import annotations

from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from memory_forest import documents

PIECES = st.sampled_from([
    "# ", "## ", "### ", "#", "Title", " ", "  ", "    ", "\t", "\n", "\n\n", "word", "é",
    "[[03 mtm/t/b|Branch]]", "[[02 ltm/t_LTM]]", "[[x#h]]", "[[", "]]", "|", "-", "* ", "1. ",
    "> ", "`", "```", "~~~", "<b>", "\\", "=", "===", "---", "[a]: ", "&amp;", "_", "*x*", "#x",
])


@settings(max_examples=400, deadline=None)
@given(st.lists(PIECES, max_size=40).map("".join))
@example("# Title ##\n\nUp: [[03 mtm/t/b|b]] and [[x]]\n## d-1\ntext [[a]]\n")
@example("#\n## \n#Title\n")
@example("word\n\n  \t[[03 mtm/t/b|Branch]]\n")  # a tab after spaces starts indented code
def test_plain_scan_equals_the_parser(body):
    assume(not documents._needs_parser(body))  # the parser handles the rest anyway
    assert documents._scan_plain(body, 3) == documents._scan_parsed(body, 3)
