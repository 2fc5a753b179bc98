"""A drawn record the gold writes that the user's words never identify (C185, error).

A `pick` draws one of several records at random (`let target = pick(w for w in
values(prod.variants) if ...)`); when a gold write passes it (`new_item_ids =
[target.item_id]`), only the user can say which one they mean: their text (or a scripted reply)
must read it, or a `let` computed from it (`{fmt(values(target.options))}`, `{named}` of
`owner.payment_methods[pm]`). A text that describes another record instead (the item's own
options) leaves the agent to guess. Judged from the spec; at the `user` text.
"""

from __future__ import annotations

from tracec.checks.blame import cone, names
from tracec.checks.check import Check, RunContext
from tracec.lang import ast as A

_DRAWS = {"pick", "sample", "shuffle"}


def _drawn(value: object) -> bool:
    """A `let` whose value is itself a random draw (`pick(...)`), not one computed from it."""
    return isinstance(value, (A.Call, A.CallGen)) and value.func in _DRAWS


class UnsaidDraws(Check):
    """C185 from the spec; findings go to ``log``."""

    name = "drawn records the user never identifies"
    codes = ("C185",)

    def __init__(self, run: RunContext) -> None:
        super().__init__(run)
        self._reported: set[str] = set()

    def start(self) -> None:
        cap = self.where.ast
        for t in (cap.tasks if cap is not None else []):
            ts = self.where.tasks.get(t.name)
            if t.user is None or ts is None or ts.user is None:
                continue
            lets = {let.name: let.value for let in t.lets}
            said = names(t.user) | {n for r in t.replies for n in names(r.text)}
            # every `let` the user's words read, and all those they are computed from
            known = said | {up for n in said if n in lets for up in cone(t, A.Name(id=n))}
            for call in A.gold_calls(t.gold):
                for kw in call.args:
                    for p in cone(t, kw.value):
                        if p in known or not _drawn(lets.get(p)) or p in self._reported:
                            continue
                        if not any((isinstance(x, A.Attr) and isinstance(x.obj, A.Name)
                                    and x.obj.id == p) or (isinstance(x, A.Name) and x.id == p)
                                   for x in A.walk(kw.value)):
                            continue  # passed through another `let`: judged there
                        self._reported.add(p)
                        self.log.add(f"C185:{t.name}:{p}", "error", "C185",
                                     f"task `{t.name}`: the gold call `{call.name}` passes "
                                     f"`{kw.name}` from `{p}`, a record `let {p}` draws at random, "
                                     "but the user's words never say which one they mean: the "
                                     "agent can only guess", ts.user, task=t.name,
                                     hint=f"let the user's text name `{p}` (its id or the "
                                          "fields that tell it from the others)")
