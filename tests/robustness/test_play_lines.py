"""`tracec play`: one bad line says what is wrong and the session goes on."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from tracec.cli import cli

BAD = ["f(x=1j)", "f(x={1, 2})", "f(x=b'1')", "f(x=...)", "f(x=" + "-" * 3000 + "1)",
       "f(x={[1]: 2})"]


@pytest.mark.parametrize("line", BAD)
def test_a_bad_line_does_not_end_the_session(line):
    res = CliRunner().invoke(cli, ["play", "reservation_lookup_compact", "--seed", "1"],
                             input=f"{line}\n:tools\n:q\n")
    assert res.exit_code == 0, res.output[-500:]
    assert "cannot read that tool call:" in res.output
    assert "tracec bug" not in res.output and "Error:" not in res.output
    after = res.output.split("cannot read that tool call:")[1]
    assert "get_reservation_details" in after and "stopped" in after  # :tools and :q still ran
