"""Every relative link of the README and docs/ leads somewhere in the repository.

A link ``[text](path)`` or ``[text](path#anchor)`` must name an existing file (or
folder) inside the repository, and an anchor must be a heading of that file as GitHub
writes anchors: lowercase, punctuation removed, spaces to ``-``, ``-1``, ``-2`` ... for
repeated headings. Links out of the repository (``../shared/DESIGN.md``) are refused:
a clone has nothing there. Web links (``https://``) are not checked.

``link_problems`` returns one readable line per broken link; the last tests run it on
broken pages too, so it cannot pass vacuously.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]

_FENCE = re.compile(r"^\s*(```|~~~)")
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_EXTERNAL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")  # https:, mailto:, ...


def documentation_files(root: Path = REPO) -> list[Path]:
    """The pages whose links are checked: README.md, docs/**/*.md, bench/README.md."""
    pages = [
        root / "README.md",
        root / "bench" / "README.md",
        *sorted((root / "docs").rglob("*.md")),
    ]
    return [page for page in pages if page.is_file()]


def _prose_lines(text: str) -> Iterable[tuple[int, str]]:
    """(line number, line) outside fenced code blocks."""
    fenced = False
    for number, line in enumerate(text.splitlines(), start=1):
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            yield number, line


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a heading's text (before de-duplication)."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link in a heading keeps its text
    text = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Every anchor of ``page``'s headings, with GitHub's ``-1``, ``-2`` for repeats."""
    seen: dict[str, int] = {}
    out = set()
    for _, line in _prose_lines(page.read_text(encoding="utf-8")):
        match = _HEADING.match(line)
        if not match:
            continue
        anchor = github_anchor(match.group(2))
        count = seen.get(anchor, 0)
        seen[anchor] = count + 1
        out.add(anchor if count == 0 else f"{anchor}-{count}")
    return out


def links(page: Path) -> Iterable[tuple[int, str]]:
    """(line number, target) of each markdown link of ``page``, outside code."""
    for number, line in _prose_lines(page.read_text(encoding="utf-8")):
        for match in _LINK.finditer(_INLINE_CODE.sub("``", line)):
            yield number, match.group(1)


def _problem(page: Path, target: str, root: Path) -> str | None:
    if not target or _EXTERNAL.match(target):
        return None if target else "empty link"
    path, _, anchor = target.partition("#")
    if path.startswith("/"):
        return "absolute path: use a path relative to this page"
    resolved = (page.parent / path).resolve() if path else page
    if not resolved.is_relative_to(root.resolve()):
        return "points outside the repository"
    if not resolved.exists():
        return "no such file"
    if anchor:
        if resolved.is_dir() or resolved.suffix != ".md":
            return "an anchor into a file that is not a markdown page"
        if anchor not in anchors(resolved):
            return f"no heading with anchor #{anchor} in {resolved.relative_to(root.resolve())}"
    return None


def link_problems(pages: Iterable[Path], root: Path = REPO) -> list[str]:
    """One line per broken relative link of ``pages``: ``page:line: target: why``."""
    problems = []
    for page in pages:
        for number, target in links(page):
            why = _problem(page, target, root)
            if why:
                problems.append(f"{page.relative_to(root)}:{number}: {target}: {why}")
    return problems


def test_the_pages_exist() -> None:
    names = {str(p.relative_to(REPO)) for p in documentation_files()}
    expected = {
        "README.md",
        "bench/README.md",
        "docs/README.md",
        "docs/architecture.md",
        "docs/configuration.md",
        "docs/operations.md",
        "docs/benchmark.md",
    }
    expected |= {
        f"docs/runbooks/{name}.md"
        for name in ("sync", "checkpoint", "failover", "failback", "audit", "backfill", "sla")
    }
    assert expected <= names


def test_every_relative_link_resolves() -> None:
    assert link_problems(documentation_files()) == []


def test_the_readme_links_every_docs_page() -> None:
    targets = {target.partition("#")[0] for _, target in links(REPO / "README.md")}
    pages = {str(p.relative_to(REPO)) for p in (REPO / "docs").rglob("*.md")}
    assert pages - targets == set()


@pytest.mark.parametrize(
    ("heading", "anchor"),
    [
        ("How `mirrorflow run` copies", "how-mirrorflow-run-copies"),
        ("`routes[].sync`", "routessync"),
        ('The "Replication" page in the Airflow UI', "the-replication-page-in-the-airflow-ui"),
        (
            'Fault harness: `bench/chaos.py` ("Proven under faults")',
            "fault-harness-benchchaospy-proven-under-faults",
        ),
        ("Client settings MirrorFlow refuses", "client-settings-mirrorflow-refuses"),
    ],
)
def test_github_anchor(heading: str, anchor: str) -> None:
    assert github_anchor(heading) == anchor


def test_broken_links_are_found(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "real.md").write_text(
        "# A page\n\n## Its part\n\n## Its part\n", encoding="utf-8"
    )
    page = tmp_path / "README.md"
    page.write_text(
        "Fine: [a](docs/real.md), [b](docs/real.md#its-part), [c](docs/real.md#its-part-1),\n"
        "[d](#top), [web](https://example.com), `[code](nowhere.md)`\n"
        "```\n[fenced](nowhere.md)\n```\n"
        "# Top\n"
        "Broken: [e](docs/missing.md), [f](docs/real.md#no-such-part), [g](../shared/DESIGN.md),\n"
        "[h](/etc/passwd), [i](#nowhere)\n",
        encoding="utf-8",
    )
    assert link_problems([page], tmp_path) == [
        "README.md:7: docs/missing.md: no such file",
        "README.md:7: docs/real.md#no-such-part: no heading with anchor #no-such-part in docs/real.md",
        "README.md:7: ../shared/DESIGN.md: points outside the repository",
        "README.md:8: /etc/passwd: absolute path: use a path relative to this page",
        "README.md:8: #nowhere: no heading with anchor #nowhere in README.md",
    ]
