"""Target domains: tool sets with the target's exact names and schemas, and world layouts."""

from __future__ import annotations

import importlib

from tracec.domains.base import Domain, EntityKind, Tool, ToolError

__all__ = ["Domain", "EntityKind", "Tool", "ToolError", "get_domain", "DOMAIN_MODULES"]

# domain name -> module that defines ``DOMAIN``
DOMAIN_MODULES: dict[str, str] = {
    "airline": "tracec.domains.airline",
    "retail": "tracec.domains.retail",
    "toolsandbox": "tracec.domains.toolsandbox",
}


def get_domain(name: str) -> Domain:
    """The domain called ``name`` (KeyError if there is none)."""
    module = importlib.import_module(DOMAIN_MODULES[name])
    return module.DOMAIN
