"""What every plan model shares: closed, strict objects, and the checked names and texts.

Its own module so that the plan kinds (``plans``) stay one module each can read
whole; ``plans`` re-exports what its callers use.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..queryplan import exact_integer_version
from .receipts import TRANSACTION_ID

MAX_TEXT = 256 * 1024
ENTRY_ID = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"
SHA256 = r"^[0-9a-f]{64}$"
DATE = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"

TransactionId = Annotated[str, Field(pattern=TRANSACTION_ID,
                                     description="Unique per transaction; an exact retry "
                                     "returns the original receipt.")]
EntryId = Annotated[str, Field(pattern=ENTRY_ID, description="A Daily entry id (its ## anchor).")]
Segment = Annotated[str, Field(min_length=1, max_length=200)]
Title = Annotated[str, Field(min_length=1, max_length=200)]
Sha256 = Annotated[str, Field(pattern=SHA256)]
Text = Annotated[str, Field(max_length=MAX_TEXT)]


class _Plan(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class _Versioned(_Plan):
    schema_version: Literal[1]
    transaction_id: TransactionId

    @field_validator("schema_version", mode="before")
    @classmethod
    def _exactly_the_integer(cls, value: object) -> object:
        return exact_integer_version(value)
