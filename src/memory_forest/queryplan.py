"""QueryPlan: caller-supplied extra probes (translations, synonyms) for ``retrieve``.

A plan is untrusted data. It is parsed strictly: duplicate keys, extra
fields, a wrong schema version, too many probes, too many bytes, non-NFC
text and control characters are each rejected with their own code.
"""

from __future__ import annotations

import unicodedata
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .errors import ForestError
from .jsonio import dumps, load_object

MAX_BYTES = 32 * 1024
DEFAULT_MAX_PROBES = 8
HARD_MAX_PROBES = 16


class Probe(BaseModel):
    """One extra query string, searched like the original query."""

    model_config = ConfigDict(extra="forbid", strict=True)
    query: str = Field(min_length=1, max_length=1000)


class QueryPlan(BaseModel):
    """Extra probes for one retrieve call. Trails found only by probes rank last."""

    model_config = ConfigDict(extra="forbid", strict=True, title="Memory Forest QueryPlan")
    schema_version: Literal[1]
    probes: list[Probe] = Field(max_length=HARD_MAX_PROBES)

    @field_validator("schema_version", mode="before")
    @classmethod
    def _exactly_the_integer(cls, value: object) -> object:
        return exact_integer_version(value)


def exact_integer_version(value: object) -> object:
    """Literal[1] matches by equality, and true == 1.0 == 1 in Python: a plan that
    says true or 1.0 did not say schema version 1."""
    if type(value) is not int:
        raise ValueError("schema_version must be the integer 1")
    return value


def from_value(value: object) -> QueryPlan | None:
    """A plan given as a JSON value (a tool argument), parsed like a plan file."""
    if value is None:
        return None

    return parse(dumps(value))


def parse(raw: bytes | str, max_probes: int = DEFAULT_MAX_PROBES) -> QueryPlan:
    data = load_object(raw, MAX_BYTES, "query_plan", _reject)
    try:
        plan = QueryPlan.model_validate(data)
    except ValidationError as exc:
        raise _from_validation(exc) from None
    limit = min(max(max_probes, 1), HARD_MAX_PROBES)
    if len(plan.probes) > limit:
        raise _reject("query_plan_too_many_probes", f"a query plan has at most {limit} probes")
    for probe in plan.probes:
        _check_text(probe.query)
    return plan


def _check_text(text: str) -> None:
    if any(unicodedata.category(ch) == "Cc" for ch in text):
        raise _reject("query_plan_control_character", "probe text contains a control character")
    if unicodedata.normalize("NFC", text) != text:
        raise _reject("query_plan_not_nfc", "probe text must be NFC-normalized")
    if not text.strip():
        raise _reject("query_plan_empty_probe", "probe text is empty")


def _from_validation(exc: ValidationError) -> ForestError:
    error = exc.errors()[0]
    kind, loc = error["type"], error["loc"]
    if kind == "extra_forbidden":
        return _reject("query_plan_unknown_field", f"unknown field '{loc[-1]}'")
    if loc and loc[0] == "schema_version":
        if kind == "missing":
            return _reject("query_plan_missing_field", "schema_version is required")
        return _reject("query_plan_bad_schema_version", "schema_version must be exactly 1")
    if kind == "missing":
        return _reject("query_plan_missing_field", f"'{loc[-1]}' is required")
    if loc == ("probes",) and kind == "too_long":
        return _reject("query_plan_too_many_probes",
                       f"a query plan has at most {HARD_MAX_PROBES} probes")
    if kind == "string_too_short":
        return _reject("query_plan_empty_probe", "probe text is empty")
    return _reject("query_plan_bad_probe",
                   "probes must be a list of objects of exactly {\"query\": string}")


def _reject(code: str, message: str) -> ForestError:
    return ForestError(code, message, exit_code=2)
