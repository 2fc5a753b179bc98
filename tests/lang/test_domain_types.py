"""Typed domain contracts: references navigate, enums are checked, records are not text."""

from __future__ import annotations

import random

import pytest

from tracec.compiler.api import compile_text
from tracec.core.types import EntityT, ListT, MapT, ObjT
from tracec.domains import DOMAIN_MODULES, get_domain
from tracec.harness.resolve import env_class

RETAIL = '''capability exchange_demo {
  description "Exchange a delivered item."
  domain retail
  seed {
    users    = user[2..3]
    products = product[3..4]
    orders   = order[3..5] { status = "delivered", user_id = pick(users).user_id }
  }
  task exchange {
    let ord   = pick(orders)
    let item  = pick(ord.items)
    let other = pick(w for w in values(item.product.variants) if w.item_id != item.item_id and w.available and w.price <= item.price)
    let owner = ord.user
    user "Hi, I'm {owner.name.first_name}. Swap {item.name} in {ord.order_id} for item {other.item_id}."
    gold {
      exchange_delivered_order_items(order_id = ord.order_id, item_ids = [item.item_id], new_item_ids = [other.item_id], payment_method_id = ord.payment_history[0].payment_method_id)
    }
    communicate item.product.name
  }
  reward {
    1.0 when state_matches and communicated()
    0.0 otherwise
  }
}
'''

AIRLINE = '''capability legs_demo {
  description "Read a flight of a reservation."
  domain airline
  seed {
    flights = flight[3..4]
    reservations = reservation[2..3]
  }
  task leg_status {
    let r   = pick(reservations)
    let leg = r.flights[0]
    let st  = leg.flight.dates[leg.date].status
    user "What is the status of flight {leg.flight_number} on {leg.date}?"
    gold { get_flight_status(flight_number = leg.flight_number, date = leg.date) }
    communicate st
  }
  reward {
    1.0 when progress == 1 and communicated()
    0.0 otherwise
  }
}
'''


def _env(text: str):
    result = compile_text(text, "specs/demo.tracec")
    assert result.ok, result.rendered
    return env_class(result.module)


def test_reference_navigation_retail() -> None:
    cls = _env(RETAIL)
    env = cls()
    for seed in range(12):
        env.reset(seed=seed)
        v = env.instance.values
        item, o = v["item"], v["ord"]
        product = env.initial_db["products"][item["product_id"]]
        assert v["other"]["item_id"] in product["variants"]
        assert v["owner"] is env.initial_db["users"][o["user_id"]]
        assert list(env.instance.communicate.values()) == [product["name"]]


def test_reference_navigation_airline() -> None:
    cls = _env(AIRLINE)
    env = cls()
    for seed in range(12):
        env.reset(seed=seed)
        leg = env.instance.values["leg"]
        flight = env.initial_db["flights"][leg["flight_number"]]
        assert env.instance.values["st"] == flight["dates"][leg["date"]]["status"]


def test_reference_code_is_a_lookup() -> None:
    code = compile_text(RETAIL, "specs/demo.tracec").code
    assert 'rt.ref(db, "products", item["product_id"])' in code
    assert 'rt.ref(db, "users", ord["user_id"])' in code


@pytest.mark.parametrize("bad, message", [
    ('status = "delivered"', '"Delivered" is not a value of order.status'),
    ("communicate item.product.name", "`communicate` of a whole product"),
    ("{item.name} in", "a whole order_item in text"),
])
def test_typed_mistakes_are_located(bad: str, message: str) -> None:
    broken = {
        'status = "delivered"': RETAIL.replace('status = "delivered"', 'status = "Delivered"'),
        "communicate item.product.name": RETAIL.replace("communicate item.product.name",
                                                        "communicate item.product"),
        "{item.name} in": RETAIL.replace("{item.name} in", "{item} in"),
    }[bad]
    result = compile_text(broken, "specs/demo.tracec")
    assert not result.ok
    assert message in result.rendered, result.rendered
    assert "specs/demo.tracec:" in result.rendered


def test_enum_typo_in_tool_argument() -> None:
    spec = AIRLINE.replace(
        "gold { get_flight_status(flight_number = leg.flight_number, date = leg.date) }",
        'gold { search_direct_flight(origin = "SFO", destination = "JFK", date = leg.date) }\n'
        '    forbid book_reservation(cabin = "Economy")')
    result = compile_text(spec, "specs/demo.tracec")
    assert not result.ok
    assert '"Economy" is not a value of argument `cabin` of `book_reservation`' in result.rendered
    assert "did you mean `economy`?" in result.rendered


@pytest.mark.parametrize("name", sorted(DOMAIN_MODULES))
def test_schema_names_real_fields(name: str) -> None:
    """Every reference and enum of a domain names a field its layout has."""
    domain = get_domain(name)
    types: dict[str, dict] = {k: dict(e.fields) for k, e in domain.entities.items()}

    def walk(t) -> None:
        if isinstance(t, ObjT):
            types[t.name] = t.field_map()
            for _, sub in t.fields:
                walk(sub)
        elif isinstance(t, (ListT,)):
            walk(t.elem)
        elif isinstance(t, MapT):
            walk(t.value)

    for e in domain.entities.values():
        for t in e.fields.values():
            walk(t)
    for tname, refs in domain.schema.refs.items():
        assert tname in types, tname
        for ref in refs.values():
            assert ref.field in types[tname], (tname, ref.field)
            assert ref.name not in types[tname], f"{tname}.{ref.name} hides a field"
            assert ref.target in domain.entities
    for tname, enums in list(domain.schema.enums.items()) + list(domain.schema.keys.items()):
        for fname in enums:
            assert fname in types[tname], (tname, fname)


@pytest.mark.parametrize("name", sorted(DOMAIN_MODULES))
def test_generated_worlds_respect_the_schema(name: str) -> None:
    """Generated records only hold enum values, and every reference resolves."""
    domain = get_domain(name)
    schema = domain.schema
    for seed in range(15):
        rng = random.Random(seed)
        db = domain.empty_db()
        for kind in domain.entities.values():
            for _ in range(1 if kind.singleton else 3):
                kind.add(db, kind.generate(rng, db, {}))

        def check(record, tname: str) -> None:
            for fname, allowed in schema.enums.get(tname, {}).items():
                value = record.get(fname)
                assert value is None or value in allowed, (tname, fname, value)
            for fname, allowed in schema.keys.get(tname, {}).items():
                assert set(record.get(fname) or {}) <= set(allowed), (tname, fname)
            for ref in schema.refs.get(tname, {}).values():
                rid = record.get(ref.field)
                if rid is None and ref.nullable:
                    continue
                coll = domain.entities[ref.target].collection
                assert rid in db[coll], (tname, ref.field, rid)

        def walk(value, t) -> None:
            if isinstance(t, ObjT) and isinstance(value, dict):
                check(value, t.name)
                for fname, sub in t.fields:
                    walk(value.get(fname), sub)
            elif isinstance(t, ListT) and isinstance(value, list):
                for x in value:
                    walk(x, t.elem)
            elif isinstance(t, MapT) and isinstance(value, dict):
                for x in value.values():
                    walk(x, t.value)

        for kind in domain.entities.values():
            for record in kind.records(db):
                check(record, kind.name)
                for fname, t in kind.fields.items():
                    walk(record.get(fname), t)
