"""Build hook: ship docs/language.md inside the package (``tracec/docs/language.md``) so that
``tracec propose`` finds the language reference in a wheel; docs/ stays the only source."""

from pathlib import Path
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py

PACKAGED_DOCS = ("language.md",)


class BuildPy(build_py):
    def run(self) -> None:
        super().run()
        target = Path(self.build_lib) / "tracec" / "docs"
        target.mkdir(parents=True, exist_ok=True)
        for name in PACKAGED_DOCS:
            shutil.copyfile(Path(__file__).parent / "docs" / name, target / name)


setup(cmdclass={"build_py": BuildPy})
