#!/usr/bin/env python3
"""The module table of docs/architecture.md, generated from the top-level CMakeLists.txt.

Every `mka_module(<name> DEPS ...)` call is a row: whether the module is product (listed in
`set(mka_product_modules ...)`) or a tool, the modules it links, the outside libraries it
links, and what it is. The last column comes from the doc itself: the first paragraph of the
module's `### `<name>`` section, which follows the table. The table lies between the
BEGIN/END GENERATED markers of the doc and nowhere else.

  scripts/architecture-table.py            print the table (--stats: with files and lines)
  scripts/architecture-table.py --write    rewrite the doc's table in place
  scripts/architecture-table.py --check    exit 1, saying what differs, when the doc is stale

--check also fails when:
  - a module has no `### `<name>`` section after the table, or a section names no module;
  - a directory under src/ is not a module (its code would not be built);
  - README.md's development tree (between its BEGIN/END CHECKED markers) and the directories
    under src/ differ;
  - a line of the doc outside its tables, or of README.md's tree, is longer than 100 columns.

--cmake, --doc, --readme and --src read other files than the repository's (the test of this
script runs it on a changed copy of CMakeLists.txt).
"""

import argparse
import difflib
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = "scripts/architecture-table.py"
BEGIN = f"<!-- BEGIN GENERATED: {SCRIPT} (the module table; --write updates it) -->"
END = "<!-- END GENERATED -->"
README_BEGIN = f"<!-- BEGIN CHECKED: the modules are the directories under src/ ({SCRIPT}) -->"
README_END = "<!-- END CHECKED -->"
MAX_COLUMNS = 100


class Failure(Exception):
    """A problem that stops the script: the CMake it cannot read, a doc without markers."""


# ---------------------------------------------------------------------------------------------
# CMake: just enough of its syntax to read commands and their arguments.


@dataclass
class Command:
    name: str  # lower-cased
    args: list
    line: int
    conditions: tuple  # the if() branches it is inside, outermost first


def cmake_commands(text, path):
    """The commands of a CMake file in order, each with the if() branches around it. The
    bodies of function() and macro() are skipped: they run where they are called."""
    tokens = _tokenize(text, path)
    commands = []
    frames = []  # per open if(): [conditions of the branches so far, the current branch's]
    depth_in_definition = 0
    i = 0
    while i < len(tokens):
        kind, value, line = tokens[i]
        if kind != "word" or i + 1 >= len(tokens) or tokens[i + 1][0] != "(":
            raise Failure(f"{path}:{line}: cannot read the CMake here (expected a command)")
        name = value.lower()
        args = []
        i += 2
        nesting = 0
        while True:
            if i >= len(tokens):
                raise Failure(f"{path}:{line}: {value}( is never closed")
            kind, arg, _ = tokens[i]
            i += 1
            if kind == ")":
                if nesting == 0:
                    break
                nesting -= 1
                args.append(")")
            elif kind == "(":
                nesting += 1
                args.append("(")
            else:
                args.append(arg)
        if name in ("function", "macro"):
            depth_in_definition += 1
            continue
        if name in ("endfunction", "endmacro"):
            depth_in_definition -= 1
            continue
        if depth_in_definition:
            continue
        if name == "if":
            frames.append([[], " ".join(args)])
            continue
        if name in ("elseif", "else", "endif") and not frames:
            raise Failure(f"{path}:{line}: {value}() without if()")
        if name == "elseif":
            frames[-1][0].append(frames[-1][1])
            frames[-1][1] = " ".join(args)
            continue
        if name == "else":
            earlier = frames[-1][0] + [frames[-1][1]]
            frames[-1][0] = earlier
            frames[-1][1] = "NOT " + (earlier[0] if len(earlier) == 1 else "(" + " OR ".join(earlier) + ")")
            continue
        if name == "endif":
            frames.pop()
            continue
        commands.append(Command(name, args, line, tuple(f[1] for f in frames)))
    return commands


def _tokenize(text, path):
    """Words (quoted or not), parentheses and their line numbers; comments dropped."""
    tokens = []
    i, line, n = 0, 1, len(text)
    bracket_open = re.compile(r"\[(=*)\[")
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
        elif c in " \t\r":
            i += 1
        elif c == "#":
            bracket = bracket_open.match(text, i + 1)
            if bracket:  # #[[ a bracket comment ]]
                close = "]" + bracket.group(1) + "]"
                j = text.find(close, bracket.end())
                if j < 0:
                    raise Failure(f"{path}:{line}: bracket comment never closed")
                line += text.count("\n", i, j)
                i = j + len(close)
            else:
                j = text.find("\n", i)
                i = n if j < 0 else j
        elif c in "()":
            tokens.append((c, c, line))
            i += 1
        elif c == '"':
            j, value = i + 1, []
            while j < n and text[j] != '"':
                if text[j] == "\\" and j + 1 < n:
                    value.append(text[j : j + 2] if text[j + 1] not in '"\\' else text[j + 1])
                    j += 2
                else:
                    value.append(text[j])
                    j += 1
            if j >= n:
                raise Failure(f"{path}:{line}: quoted argument never closed")
            tokens.append(("word", "".join(value), line))
            line += text.count("\n", i, j)
            i = j + 1
        elif bracket_open.match(text, i):
            bracket = bracket_open.match(text, i)
            close = "]" + bracket.group(1) + "]"
            j = text.find(close, bracket.end())
            if j < 0:
                raise Failure(f"{path}:{line}: bracket argument never closed")
            tokens.append(("word", text[bracket.end() : j], line))
            line += text.count("\n", i, j)
            i = j + len(close)
        else:
            j = i
            while j < n and text[j] not in ' \t\r\n()#"':
                j += 1 if text[j] != "\\" else 2
            tokens.append(("word", text[i:j], line))
            i = j
    return tokens


@dataclass
class Value:
    text: str
    conditions: tuple  # the if() branches of the set() that gave it


class Variables:
    """What set() and list(APPEND) give each variable anywhere in the file, with the if()
    branches they are in: the script does not evaluate conditions, so `${v}` stands for every
    value v is ever given (a value set only under a condition says so)."""

    def __init__(self, commands):
        self.values = {}
        for c in commands:
            if c.name == "set" and c.args:
                values = c.args[1:]
                if "CACHE" in values:
                    values = values[: values.index("CACHE")]
                values = [v for v in values if v != "PARENT_SCOPE"]
                self._add(c.args[0], values, c.conditions)
            elif c.name == "list" and len(c.args) >= 2 and c.args[0] == "APPEND":
                self._add(c.args[1], c.args[2:], c.conditions)

    def _add(self, name, values, conditions):
        entries = self.values.setdefault(name, [])
        for v in values:
            for item in v.split(";"):
                entries.append(Value(item, conditions))

    def expand(self, arg, conditions, where, depth=0):
        """`arg` as a list of Values, every `${...}` replaced."""
        match = re.search(r"\$\{([A-Za-z0-9_.+-]+)\}", arg)
        if not match:
            return [Value(item, conditions) for item in arg.split(";") if item]
        if depth > 10:
            raise Failure(f"{where}: ${{{match.group(1)}}} refers to itself")
        name = match.group(1)
        if name not in self.values:
            raise Failure(f"{where}: ${{{name}}} is never set() in this file: {SCRIPT} cannot tell what it holds")
        out = []
        for v in self.values[name]:
            text = arg[: match.start()] + v.text + arg[match.end() :]
            out += self.expand(text, _merge(conditions, v.conditions), where, depth + 1)
        return out


def _merge(outer, inner):
    return outer + tuple(c for c in inner if c not in outer)


@dataclass
class Module:
    name: str
    line: int
    conditions: tuple
    product: bool = False
    modules: list = field(default_factory=list)  # Values: the mka modules it links
    internal: list = field(default_factory=list)  # Values: other mka_ targets (mka_version)
    external: list = field(default_factory=list)  # Values: outside libraries


def read_modules(cmake_path):
    text = cmake_path.read_text(encoding="utf-8")
    commands = cmake_commands(text, cmake_path)
    variables = Variables(commands)
    modules = {}
    for c in commands:
        if c.name != "mka_module":
            continue
        where = f"{cmake_path}:{c.line}"
        if not c.args:
            raise Failure(f"{where}: mka_module() without a name")
        if len(c.args) > 1 and c.args[1] != "DEPS":
            raise Failure(f"{where}: mka_module({c.args[0]} {c.args[1]} ...): {SCRIPT} reads only DEPS")
        name = c.args[0]
        if name in modules:
            raise Failure(f"{where}: mka_module({name}) declared twice")
        m = Module(name, c.line, c.conditions)
        for arg in c.args[2:]:
            m.external += variables.expand(arg, c.conditions, where)
        modules[name] = m
    if not modules:
        raise Failure(f"{cmake_path}: no mka_module(...) call")
    for m in modules.values():
        deps, m.external = m.external, []
        for d in deps:
            if d.text.startswith("mka_") and d.text[4:] in modules:
                m.modules.append(Value(d.text[4:], d.conditions))
            elif d.text.startswith("mka_"):
                m.internal.append(d)
            else:
                m.external.append(d)
    product = [c for c in commands if c.name == "set" and c.args and c.args[0] == "mka_product_modules"]
    if not product:
        raise Failure(f"{cmake_path}: no set(mka_product_modules ...): cannot tell product modules from tools")
    for c in product:
        for v in variables.expand(";".join(c.args[1:]), (), f"{cmake_path}:{c.line}"):
            if v.text not in modules:
                raise Failure(f"{cmake_path}:{c.line}: mka_product_modules names {v.text}, "
                              "which no mka_module() declares")
            modules[v.text].product = True
    return list(modules.values())


# ---------------------------------------------------------------------------------------------
# The doc.


def descriptions(doc_lines, doc_path):
    """The `### `<name>`` sections after the table, up to the next `## ` heading: each one's
    first paragraph. Returns ({name: summary}, [problems])."""
    end = _marker_index(doc_lines, END, doc_path)
    found, problems = {}, []
    i = end + 1
    while i < len(doc_lines) and not doc_lines[i].startswith("## "):
        heading = re.fullmatch(r"### `([A-Za-z0-9_]+)`\s*", doc_lines[i])
        i += 1
        if not heading:
            continue
        name = heading.group(1)
        while i < len(doc_lines) and not doc_lines[i].strip():
            i += 1
        paragraph = []
        while i < len(doc_lines) and doc_lines[i].strip() and not re.match(r"\s*([-*#|]|\d+\.|```)", doc_lines[i]):
            paragraph.append(doc_lines[i].strip())
            i += 1
        if name in found:
            problems.append(f"{doc_path}: two `### `{name}`` sections")
        elif not paragraph:
            problems.append(f"{doc_path}: `### `{name}`` starts without a paragraph saying what the module is")
        found[name] = " ".join(paragraph)
    return found, problems


def _marker_index(lines, marker, path):
    hits = [i for i, line in enumerate(lines) if line.strip() == marker]
    if len(hits) != 1:
        raise Failure(f"{path}: needs exactly one line `{marker}` (found {len(hits)})")
    return hits[0]


def _code(text):
    return f"`{text}`"


def _conditional(value, module):
    extra = [c for c in value.conditions if c not in module.conditions]
    return f" (if {' and '.join(_code(c) for c in extra)})" if extra else ""


def table(modules, summaries, stats=None):
    header = ["module", "kind", "depends on (modules)", "links (outside libraries)", "what it is"]
    if stats is not None:
        header += ["files", "lines"]
    rows = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for m in modules:
        kind = "product" if m.product else "tool"
        if m.conditions:
            kind += " (if " + " and ".join(_code(c) for c in m.conditions) + ")"

        def listed(values, render):
            seen, out = set(), []
            for v in sorted(values, key=lambda v: v.text):
                if v.text not in seen:
                    seen.add(v.text)
                    out.append(render(v.text) + _conditional(v, m))
            return ", ".join(out) if out else "–"

        deps = listed(m.modules + m.internal, lambda t: _code(t) if t.startswith("mka_") else t)
        external = listed(m.external, _code)
        summary = summaries.get(m.name, "").replace("|", "\\|")
        cells = [f"[{_code(m.name)}](#{m.name})", kind, deps, external, summary]
        if stats is not None:
            cells += [str(x) for x in stats[m.name]]
        rows.append("| " + " | ".join(cells) + " |")
    return rows


def file_stats(name, src_dir):
    dirs = [src_dir / name, src_dir.parent / "include" / "mka" / name]
    files = [p for d in dirs if d.is_dir() for p in sorted(d.iterdir()) if p.suffix in (".cpp", ".h")]
    return len(files), sum(len(p.read_text(encoding="utf-8", errors="replace").splitlines()) for p in files)


def long_lines(lines, path, first=0, skip_tables=True):
    out = []
    for i, line in enumerate(lines[first:], first + 1):
        if len(line) > MAX_COLUMNS and not (skip_tables and line.lstrip().startswith("|")):
            out.append(f"{path}:{i}: {len(line)} columns (at most {MAX_COLUMNS}): wrap it")
    return out


def readme_problems(readme_path, src_dir):
    lines = readme_path.read_text(encoding="utf-8").splitlines()
    begin = _marker_index(lines, README_BEGIN, readme_path)
    end = _marker_index(lines, README_END, readme_path)
    if end < begin:
        raise Failure(f"{readme_path}: `{README_END}` comes before `{README_BEGIN}`")
    block = lines[begin + 1 : end]
    listed = [m.group(1) for m in (re.match(r"  ([A-Za-z0-9_]+)/(\s|$)", line) for line in block) if m]
    dirs = sorted(p.name for p in src_dir.iterdir() if p.is_dir() and not p.name.startswith("."))
    problems = [f"{readme_path}: the development tree lacks src/{d}/: add a line `  {d}/  <what it holds>`"
                for d in dirs if d not in listed]
    problems += [f"{readme_path}: the development tree lists {d}/, which is not a directory of {src_dir}: remove it"
                 for d in listed if d not in dirs]
    problems += [f"{readme_path}: the development tree lists {d}/ twice"
                 for d in sorted(set(listed)) if listed.count(d) > 1]
    problems += long_lines(lines[:end], readme_path, begin + 1, skip_tables=False)
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 1)[1])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help="rewrite the doc's table in place")
    mode.add_argument("--check", action="store_true", help="exit 1 when the doc, README.md or src/ disagree with CMake")
    parser.add_argument("--stats", action="store_true",
                        help="when printing: files and lines per module (src/ and include/)")
    parser.add_argument("--cmake", type=Path, default=ROOT / "CMakeLists.txt")
    parser.add_argument("--doc", type=Path, default=ROOT / "docs" / "architecture.md")
    parser.add_argument("--readme", type=Path, default=ROOT / "README.md")
    parser.add_argument("--src", type=Path, default=ROOT / "src", help="the directory of the modules' code")
    args = parser.parse_args()

    modules = read_modules(args.cmake)
    doc_text = args.doc.read_text(encoding="utf-8")
    doc_lines = doc_text.splitlines()
    summaries, problems = descriptions(doc_lines, args.doc)
    names = [m.name for m in modules]
    undescribed = [n for n in names if n not in summaries]
    unknown = [n for n in summaries if n not in names]
    problems += [f"{args.doc}: no `### `{n}`` section after the table: say what the module is there"
                 for n in undescribed]
    problems += [f"{args.doc}: `### `{n}`` describes a module {args.cmake} does not declare (mka_module({n} ...)): "
                 "remove the section, or declare the module" for n in unknown]
    src_dirs = sorted(p.name for p in args.src.iterdir() if p.is_dir() and not p.name.startswith("."))
    problems += [f"{args.src}/{d}: no mka_module({d} ...) in {args.cmake}: its code is not built"
                 for d in src_dirs if d not in names]

    if not args.write and not args.check:
        stats = {m.name: file_stats(m.name, args.src) for m in modules} if args.stats else None
        print("\n".join(table(modules, summaries, stats)))
        for p in problems:
            print("warning:", p, file=sys.stderr)
        return 0

    begin = _marker_index(doc_lines, BEGIN, args.doc)
    end = _marker_index(doc_lines, END, args.doc)
    if end < begin:
        raise Failure(f"{args.doc}: `{END}` comes before `{BEGIN}`")
    current = doc_lines[begin + 1 : end]
    wanted = table(modules, summaries)

    if args.write:
        if undescribed:
            for n in undescribed:
                print(f"error: {args.doc}: no `### `{n}`` section after the table: say what the module is there "
                      "(its first paragraph is the table's `what it is`)", file=sys.stderr)
            print(f"{args.doc} not written", file=sys.stderr)
            return 1
        if current != wanted:
            lines = doc_lines[: begin + 1] + wanted + doc_lines[end:]
            args.doc.write_text("\n".join(lines) + "\n", encoding="utf-8")
            print(f"{args.doc}: module table updated ({len(modules)} modules)")
        else:
            print(f"{args.doc}: module table up to date ({len(modules)} modules)")
        try:
            problems += readme_problems(args.readme, args.src)
        except Failure as e:
            problems.append(str(e))
        problems += long_lines(args.doc.read_text(encoding="utf-8").splitlines(), args.doc)
        for p in problems:
            print("warning:", p, "(--check fails on it)", file=sys.stderr)
        return 0

    if current != wanted:
        diff = difflib.unified_diff(current, wanted, f"{args.doc} (the table now)", f"{args.doc} (from {args.cmake})",
                                    lineterm="")
        print("\n".join(diff))
        problems.append(f"{args.doc}: the module table differs from {args.cmake} (diff above): run {SCRIPT} --write")
    problems += readme_problems(args.readme, args.src)
    problems += long_lines(doc_lines, args.doc)
    for p in problems:
        print("error:", p)
    if problems:
        return 1
    print(f"{args.doc}: the module table matches {args.cmake} ({len(modules)} modules); "
          f"{args.readme}'s tree matches {args.src}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Failure as e:
        print("error:", e, file=sys.stderr)
        sys.exit(2)
