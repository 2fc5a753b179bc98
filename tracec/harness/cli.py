"""``tracec play``: play a capability environment by hand, as the agent."""

from __future__ import annotations

import ast
import difflib
import json
import re
import sys

import click
from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table

from tracec.harness.resolve import LoadError, resolve_env
from tracec.runtime.env import CapabilityEnv, SpecRuntimeError
from tracec.runtime.toolcall import hermes

SYSTEM_CHARS = 700
_SHORTHAND = re.compile(r"^[A-Za-z_]\w*\(")  # name( ... : an attempted tool call
_JSON_NAMES = {"true": True, "false": False, "null": None}

HELP = (
    "Type a tool call — get_order_details(order_id=\"#O1\"), raw JSON or <tool_call>…</tool_call> — "
    "or a message to the user. :tools lists the tools, :quit stops."
)


class InputError(ValueError):
    """A line the player typed that is not a valid tool call."""


def _literal(node: ast.expr) -> object:
    if isinstance(node, ast.Name) and node.id in _JSON_NAMES:
        return _JSON_NAMES[node.id]
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_literal(e) for e in node.elts]
    if isinstance(node, ast.Dict):
        return {_literal(k): _literal(v) for k, v in zip(node.keys, node.values)}  # type: ignore[arg-type]
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, RecursionError, MemoryError):
        raise InputError(f"argument values must be JSON literals, got `{_shown(node)}`") from None
    if value is not None and not isinstance(value, (str, int, float, bool)):  # 1j, {1}, b"", ...
        raise InputError(f"argument values must be JSON literals (string, number, true/false, "
                         f"null, list, object), got `{_shown(node)}`")
    return value


def _shown(node: ast.expr) -> str:
    try:
        text = ast.unparse(node)
    except (RecursionError, ValueError):
        return "a nested expression"
    return text if len(text) <= 80 else text[:77] + "..."


def shorthand_call(line: str) -> tuple[str, dict]:
    """Parse ``name(key=value, ...)`` (Python/JSON literals) into (name, arguments)."""
    try:
        tree = ast.parse(line.strip(), mode="eval")
    except SyntaxError as exc:
        raise InputError(f"not a valid call: {exc.msg}") from None
    call = tree.body
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name):
        raise InputError("expected name(key=value, ...)")
    if call.args:
        raise InputError("pass arguments by name: name(key=value, ...)")
    args = {}
    for kw in call.keywords:
        if kw.arg is None:
            raise InputError("** arguments are not supported")
        args[kw.arg] = _literal(kw.value)
    return call.func.id, args


def to_action(line: str) -> str:
    """The raw assistant turn for what the player typed."""
    text = line.strip()
    if text.startswith(("<tool_call>", "{")):
        return text
    if _SHORTHAND.match(text):
        name, args = shorthand_call(text)
        return hermes(name, args)
    return line.rstrip("\n")


def mistyped_call_hint(line: str, tools: list[str]) -> str | None:
    """A hint when a line sent to the simulated user looks like a tool call gone wrong."""
    text = line.strip()
    if not text or text.startswith(("<tool_call>", "{")) or _SHORTHAND.match(text):
        return None
    first = re.split(r"[\s(:={]", text, maxsplit=1)[0]
    if "tool_call" in text:
        return ("that went to the user as a message: a tool call is <tool_call>{\"name\": …, "
                "\"arguments\": {…}}</tool_call>")
    close = difflib.get_close_matches(first, tools, n=1, cutoff=0.75)
    if close:
        return (f"that went to the user as a message; to call the tool type "
                f"{close[0]}(key=value, …) (:tools lists them)")
    return None


def _tools_table(env: CapabilityEnv) -> Table:
    table = Table(title="tools", show_lines=False)
    table.add_column("tool")
    table.add_column("arguments (* required)")
    table.add_column("writes")
    for name, tool in env.toolbox.tools.items():
        params = tool.parameters.get("properties", {})
        required = set(tool.parameters.get("required", []))
        args = ", ".join(f"{k}{'*' if k in required else ''}: {v.get('type', 'any')}" for k, v in params.items())
        table.add_row(name, args, "yes" if tool.writes else "")
    return table


def _breakdown_table(bd: dict) -> Table:
    table = Table(title="reward", show_header=False)
    table.add_column("key")
    table.add_column("value")
    for k, v in bd.items():
        table.add_row(k, escape(json.dumps(v) if not isinstance(v, str) else v))
    return table


@click.command("play")
@click.argument("env_ref", metavar="ENV")
@click.option("--seed", default=0, show_default=True, type=int, help="Episode seed.")
@click.option("--task", default=None, help="Force a task of the capability.")
@click.option("--hint", is_flag=True, help="Show the expert hint (also in the system prompt).")
@click.option("--envs-dir", default="generated_envs", show_default=True,
              help="Compiled env folder where names and gym ids are looked up first.")
def play_cmd(env_ref: str, seed: int, task: str | None, hint: bool, envs_dir: str) -> None:
    """Play ENV (a capability name, gym id, or generated module path) as the agent."""
    try:
        cls = resolve_env(env_ref, envs_dir).cls
    except LoadError as exc:
        raise click.ClickException(str(exc)) from None
    env = cls()
    options = {"hint": hint} | ({"task": task} if task else {})
    try:
        obs, info = env.reset(seed=seed, options=options)
    except (SpecRuntimeError, ValueError) as exc:
        raise click.ClickException(str(exc)) from None
    console = Console(highlight=False)
    system = info["messages"][0]["content"]
    abridged = system if len(system) <= SYSTEM_CHARS else system[:SYSTEM_CHARS] + " …"
    console.print(Panel(escape(abridged), title=f"system ({env.capability.name}, task {info['task']}, seed {seed})"))
    console.print(_tools_table(env))
    if hint and info["hint"]:
        console.print(f"[bold yellow]hint:[/] {escape(info['hint'])}")
    console.print(f"[dim]{escape(HELP)}[/]")
    console.print(f"[bold cyan]user>[/] {escape(obs)}")
    stdin = sys.stdin
    turns = 0
    while True:
        click.echo("agent> ", nl=False)
        line = stdin.readline()
        if not line:
            console.print("\n[yellow]input ended before the episode did[/]")
            return
        cmd = line.strip()
        if cmd in {":q", ":quit", ":exit"}:
            console.print("[yellow]stopped[/]")
            return
        if cmd == ":tools":
            console.print(_tools_table(env))
            continue
        if cmd in {":help", ":h"}:
            console.print(escape(HELP))
            continue
        try:
            action = to_action(line)
        except InputError as exc:
            console.print(f"[red]cannot read that tool call:[/] {escape(str(exc))}")
            continue
        except (RecursionError, MemoryError, ValueError, TypeError):  # one bad line, not the session
            console.print("[red]cannot read that tool call:[/] nested too deeply or not a JSON "
                          "literal; try again (:help)")
            continue
        hint = mistyped_call_hint(action, list(env.toolbox.tools))
        if hint:
            console.print(f"[yellow]hint:[/] {escape(hint)}")
        obs, reward, terminated, truncated, info = env.step(action)
        turns += 1
        is_user = info["messages"][-1]["role"] == "user"
        who = "[bold cyan]user>[/]" if is_user else "[bold magenta]tool>[/]"
        if obs:
            console.print(f"{who} {escape(obs)}")
        if terminated or truncated:
            end = "truncated at max_turns" if truncated else f"ended by {info['reward_breakdown']['ended_by']}"
            console.print(f"[bold]episode over after {turns} turns ({end}): reward {reward:g}[/]")
            console.print(_breakdown_table(info["reward_breakdown"]))
            return
