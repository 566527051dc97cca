"""The documentation cannot rot: every command shown in README.md and docs/*.md runs, every
relative link resolves, and README stays a front door (the conventions: docs/testing-docs.md).

A ```sh block's every line is a command (a ```console block's, the lines starting ``$ ``); a
line ending in ``\\`` continues on the next; a ```python block is one program. Each runs (in
bash, or Python) in a folder of its own per page (with ``specs`` linking to the repository's
and ``fairalloc`` on the PATH running this checkout), after the page's earlier commands, so a
page's commands may use each other's files.
A command must exit 0, or N where its comment says ``# exit N``. A line whose comment says
``doc-test: skip (reason)``, or a block under an HTML comment saying so, is not run.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from clitools import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
README_LIMIT = 12_000                       # bytes: a front door, not the manual
SHELL_BLOCKS = {"sh": None, "console": "$ "}   # block language -> the prompt a command follows
FENCE = re.compile(r"^```(\S*)\s*$")
SKIP = re.compile(r"doc-test: skip \(([^)]+)\)")
EXIT = re.compile(r"#\s*exit (\d+)\b")
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


@dataclass(frozen=True)
class Command:
    page: str          # relative to the repository
    line: int          # where the command starts, 1-based
    text: str
    skip: str | None   # the reason it is not run
    exit: int          # the exit code the page promises
    python: bool = False   # a ```python block, run as one program


def documented_commands(text: str, page: str = "page.md") -> list[Command]:
    """The commands of a Markdown text's ```sh and ```console blocks, and its ```python
    blocks, in order."""
    commands: list[Command] = []
    prompt: str | None = None
    in_shell = in_block = False
    block_skip: str | None = None
    pending: tuple[int, str] | None = None        # a command continued with a backslash
    program: list[str] | None = None              # the lines of a ```python block
    previous = ""
    for number, line in enumerate(text.splitlines(), 1):
        fence = FENCE.match(line)
        if fence and not in_block:
            in_block, in_shell = True, fence.group(1) in SHELL_BLOCKS
            prompt = SHELL_BLOCKS.get(fence.group(1))
            skipped = SKIP.search(previous) if previous.lstrip().startswith("<!--") else None
            block_skip = skipped.group(1) if skipped else None
            program = [] if fence.group(1) == "python" else None
            start = number + 1
        elif fence:
            if program is not None:
                commands.append(Command(page, start, "\n".join(program), block_skip, 0, True))
            in_block = in_shell = False
            program = None
        elif program is not None:
            program.append(line)
        elif in_shell and pending is not None:
            start, head = pending
            pending = (start, head[:-1] + " " + line.strip()) if line.endswith("\\") else None
            if pending is None:
                commands.append(_command(page, start, head[:-1] + " " + line.strip(), block_skip))
        elif in_shell and _is_command(line, prompt):
            body = line[len(prompt):] if prompt else line
            if body.endswith("\\"):
                pending = (number, body)
            else:
                commands.append(_command(page, number, body, block_skip))
        if line.strip():
            previous = line
    return commands


def _is_command(line: str, prompt: str | None) -> bool:
    if prompt is not None:
        return line.startswith(prompt)
    return bool(line.strip()) and not line.lstrip().startswith("#")


def _command(page: str, line: int, text: str, block_skip: str | None) -> Command:
    skipped = SKIP.search(text)
    code = EXIT.search(text)
    return Command(page, line, text.strip(), block_skip or (skipped.group(1) if skipped else None),
                   int(code.group(1)) if code else 0)


COMMANDS = [c for page in PAGES
            for c in documented_commands(page.read_text(encoding="utf-8"),
                                    page.relative_to(ROOT).as_posix())]


class Workspaces:
    """One folder per page, and how many of the page's commands have run in it."""

    def __init__(self, factory: pytest.TempPathFactory):
        self.factory = factory
        self.folders: dict[str, tuple[Path, int]] = {}

    def run_up_to(self, command: Command) -> subprocess.CompletedProcess:
        """Run the page's commands before ``command`` that have not run, then ``command``."""
        page = [c for c in COMMANDS if c.page == command.page]
        folder, done = self.folders.get(command.page) or (self._folder(command.page), 0)
        for earlier in page[done:page.index(command)]:
            if earlier.skip is None:
                _run(earlier, folder)
        self.folders[command.page] = (folder, page.index(command) + 1)
        return _run(command, folder)

    def _folder(self, page: str) -> Path:
        folder = self.factory.mktemp(Path(page).stem)
        (folder / "specs").symlink_to(ROOT / "specs")
        tools = folder / ".bin"
        tools.mkdir()
        wrapper = tools / "fairalloc"
        wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m fairalloc.cli "$@"\n')
        wrapper.chmod(0o755)
        return folder


def _run(command: Command, folder: Path) -> subprocess.CompletedProcess:
    """``command`` in ``folder``: a Python program with this interpreter, else a bash line."""
    argv = [sys.executable, "-c", command.text] if command.python else ["bash", "-c",
                                                                         command.text]
    environment = dict(os.environ, PATH=f"{folder / '.bin'}{os.pathsep}{os.environ['PATH']}",
                       PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT),
                                                                os.environ.get("PYTHONPATH")])),
                       MPLBACKEND="Agg")
    return subprocess.run(argv, cwd=folder, env=environment, text=True,
                          capture_output=True, stdin=subprocess.DEVNULL, timeout=120)


@pytest.fixture(scope="module")
def workspaces(tmp_path_factory):
    return Workspaces(tmp_path_factory)


@pytest.mark.slow
@pytest.mark.parametrize("command", COMMANDS, ids=[f"{c.page}:{c.line}" for c in COMMANDS])
def test_each_documented_command_runs(command: Command, workspaces: Workspaces):
    if command.skip:
        pytest.skip(command.skip)
    done = workspaces.run_up_to(command)
    assert done.returncode == command.exit, \
        f"{command.page}:{command.line}: {command.text}\nexit {done.returncode}\n{done.stderr}"
    assert "Traceback" not in done.stderr, done.stderr


def test_opt_outs_are_few_and_give_reasons():
    skipped = [c for c in COMMANDS if c.skip]
    assert len(skipped) <= len(COMMANDS) // 5, [f"{c.page}:{c.line}" for c in skipped]
    assert all(c.skip.strip() for c in skipped)


def test_the_extractor_follows_the_conventions():
    text = "\n".join([
        "```sh", "fairalloc list   # kinds", "# a comment", "fairalloc solve a.json \\",
        "    --format json", "fairalloc solve bad.json   # exit 2", "```",
        "```json", "fairalloc not a command", "```",
        "```console", "$ fairalloc new drf", "{ output }", "```",
        "<!-- doc-test: skip (needs a cluster) -->", "```sh", "dask scheduler", "```",
        "```sh", "fairalloc study run s.json   # doc-test: skip (an hour)", "```",
        "```python", "import fairalloc", "fairalloc.list()", "```"])
    found = [(c.line, c.text, c.skip, c.exit) for c in documented_commands(text)]
    assert found == [
        (2, "fairalloc list   # kinds", None, 0),
        (4, "fairalloc solve a.json  --format json", None, 0),
        (6, "fairalloc solve bad.json   # exit 2", None, 2),
        (12, "fairalloc new drf", None, 0),
        (17, "dask scheduler", "needs a cluster", 0),
        (20, "fairalloc study run s.json   # doc-test: skip (an hour)", "an hour", 0),
        (23, "import fairalloc\nfairalloc.list()", None, 0)]


def test_the_readme_is_a_front_door():
    size = len((ROOT / "README.md").read_bytes())
    assert size <= README_LIMIT, f"README.md is {size} bytes; move detail to docs/"


def test_every_docs_page_is_linked_from_the_readme():
    linked = {(ROOT / target.split("#")[0]).resolve()
              for target in LINK.findall((ROOT / "README.md").read_text(encoding="utf-8"))}
    orphans = [p.name for p in PAGES[1:] if p.resolve() not in linked]
    assert not orphans, f"docs pages the README does not link: {orphans}"


@pytest.mark.parametrize("page", PAGES + [ROOT / "CONTRIBUTING.md"],
                         ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_resolves(page: Path):
    broken = []
    for target in LINK.findall(page.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(f"{target}: no such file")
        elif anchor and file.suffix == ".md" and anchor not in _anchors(file):
            broken.append(f"{target}: no heading #{anchor}")
    assert not broken, f"{page.name}: {broken}"


def _anchors(page: Path) -> set[str]:
    """The anchors GitHub gives a page's headings: lower case, punctuation dropped, spaces
    as hyphens."""
    headings = re.findall(r"^#+ (.+)$", page.read_text(encoding="utf-8"), re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}
