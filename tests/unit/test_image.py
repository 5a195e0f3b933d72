"""The production image installs what the product imports and nothing for development.

No Docker engine runs on these machines, so the image's inputs are checked instead: the
production lock (`requirements-prod.lock`) pins exactly what the development lock pins for
every package it holds, holds no test or lint tool, and provides every third-party module
the product's code imports; the Dockerfile installs that lock with hashes, copies every
package, runs as a non-root user and checks `/readyz` (docs/operations.md#the-image).
"""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = (ROOT / "Dockerfile").read_text()
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
FIRST_PARTY = {p.rstrip("*") for p in PYPROJECT["tool"]["setuptools"]["packages"]["find"]["include"]} | {"settings"}
# The development tools (pyproject's `dev` extra) and what only they bring in.
DEV_TOOLS = {"pytest", "pytest-asyncio", "pytest-timeout", "hypothesis", "mypy", "ruff", "import-linter"}
DEV_TOOLS |= {"schemathesis", "playwright", "axe-playwright-python", "asyncpg-stubs"}


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _pins(lock: str) -> dict[str, tuple[str, frozenset[str]]]:
    """A lock's packages: name -> (version, hashes)."""
    pins: dict[str, tuple[str, frozenset[str]]] = {}
    current = None
    hashes: set[str] = set()
    for line in (ROOT / lock).read_text().splitlines():
        pinned = re.match(r"^([A-Za-z0-9_.\-]+)==(\S+)", line)
        if pinned:
            if current:
                pins[current] = (pins[current][0], frozenset(hashes))
            current, hashes = _normal(pinned.group(1)), set()
            pins[current] = (pinned.group(2), frozenset())
        hashed = re.search(r"--hash=(sha256:[0-9a-f]{64})", line)
        if hashed:
            hashes.add(hashed.group(1))
    if current:
        pins[current] = (pins[current][0], frozenset(hashes))
    return pins


PROD = _pins("requirements-prod.lock")
DEV = _pins("requirements.lock")


def test_the_production_lock_pins_what_the_development_lock_pins() -> None:
    assert PROD, "the production lock is empty"
    for name, (version, hashes) in PROD.items():
        assert name in DEV, f"{name} is in the production lock only"
        assert DEV[name][0] == version, f"{name}: {version} in production, {DEV[name][0]} in development"
        assert hashes and hashes == DEV[name][1], f"{name}: its hashes differ between the locks"


def test_the_production_lock_holds_no_development_tool() -> None:
    assert not DEV_TOOLS & set(PROD)
    assert set(DEV) >= DEV_TOOLS, "the development lock still has every tool (this test's list is current)"


def test_the_production_lock_names_every_runtime_dependency() -> None:
    for requirement in PYPROJECT["project"]["dependencies"]:
        name = _normal(re.split(r"[\[<>=!~ ;]", requirement, maxsplit=1)[0])
        assert name in PROD, f"{name} (pyproject dependencies) is not in the production lock"


def _imported_modules() -> set[str]:
    """The top-level modules the product's code imports (tests and benchmarks aside)."""
    found: set[str] = set()
    for package in sorted(FIRST_PARTY):
        paths = [ROOT / f"{package}.py"] if package == "settings" else sorted((ROOT / package).rglob("*.py"))
        for path in paths:
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Import):
                    found |= {alias.name.split(".")[0] for alias in node.names}
                elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    found.add(node.module.split(".")[0])
    return found - FIRST_PARTY - set(sys.stdlib_module_names)


def test_the_production_lock_provides_every_module_the_product_imports() -> None:
    """What `pip install -r requirements-prod.lock` brings is enough to serve, speak and hear:
    each third-party module the product imports comes from a distribution in that lock."""
    providers = importlib.metadata.packages_distributions()
    missing = {}
    for module in _imported_modules():
        distributions = {_normal(d) for d in providers.get(module, [])}
        assert distributions, f"{module} is imported but installed by no distribution here"
        if not distributions & set(PROD):
            missing[module] = sorted(distributions)
    assert not missing, f"imported but not in requirements-prod.lock: {missing}"


def test_the_dockerfile_installs_the_production_lock_with_hashes() -> None:
    installs = [line for line in DOCKERFILE.splitlines() if "pip install" in line and "-r " in line]
    assert installs and all("requirements-prod.lock" in line and "--require-hashes" in line for line in installs)
    assert "requirements.lock" not in DOCKERFILE.replace("requirements-prod.lock", "")
    assert "--extra dev" not in DOCKERFILE and "[dev]" not in DOCKERFILE


def test_the_image_ships_compiled_bytecode() -> None:
    # The server never writes bytecode (PYTHONDONTWRITEBYTECODE): without it compiled at build
    # time, every cold start compiles every module it imports (docs/scaling.md#cold-start).
    build = DOCKERFILE.split("\nFROM ", 2)[1]
    assert re.search(r"^\s+UV_COMPILE_BYTECODE=1", build, re.MULTILINE), "the build stage compiles what it installs"
    assert "--no-compile" not in DOCKERFILE


def test_the_dockerfile_copies_every_package_and_runs_unprivileged() -> None:
    for package in FIRST_PARTY - {"settings"}:
        assert re.search(rf"^COPY {package} \./{package}$", DOCKERFILE, re.MULTILINE), f"{package} is not copied"
    users = re.findall(r"^USER (\S+)$", DOCKERFILE, re.MULTILINE)
    assert users and users[-1] not in {"root", "0"}
    assert re.search(r"^HEALTHCHECK .*", DOCKERFILE, re.MULTILINE)
    assert "/readyz" in DOCKERFILE.split("HEALTHCHECK", 1)[1]
    assert 'CMD ["avagenc", "serve"]' in DOCKERFILE  # exec form: the server itself gets SIGTERM
    for secret in ("SESSION_SECRET", "GEMINI_API_KEY", "ADMIN_API_KEY", "METRICS_TOKEN", "ZEP_API_KEY"):
        assert secret not in DOCKERFILE, f"{secret} must come from the deployment, never the image"


def test_the_build_context_leaves_out_state_tests_and_secrets() -> None:
    ignored = set((ROOT / ".dockerignore").read_text().split())
    assert {".state", ".env", ".venv", ".git", "tests", "bench"} <= ignored
