"""Only the edge speaks HTTP: no module of a domain imports FastAPI or Starlette.

import-linter checks the same rule in `scripts/check`; this test keeps it in the test run
too, read straight from the source (every `import` and `from … import`, type-only and
function-local ones included), so a domain that reaches for a router fails here.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOMAINS = ("chat", "agents", "ledger", "reminders", "database", "scenarios")
EDGE_LIBRARIES = ("fastapi", "starlette")


def imported_top_names(source: str) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("domain", DOMAINS)
def test_no_domain_module_imports_fastapi_or_starlette(domain: str) -> None:
    modules = sorted((ROOT / domain).rglob("*.py"))
    assert modules, f"{domain}/ has no modules: the walk is looking in the wrong place"
    offenders = [
        f"{path.relative_to(ROOT)} imports {name}"
        for path in modules
        for name in sorted(imported_top_names(path.read_text(encoding="utf-8")) & set(EDGE_LIBRARIES))
    ]
    assert offenders == []


def test_the_walk_sees_every_kind_of_import() -> None:
    source = "import fastapi.routing\nfrom starlette.responses import JSONResponse\ndef f():\n    import fastapi\n"
    assert imported_top_names(source) == {"fastapi", "starlette"}
