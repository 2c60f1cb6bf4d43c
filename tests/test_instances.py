"""instances: which years, numbers and names a text holds, and when a fact is another record."""

from __future__ import annotations

import pytest

from memory_forest.instances import differs, markers, names_same


def test_markers_are_years_other_numbers_and_names_not_starting_a_sentence():
    found = markers("Grandpa Emil's party on 2026-08-09. Tom turned 7; Dr. Okafor came.")
    assert found == {"years": {"2026"}, "numbers": {"8", "9", "7"},
                     "names": {"emil", "okafor"}}
    # A capital that starts the text, a sentence or a line names nothing ("Grandpa" and
    # "Tom" above, "Boiler" here), nor does a title ("Dr."); digits inside a word (a
    # model number) are part of the word.
    assert markers("Boiler B12 ok.\nVaillant serviced") == {
        "years": set(), "numbers": set(), "names": set()}
    assert markers("no 007 here")["numbers"] == {"7"}


@pytest.mark.parametrize(("fact", "title", "expected"), [
    ("Kimchi batch 8 tasted sour on day 12.", "Kimchi batch 7", {"numbers": ["7"]}),
    ("Boiler service 2026 booked with Marek.", "Boiler service 2025", {"years": ["2025"]}),
    ("Incident 2026-02: the primary failed over again.", "Incident 2025-11 database failover",
     {"years": ["2025"], "numbers": ["11"]}),
    ("Called grandpa and Emil about the birthday.", "Birthday of Grandma Rosa",
     {"names": ["grandma", "rosa"]}),
    # The record's markers and more: the same instance, in detail.
    ("Kimchi batch 7 tasted sour on day 12.", "Kimchi batch 7", {}),
    ("Called Grandma Rosa: she turned 81.", "Birthday of Grandma Rosa", {}),
    # No marker of a kind: nothing is said about it.
    ("The boiler pressure dropped again.", "Boiler service 2025", {}),
    ("Tasted sour.", "Kimchi batch 7", {}),
    ("Kimchi batch 8 is ready.", "Sourdough starter", {}),
])
def test_a_fact_differs_when_it_names_another_marker_of_a_kind_the_record_has(fact, title,
                                                                              expected):
    assert differs(fact, title) == expected


def test_names_same_needs_a_marker_the_fact_shares():
    assert names_same("Kimchi batch 8 tasted sour", "Kimchi batch 8")
    assert not names_same("Kimchi batch 8 tasted sour", "Kimchi batch 7")
    assert not names_same("Kimchi batch 8 tasted sour", "Sourdough starter")  # names none
    assert not names_same("The kimchi tasted sour", "Kimchi batch 8")  # the fact names none
