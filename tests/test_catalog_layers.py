"""The catalog names code as ``"module:attribute"`` strings, which no import checker sees.

``lint-imports`` checks the layering declared in ``pyproject.toml`` on every
real import; these tests hold the strings to the same contract: each one
resolves to something that exists, in a module of the catalog's own layer or
below it. A command that is a surface itself has no call in the catalog, and
the command line runs it.
"""

from __future__ import annotations

import re
import tomllib
from importlib import import_module
from pathlib import Path

import pytest

from memory_forest import catalog, cli, schemas

REPO = Path(__file__).resolve().parents[1]
CATALOG_DIR = REPO / "src" / "memory_forest" / "catalog"
PACKAGE = "memory_forest"


def _layers() -> list[set[str]]:
    """The layers contract of pyproject.toml, top first: the module names of each layer."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    (contract,) = [found for found in contracts if found["type"] == "layers"]
    assert contract["containers"] == [PACKAGE]
    return [{name.strip() for name in re.split(r"[:|]", layer)} for layer in contract["layers"]]


LAYERS = _layers()


def layer_of(module: str) -> int:
    """How far down the module's layer is (0 is the surfaces); a module no layer holds fails."""
    top = module.removeprefix(f"{PACKAGE}.").split(".")[0]
    found = [depth for depth, names in enumerate(LAYERS) if top in names]
    assert len(found) == 1, f"{module} is in {len(found)} layers of pyproject.toml"
    return found[0]


CATALOG_LAYER = layer_of("memory_forest.catalog")


def points_up(reference: str) -> bool:
    return layer_of(reference.partition(":")[0]) < CATALOG_LAYER


def declared_references() -> set[str]:
    """Every ``module:attribute`` string the declarations hold, wherever it sits."""
    found: set[str] = set()
    for operation in catalog.operations():
        if operation.call is not None:
            found.add(operation.call)
        if operation.result is not None:
            home = "schemas" if operation.result in schemas.PROPOSAL_RESULTS else "results"
            found.add(f"{PACKAGE}.{home}:{operation.result}")
        for param in (*operation.params, catalog.ROOT):
            values = (param.reader, param.parser, param.tool_type, param.tool_max,
                      param.max_bytes, param.choices, *param.schema.values())
            found.update(value for value in values
                         if isinstance(value, str) and value.startswith(f"{PACKAGE}."))
    return found


REFERENCES = sorted(declared_references())


def test_the_declarations_hold_every_reference_the_catalog_source_spells():
    """A reference in some new attribute the collection above misses would go unchecked."""
    spelled = set()
    for path in CATALOG_DIR.glob("*.py"):
        spelled.update(re.findall(r"\"(memory_forest(?:\.\w+)+:\w+)\"", path.read_text("utf-8")))
    assert spelled <= set(REFERENCES), sorted(spelled - set(REFERENCES))
    assert len(REFERENCES) > 30


@pytest.mark.parametrize("reference", REFERENCES)
def test_each_reference_resolves_at_or_below_the_catalog(reference):
    module, _, attribute = reference.partition(":")
    assert hasattr(import_module(module), attribute), reference
    assert not points_up(reference), f"{reference} names a module above the catalog's layer"


def test_a_reference_to_a_surface_counts_as_pointing_up():
    """The check above can fail: the surfaces the catalog once named are above it."""
    assert points_up("memory_forest.mcp_server:serve")
    assert points_up("memory_forest.completion:SHELLS")
    assert not points_up("memory_forest.hooks:install")
    assert not points_up("memory_forest.writers.remember:remember")


def test_every_command_without_a_call_is_a_surface_the_command_line_runs():
    surface_run = {operation.name for operation in catalog.operations() if operation.call is None}
    assert surface_run == set(cli.SURFACE_COMMANDS) == {"serve", "watch", "completion"}
    for name in surface_run:
        function = cli.function_of(catalog.by_name()[name])
        function = getattr(function, "func", function)  # watch comes with the CLI's runner
        assert layer_of(function.__module__) < CATALOG_LAYER, \
            f"{name} runs below the surfaces: declare its call in the catalog instead"
        with pytest.raises(LookupError, match="surface"):
            catalog.by_name()[name].function()



# The imports that must never happen, each as (a module of the lower part, one of the upper).
# No forbidden contract repeats them: the layers contract forbids each, and any chain of
# imports that would amount to one, because the upper part sits above the lower.
NEVER = [("safety", "config"),  # ground -> forest files
         ("documents", "store"),  # forest files -> store
         ("store", "operations"), ("index", "maintain"),  # store -> operations
         ("writers", "operations"), ("writers", "sync"),  # writers -> operations
         ("retrieve", "writers"), ("placement", "writers"),  # retrieval -> writers
         ("gate", "cli"), ("catalog", "mcp_server"),  # operations -> surfaces
         ("writers", "render"), ("retrieve", "edge")]  # writers, retrieval -> surfaces


@pytest.mark.parametrize(("lower", "upper"), NEVER, ids=lambda name: name)
def test_each_forbidden_import_is_a_step_up_in_the_contract(lower, upper):
    assert layer_of(f"{PACKAGE}.{lower}") > layer_of(f"{PACKAGE}.{upper}")
