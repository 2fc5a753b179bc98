"""`tracec describe DOMAIN`: the contract a spec author (or an LLM) writes against."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from tracec.analysis.propose import domain_tools_text
from tracec.cli import cli
from tracec.domains import DOMAIN_MODULES, get_domain
from tracec.domains.describe import describe, describe_text


@pytest.mark.parametrize("name", sorted(DOMAIN_MODULES))
def test_describe_json_covers_every_tool_and_entity(name: str) -> None:
    domain = get_domain(name)
    res = CliRunner().invoke(cli, ["describe", name, "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert [t["name"] for t in data["tools"]] == list(domain.tools)
    assert [e["name"] for e in data["entities"]] == list(domain.entities)
    for tool in data["tools"]:
        schema = domain.tools[tool["name"]].parameters
        assert {a["name"] for a in tool["arguments"]} == set(schema.get("properties", {}))
        assert {a["name"] for a in tool["arguments"] if a["required"]} == set(schema.get("required", []))
    for entity in data["entities"]:
        assert entity["generator"], f"{name}.{entity['name']} has no generator notes"
        assert [f["name"] for f in entity["fields"]] == list(domain.entities[entity["name"]].fields)
    assert describe(domain) == data  # deterministic


def test_describe_text_shows_types_refs_and_enums() -> None:
    text = describe_text(get_domain("airline"))
    assert "book_reservation(" in text and 'cabin: string in ("business", "economy", "basic_economy")' in text
    assert "- .user -> user (the user whose id is reservation.user_id)" in text
    assert "  - .flight -> flight (the flight whose id is reservation_flight.flight_number)" in text
    assert 'membership: str one of "regular", "silver", "gold"' in text
    assert "Generator: Fixed `user_id`" in text
    retail = describe_text(get_domain("retail"))
    assert "- .product -> product" in retail and '"delivered"' in retail


def test_describe_optional_arguments_marked() -> None:
    text = describe_text(get_domain("toolsandbox"))
    assert "?" in text.split("## Entities")[0]


def test_describe_unknown_domain_is_one_line() -> None:
    res = CliRunner().invoke(cli, ["describe", "airlin"])
    assert res.exit_code != 0
    assert "unknown domain 'airlin'" in res.output and "did you mean `airline`?" in res.output
    assert "Traceback" not in res.output


def test_propose_prompt_gets_the_contract() -> None:
    assert domain_tools_text("retail") == describe_text(get_domain("retail"))


def test_describe_lists_the_policy_sections() -> None:
    data = describe(get_domain("airline"))
    assert "Cancel flight" in data["policy_sections"] and "User" in data["policy_sections"]
    assert '"Cancel flight"' in describe_text(get_domain("airline"))
    assert describe(get_domain("toolsandbox"))["policy_sections"] == []
