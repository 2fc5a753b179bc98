"""Where a value the agent cannot know (C152) was left out: the user's message, when the value
is the user's own choice.

A gold argument that names a drawn record or key (`reservation_id = r.reservation_id` with `let
r = pick(...)`, `payment_id = card` with `let card = pick(k for k in keys(...))`: which of the
user's reservations, which of their cards) is the user's to give: when nothing the user's text
interpolates reads it (not `{r.reservation_id}`, not `{card}`, nor a `let` built from it: `{named}`
of `owner.payment_methods[pm]`), the mistake is the message that leaves it out, not the call; so is a field of a record whose other fields the user's text lists (`{a.address1},
{a.city}` and no `{a.address2}` while the gold passes `address2 = a.address2`). A value read
from a record that is not drawn (`p.now`, `owner.person_id`) stays at the call.
"""

from __future__ import annotations

from tracec.checks.blame import call_arg, cone, names, task_ast
from tracec.checks.locate import SpecMap
from tracec.checks.variance import field_reads
from tracec.core.diagnostics import Span
from tracec.lang import ast as A


def omitted_choice(where: SpecMap, task: str, tool: str, nth: int, arg: str,
                   id_fields: list[str]) -> tuple[str, Span] | None:
    """(the drawn `let`, the `user` statement's span) when the ``nth`` ``tool`` call's ``arg``
    is a drawn key or a drawn record's id field that the user's text never reads."""
    t = task_ast(where, task)
    ts = where.tasks.get(task)
    expr = call_arg(where, task, tool, nth, arg)
    if t is None or t.user is None or ts is None or ts.user is None:
        return None
    lets = {let.name: let.value for let in t.lets}
    if isinstance(expr, A.Name):
        drawn, fld = expr.id, None
    elif isinstance(expr, A.Attr) and isinstance(expr.obj, A.Name) and expr.name in id_fields:
        drawn, fld = expr.obj.id, expr.name
    elif isinstance(expr, A.Attr) and isinstance(expr.obj, A.Name) and expr.obj.id in lets:
        # a field of a record whose other fields the user's text lists (`{a.address1}, {a.city}`
        # but no `{a.address2}`): the message left that one out
        read = field_reads(t.user, lets)
        if (expr.obj.id, expr.name) not in read and any(n == expr.obj.id for n, _ in read):
            return expr.obj.id, ts.user
        return None
    else:
        return None
    if drawn not in lets or drawn not in {n for n, _ in where.pick_lets(task)}:
        return None
    said = names(t.user)
    if fld is None and (drawn in said or drawn in cone(t, t.user)):
        return None
    if fld is not None and (drawn, fld) in field_reads(t.user, lets):
        return None
    return drawn, ts.user
