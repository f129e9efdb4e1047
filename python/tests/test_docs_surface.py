"""The documentation covers the surface: every recipe key the reader takes
is in docs/ (recipes.md and the pages it links), every parameter of the
public Python classes is in docs/python.md and in the class's own
docstring (help()), and every subcommand has its section in docs/cli.md."""

import inspect
import os
import re
import subprocess
from pathlib import Path

import pertload

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def recipe_keys():
    """Every key the recipe reader accepts, read from its sources."""
    keys = set()
    for c in (ROOT / "preprocess" / "import" / "recipe").glob("*.c"):
        text = c.read_text()
        keys |= set(re.findall(r'\{"([a-z_]+)", PL_RY_', text))
        keys |= set(re.findall(r'OPT\("([a-z_]+)"', text))
        keys |= set(re.findall(r'strcmp\(key, "([a-z_]+)"\)', text))
    return keys


def test_every_recipe_key_is_documented():
    keys = recipe_keys()
    assert {"file", "format", "min_score", "aliases", "set", "min_resolved"} <= keys, keys
    text = "".join((DOCS / p).read_text() for p in
                   ("recipes.md", "published-formats.md", "limits-and-identity.md",
                    "ontology.md"))
    missing = sorted(k for k in keys if f"`{k}`" not in text and f"{k}:" not in text)
    assert not missing, f"recipe keys missing from docs/recipes.md: {missing}"


def test_every_parameter_is_in_the_page_and_the_docstring():
    page = (DOCS / "python.md").read_text()
    for cls in (pertload.Loader, pertload.Dataset, pertload.DataModule):
        params = [p for p in inspect.signature(cls.__init__).parameters
                  if p not in ("self", "loader_options", "kw", "kwargs")]
        assert len(params) > 3, (cls, params)
        doc = inspect.getdoc(cls) or ""
        in_doc = doc + (inspect.getdoc(cls.__init__) or "")
        missing_page = [p for p in params if not re.search(rf"\b{p}\b", page)]
        missing_doc = [p for p in params if not re.search(rf"\b{p}\b", in_doc)]
        assert not missing_page, f"{cls.__name__}: not in docs/python.md: {missing_page}"
        assert not missing_doc, f"{cls.__name__}: not in help(): {missing_doc}"


def test_every_subcommand_has_its_section():
    out = subprocess.run([os.environ.get("PERTLOAD_BIN", "pertload"), "--help"],
                         capture_output=True, text=True).stdout
    commands = re.findall(r"^  ([a-z]+)  ", out, re.M)
    assert len(commands) >= 9, out
    page = (DOCS / "cli.md").read_text()
    missing = [c for c in commands if f"## pertload {c}\n" not in page
               or f"<!-- pertload {c} --help -->" not in page]
    assert not missing, f"docs/cli.md lacks sections for {missing}"
