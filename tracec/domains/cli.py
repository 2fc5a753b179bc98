"""``tracec describe DOMAIN``: what a spec can use in a domain."""

from __future__ import annotations

import json

import click

from tracec.core.diagnostics import did_you_mean
from tracec.domains import DOMAIN_MODULES, get_domain


@click.command("describe")
@click.argument("domain")
@click.option("--json", "as_json", is_flag=True, help="Print the contract as JSON.")
def describe_cmd(domain: str, as_json: bool) -> None:
    """Show DOMAIN's contract: tools (argument types, required flags, enums), entity kinds
    (fields, references, enums, what each generator fixes or adds) and Python functions.

    DOMAIN is one of: airline, retail, toolsandbox.
    """
    from tracec.domains.describe import describe, describe_text

    if domain not in DOMAIN_MODULES:
        hint = did_you_mean(domain, DOMAIN_MODULES) or ""
        raise click.ClickException(
            f"unknown domain {domain!r} (domains: {', '.join(DOMAIN_MODULES)}){' ' + hint if hint else ''}")
    dom = get_domain(domain)
    if as_json:
        click.echo(json.dumps(describe(dom), indent=2))
    else:
        click.echo(describe_text(dom), nl=False)
