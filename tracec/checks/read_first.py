"""A gold write on a record the gold never read (C197, error): "read the reservation before
acting"; a gold write before the user is authenticated (C188, error).

A write whose tool a policy rule of the domain's contract guards by the state of the record it
names (`booked within the last 24 hours, ...` for `cancel_reservation`; rules the API does not
enforce) can only be judged by an agent that has looked at that record: the gold must make
an earlier call with the record's id (`get_reservation_details(reservation_id = X)` before
`cancel_reservation(reservation_id = X)`). A gold that writes first teaches the agent to act
without checking. Judged on the first instance of each task; at the write call.

C188: in a domain whose policy has the agent authenticate the user before acting (retail: "locate
their user id via email, or via name + zip code ... even when the user already provides the
user id"; ``Schema.auth_tools``), a gold write that no authenticating gold call precedes. At the
gold's first call, where the authentication belongs.
"""

from __future__ import annotations

from typing import Any

from tracec.checks.check import Check, InstanceContext, RunContext


class ReadFirst(Check):
    """C197 over the first instance of each task; findings go to ``log``."""

    name = "records read and users authenticated before the gold writes"
    codes = ("C197", "C188")

    def __init__(self, run: RunContext) -> None:
        super().__init__(run)
        # tool -> the id arguments its policy rules read (a spec with its own inline policy
        # replaces the domain's rules, as for C141)
        inline = getattr(self.cap, "policy", None) is not None
        rules = {} if inline else (getattr(self.cap.domain.schema, "rules", {}) or {})
        self.guards = {tool: {r.arg for r in items} for tool, items in rules.items()}
        self.auth = set(() if inline else getattr(self.cap.domain.schema, "auth_tools", ()) or ())

    def instance(self, ctx: InstanceContext) -> None:
        inst = ctx.inst
        if not self.first_of_task(inst.task):
            return
        writes = ctx.env.toolbox.writes
        counts: dict[str, int] = {}
        for n, call in enumerate(inst.gold):
            nth = counts.get(call.name, 0)
            counts[call.name] = nth + 1
            if call.name not in writes:
                continue
            if self.auth and not any(c.name in self.auth for c in inst.gold[:n]) \
                    and self.first_of_task(f"auth:{inst.task}"):
                self.log.add(f"C188:{inst.task}", "error", "C188",
                             f"task `{inst.task}`: the gold call `{call.name}` writes before any "
                             f"gold call authenticates the user ({' or '.join(sorted(self.auth))}; "
                             f"seed {ctx.seed}): the policy has the agent authenticate first, "
                             "even when the user gives their user id",
                             self.where.gold(inst.task, inst.gold[0].name, 0), task=inst.task,
                             seed=ctx.seed,
                             hint="let the user give their email (or name and zip) and call the "
                                  "authenticating tool first")
            for arg in sorted(self.guards.get(call.name, ())):
                rid = (call.args or {}).get(arg)
                if not isinstance(rid, str) or _passed(inst.gold[:n], rid):
                    continue
                self.log.add(f"C197:{inst.task}:{call.name}", "error", "C197",
                             f"task `{inst.task}`: the gold call `{call.name}` changes "
                             f"{arg} {rid!r}, which no earlier gold call reads (seed {ctx.seed}): "
                             "the policy's rules for that call depend on the record's state, "
                             "and the gold acts without looking at it",
                             self.where.gold(inst.task, call.name, nth), task=inst.task,
                             seed=ctx.seed,
                             hint=f"read the record first (a details call with `{arg}`), as "
                                  "the agent must")
                return


def _passed(calls: Any, rid: str) -> bool:
    """An earlier call passed ``rid`` as an argument (a details read)."""
    return any(rid == v for c in calls for v in (c.args or {}).values())
