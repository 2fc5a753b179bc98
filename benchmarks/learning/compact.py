"""Compact variants of compiled airline envs for the learning benchmark.

Until the spec language has its own prompt budget (``tools [...]``, ``policy sections [...]``),
this derives a compact env from a compiled one: the agent is shown only the tools the spec's gold
actions use (exact names and JSON schemas of the domain, so what is learned transfers) and a short
excerpt of the airline policy. Worlds, tasks, users and rewards are the compiled env's own.
"""

from __future__ import annotations

from dataclasses import replace

from tracec.runtime.env import Capability

POLICY = """# Airline Agent Policy

The current time is 2024-05-15 15:00:00 EST.

As an airline agent, you help users with their flights and reservations.

You should not provide any information, knowledge, or procedures not provided by the user or available tools. Look facts up with the tools; never guess them.

You should only make one tool call at a time, and if you make a tool call, you should not respond to the user simultaneously. If you respond to the user, you should not make a tool call at the same time."""


def compact(cap: Capability, tools: list[str]) -> Capability:
    """``cap`` showing only ``tools`` and the policy excerpt (named ``<name>_compact``)."""
    domain = cap.domain
    missing = [t for t in tools if t not in domain.tools]
    if missing:
        raise ValueError(f"{cap.name}: no tools {missing} in domain {domain.name}")
    small = replace(domain, policy=POLICY, tools={t: domain.tools[t] for t in tools})
    return replace(cap, name=f"{cap.name}_compact", domain=small)
