"""Every error the agents domain raises on purpose names itself with a stable `type`, the
same attribute as every other domain's errors (it was once `code`), and the HTTP edge
answers a link error with that type."""

from __future__ import annotations

import json
from collections.abc import Iterator

from agents import LinkError
from agents.errors import AgentError  # the package loads every module, so every error class
from web import on_domain_error


def _subclasses(base: type[AgentError]) -> Iterator[type[AgentError]]:
    for cls in base.__subclasses__():
        yield cls
        yield from _subclasses(cls)


def test_each_agent_error_has_its_own_stable_type() -> None:
    errors = [AgentError, *_subclasses(AgentError)]
    assert len(errors) > 10
    types = [cls.__dict__.get("type") for cls in errors]
    assert all(isinstance(t, str) and t for t in types), dict(zip(errors, types, strict=True))
    assert len(set(types)) == len(types), "each error class has its own type"
    assert not any(hasattr(cls, "code") for cls in errors), "`code` is the old name of `type`"


async def test_a_link_error_is_answered_with_its_type() -> None:
    rejected = next(cls for cls in _subclasses(LinkError) if cls.type == "link_rejected")
    response = await on_domain_error(None, rejected("The provider refused the code."))  # type: ignore[arg-type]
    assert response.status_code == 400
    assert json.loads(bytes(response.body))["type"] == "link_rejected"
