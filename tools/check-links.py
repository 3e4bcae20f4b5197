#!/usr/bin/env python3
"""Check the relative links (files and #anchors) of README.md, ARCHITECTURE.md, BENCHMARKS.md and docs/."""

import re
import sys
import unicodedata
from pathlib import Path
from urllib.parse import unquote

ROOT = Path(__file__).resolve().parent.parent
TOP_LEVEL = ["README.md", "ARCHITECTURE.md", "BENCHMARKS.md"]

FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
ATX_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
SETEXT_UNDERLINE = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
HTML_ANCHOR = re.compile(r"<a\s[^>]*\b(?:id|name)\s*=\s*[\"']([^\"']+)[\"']", re.I)
HEADING_ID_ATTR = re.compile(r"\s*\{#([^}\s]+)[^}]*\}\s*$")
# An inline code span: a run of backticks, anything but a blank line, the same run again.
CODE_SPAN = re.compile(r"(`+)((?:(?!\n[ \t]*\n).)+?)(?<!`)\1(?!`)", re.S)
HTML_COMMENT = re.compile(r"<!--.*?-->", re.S)
# [text](target) and ![alt](target); the text may span lines, the target may be <...> or titled.
INLINE_LINK = re.compile(
    r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*(<[^>\n]*>|[^\s()]*(?:\([^\s()]*\)[^\s()]*)*)"
    r"(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^)]*\)))?\s*\)"
)
REFERENCE_DEF = re.compile(r"^ {0,3}\[[^\]]+\]:[ \t]*(<[^>\n]*>|\S+)", re.M)
EXTERNAL = re.compile(r"^(?:[a-zA-Z][a-zA-Z0-9+.-]*:|//)")  # http:, https:, mailto:, ...


def sources():
    """The Markdown files whose links are checked."""
    files = [ROOT / name for name in TOP_LEVEL if (ROOT / name).is_file()]
    files += sorted((ROOT / "docs").rglob("*.md"))
    return files


def blank(text, pattern):
    """Replace every match of pattern by spaces, keeping newlines (and so line numbers)."""
    return pattern.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def without_fences(lines):
    """The lines with fenced code blocks' contents (fences included) blanked."""
    out, fence = [], None
    for line in lines:
        m = FENCE.match(line)
        if fence is None and m:
            fence = m.group(1)
            out.append("")
        elif fence is not None:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) \
                    and line.strip() == m.group(1):
                fence = None
            out.append("")
        else:
            out.append(line)
    return out


def slug(heading):
    """The anchor GitHub and mdBook make of a heading's text."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # links: keep their text
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML
    text = text.replace("`", "").replace("*", "")
    text = re.sub(r"(?<!\w)_+|_+(?!\w)", "", text)  # _emphasis_, not snake_case
    out = []
    for ch in text.strip().lower():
        if ch.isalnum() or ch in "-_":
            out.append(ch)
        elif ch.isspace():
            out.append("-")
        elif unicodedata.category(ch).startswith("M"):
            out.append(ch)
    return "".join(out)


ANCHOR_CACHE = {}


def anchors(path):
    """Every anchor a Markdown file's headings (and explicit ids) generate."""
    if path in ANCHOR_CACHE:
        return ANCHOR_CACHE[path]
    lines = without_fences(path.read_text(encoding="utf-8").split("\n"))
    found, seen = set(), {}

    def add(text):
        m = HEADING_ID_ATTR.search(text)
        if m:
            found.add(m.group(1))
            return
        base = slug(text)
        n = seen.get(base, 0)
        seen[base] = n + 1
        found.add(base if n == 0 else f"{base}-{n}")

    for i, line in enumerate(lines):
        for m in HTML_ANCHOR.finditer(line):
            found.add(m.group(1))
        m = ATX_HEADING.match(line)
        if m:
            add(m.group(2) or "")
        elif (i > 0 and lines[i - 1].strip() and SETEXT_UNDERLINE.match(line)
              and not ATX_HEADING.match(lines[i - 1]) and not lines[i - 1].startswith(("    ", "\t"))
              and not re.match(r"^\s*([-*+]|\d+[.)])\s", lines[i - 1])
              and not (line.strip().startswith("-") and lines[i - 1].lstrip().startswith("|"))):
            add(lines[i - 1].strip())
    ANCHOR_CACHE[path] = found
    return found


def links(path):
    """(line, target) for every link outside code in a Markdown file."""
    text = "\n".join(without_fences(path.read_text(encoding="utf-8").split("\n")))
    text = blank(text, HTML_COMMENT)
    text = blank(text, CODE_SPAN)
    for pattern in (INLINE_LINK, REFERENCE_DEF):
        for m in pattern.finditer(text):
            target = m.group(1).strip()
            if target.startswith("<") and target.endswith(">"):
                target = target[1:-1].strip()
            yield text.count("\n", 0, m.start(1)) + 1, target


def check(path, target):
    """Why a link from path to target is broken, or None."""
    file_part, _, anchor = target.partition("#")
    file_part = unquote(file_part.split("?", 1)[0])
    if file_part:
        base = ROOT if file_part.startswith("/") else path.parent
        dest = (base / file_part.lstrip("/")).resolve()
        if not dest.exists():
            return "no such file"
    else:
        dest = path
    if not anchor:
        return None
    if dest.is_dir() or dest.suffix.lower() not in (".md", ".markdown"):
        return "anchor into a file that is not Markdown"
    if unquote(anchor) not in anchors(dest):
        return f"no heading makes #{anchor} in {dest.relative_to(ROOT)}"
    return None


def main():
    broken, count, files = [], 0, sources()
    for path in files:
        for line, target in sorted(links(path)):
            if not target or EXTERNAL.match(target):
                continue
            count += 1
            why = check(path, target)
            if why:
                broken.append(f"{path.relative_to(ROOT)}:{line}: {target} ({why})")
    for entry in broken:
        print(entry)
    if broken:
        print(f"check-links: {len(broken)} broken of {count} relative links in {len(files)} files",
              file=sys.stderr)
        return 1
    print(f"check-links: {count} relative links in {len(files)} files, all good")
    return 0


if __name__ == "__main__":
    sys.exit(main())
