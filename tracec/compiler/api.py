"""Compile specs: text -> AST -> checked AST -> IR -> Python module source (and load it)."""

from __future__ import annotations

import hashlib
import importlib.util
import itertools
import sys
import tempfile
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tracec.compiler import codegen
from tracec.compiler.ir import CapabilityIR
from tracec.compiler.lower import lower
from tracec.core.diagnostics import Diagnostic, Span, SpecError, did_you_mean, render_all
from tracec.domains import DOMAIN_MODULES, Domain, get_domain
from tracec.files import SPEC_BYTES, InputError, decode_bytes, read_bytes
from tracec.lang import fragments
from tracec.lang.parser import parse_source
from tracec.lang.semantics import check
from tracec.lang.variants import variant_capabilities
from tracec.runtime.spans import SOURCE_ATTR

SPEC_SUFFIX = ".tracec"


class CompileFailed(Exception):
    """Raised by `build_modules` when a spec does not compile; str() is the diagnostics."""


@dataclass
class CompileResult:
    path: str
    source: str
    ir: CapabilityIR | None = None
    code: str | None = None
    diagnostics: list[Diagnostic] = field(default_factory=list)
    variants: list[CompileResult] = field(default_factory=list)  # `variant NAME { ... }` envs
    base: CompileResult | None = None  # a variant's: the capability whose module it imports
    _module: types.ModuleType | None = None
    _package: TempPackage | None = None

    @property
    def ok(self) -> bool:
        return self.ir is not None and not any(d.severity == "error" for d in self.diagnostics)

    @property
    def rendered(self) -> str:
        return render_all(self.diagnostics, self.path, self.source) if self.diagnostics else ""

    # the name the propose loop and the docs use
    @property
    def diagnostics_text(self) -> str:
        return self.rendered

    @property
    def module(self) -> types.ModuleType | None:
        """The generated env module, loaded from a private temporary package (None if not ok);
        a variant's module is loaded beside its base's, which it imports."""
        if self._module is None and self.ok and self.code is not None:
            assert self.ir is not None
            if self.base is not None:
                if self.base.module is None:
                    return None
                assert self.base._package is not None
                self._package = self.base._package
            else:
                self._package = TempPackage(f"tracec_spec_{self.ir.name}")
            self._module = self._package.load(self.ir.name, self.code)
            # run-time errors name the spec as the user gave it (tracec.runtime.spans)
            setattr(self._module, SOURCE_ATTR, (self.path, self.source))
        return self._module


def _load_domain(name: str, span: Span) -> tuple[Domain | None, list[Diagnostic]]:
    if name not in DOMAIN_MODULES:
        return None, [Diagnostic(
            message=f"unknown domain `{name}`", span=span, code="E240",
            hint=did_you_mean(name, DOMAIN_MODULES) or f"domains: {', '.join(DOMAIN_MODULES)}",
        )]
    try:
        return get_domain(name), []
    except Exception as exc:  # a broken or missing domain module is not the spec's fault
        return None, [Diagnostic(message=f"domain `{name}` could not be loaded: {exc}",
                                 span=span, code="E241")]


def _placed(diags: list[Diagnostic], origins: list | None) -> list[Diagnostic]:
    return [fragments.map_diagnostic(d, origins) for d in diags] if origins else diags


def compile_text(text: str, path: str = "<spec>", spec_path: str | None = None,
                 base_dir: Path | None = None, display_dir: str = "") -> CompileResult:
    """Compile one spec's text. Never raises for bad input: problems are diagnostics.

    ``path`` names the spec in diagnostics (the path the user typed); ``spec_path`` (default:
    ``path``) is the stable name written into the generated module; ``base_dir`` is the folder
    that `use "..."` fragments are read from (None: `use` is an error), ``display_dir`` that
    folder as the user typed it."""
    text = fragments.lf_lines(text)  # a CR-only (old Mac) file: lines the parser counts
    result = CompileResult(path=path, source=text)
    expanded = fragments.expand(text, base_dir, display_dir)
    if expanded.errors:
        result.diagnostics = expanded.errors
        return result
    origins = expanded.origins if expanded.used else None
    source = expanded.text if origins else text
    try:
        cap = parse_source(source)
    except SpecError as err:
        result.diagnostics = _placed(err.diagnostics, origins)
        return result
    domain = None
    if cap.domain is not None:
        domain, diags = _load_domain(cap.domain, cap.domain_span or cap.span)
        result.diagnostics.extend(diags)
    try:
        checked, diags = check(cap, source, spec_path or path, domain)
    except RecursionError:
        result.diagnostics.append(Diagnostic(message="spec is nested too deeply", span=Span(),
                                             code="E005"))
        return result
    result.diagnostics.extend(_placed(diags, origins))
    if checked is not None and domain is not None and \
            not any(d.severity == "error" for d in result.diagnostics):
        try:
            ir = lower(checked, origins)  # run-time errors point into the spec (`use` lines)
        except RecursionError:
            result.diagnostics.append(Diagnostic(message="spec is nested too deeply",
                                                 span=Span(), code="E005"))
            return result
        if origins:
            ir.spec_sha256 = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
        result.ir = ir
        result.code = codegen.generate_module(ir)
        _compile_variants(result, cap, source, spec_path or path, domain, origins)
    return result


def _compile_variants(result: CompileResult, cap: Any, source: str, spec_path: str,
                      domain: Domain, origins: list | None) -> None:
    """Each `variant` of a compiled capability as one more result (`result.variants`); their
    problems (not already reported for the capability) go to ``result``'s diagnostics."""
    caps, diags = variant_capabilities(cap)
    known = {(d.severity, d.code, d.span.line, d.span.column, d.message)
             for d in result.diagnostics}
    result.diagnostics.extend(_placed(diags, origins))
    variants = []
    lines = {v.name: (fragments.map_span(v.span, origins) if origins else v.span).line
             for v in cap.variants}
    for vcap in caps:
        vres = CompileResult(path=result.path, source=result.source, base=result)
        checked, vdiags = check(vcap, source, spec_path, domain)
        result.diagnostics.extend(
            d for d in _placed(vdiags, origins)
            if (d.severity, d.code, d.span.line, d.span.column, d.message) not in known)
        if checked is None:
            continue
        vres.ir = lower(checked, origins)
        assert result.ir is not None
        vres.ir.spec_sha256 = result.ir.spec_sha256
        if codegen.budget_only(result.ir, vres.ir):  # a subclass in a module of its own
            vres.code = codegen.generate_variant_module(result.ir, vres.ir, vcap.variant_of,
                                                        lines.get(vcap.variant_of, 0))
        else:
            vres.code = codegen.generate_module(vres.ir)
            vres.base = None
        variants.append(vres)
    if not any(d.severity == "error" for d in result.diagnostics):
        result.variants = variants


def with_variants(results: list[CompileResult]) -> list[CompileResult]:
    """Each result followed by its variants' (one per env)."""
    return [x for r in results for x in [r, *r.variants]]


def find_specs(paths: list[Path]) -> list[Path]:
    """Spec files named by paths (files, or folders searched recursively), sorted."""
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            out.extend(sorted(p.rglob(f"*{SPEC_SUFFIX}")))
        else:
            out.append(p)
    seen: set[Path] = set()
    unique = []
    for p in out:
        if p.resolve() not in seen:
            seen.add(p.resolve())
            unique.append(p)
    return unique


def display_path(path: Path) -> str:
    """The stable path written into generated headers: `<folder>/<file>`."""
    return f"{path.parent.name}/{path.name}" if path.parent.name else path.name


def compile_file(path: Path | str) -> CompileResult:
    path = Path(path)
    shown = display_path(path)
    try:
        raw = read_bytes(path, "spec", limit=SPEC_BYTES)  # regular files only, size-capped
    except InputError as exc:
        message = str(exc).split(": ", 1)[-1] if str(exc).startswith(str(path)) else str(exc)
        message = message.removeprefix("cannot read spec: ")
        return CompileResult(path=str(path), source="", diagnostics=[Diagnostic(
            message=f"cannot read spec: {message}", span=Span(), code="E250")])
    try:
        text = decode_bytes(raw, shown)  # UTF-8 (a BOM is dropped); UTF-16 etc. are errors
    except InputError as exc:
        message = str(exc).split(": ", 1)[-1] if str(exc).startswith(shown) else str(exc)
        return CompileResult(path=str(path), source="", diagnostics=[Diagnostic(
            message=f"spec is not UTF-8 text: {message}", span=Span(), code="E251")])
    parent = str(path.parent)
    return compile_text(text, str(path), spec_path=shown, base_dir=path.parent,
                        display_dir="" if parent == "." else parent)


def check_unique_names(results: list[CompileResult]) -> None:
    """Two specs may not declare the same capability (they would share a module)."""
    seen: dict[str, str] = {}
    for r in results:
        if r.ir is None:
            continue
        if r.ir.name in seen:
            r.diagnostics.append(Diagnostic(
                message=f"capability `{r.ir.name}` is also declared in {seen[r.ir.name]}",
                span=Span(), code="E260", hint="capability names must be unique across specs"))
            r.ir = None
        else:
            seen[r.ir.name] = r.path


class TempPackage:
    """A private temporary package of generated modules, so that a variant's module imports
    its base's as in a compiled folder (``from . import BASE as base``)."""

    _made = itertools.count()

    def __init__(self, prefix: str) -> None:
        self.name = f"{prefix}_{next(TempPackage._made)}"  # never another load's modules
        self.folder = Path(tempfile.mkdtemp(prefix="tracec-"))
        package = types.ModuleType(self.name)
        package.__path__ = [str(self.folder)]
        sys.modules[self.name] = package

    def load(self, stem: str, code: str) -> types.ModuleType:
        """Write ``code`` as module ``stem`` of the package and import it."""
        path = self.folder / f"{stem}.py"
        path.write_text(code, encoding="utf-8")
        return _exec_file(f"{self.name}.{stem}", path)


def _exec_file(module_name: str, path: Path) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(module_name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


def load_module_source(code: str, module_name: str) -> types.ModuleType:
    """Load generated code as a module from a private temporary file."""
    tmp = Path(tempfile.mkdtemp(prefix="tracec-")) / f"{module_name}.py"
    tmp.write_text(code, encoding="utf-8")
    return _exec_file(module_name, tmp)


def build_modules(paths: list[Path]) -> list[types.ModuleType]:
    """Compile spec files/folders and load their env modules (CompileFailed on errors)."""
    results = with_variants([compile_file(p) for p in find_specs(paths)])
    if not results:
        raise CompileFailed(f"no {SPEC_SUFFIX} files in {', '.join(map(str, paths))}")
    check_unique_names(results)
    failed = [r for r in results if not r.ok]
    if failed:
        raise CompileFailed("\n\n".join(r.rendered for r in failed))
    return [r.module for r in results if r.module is not None]
