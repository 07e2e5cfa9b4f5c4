#!/usr/bin/env python3
"""make docs: the C API reference, a Markdown page generated from the doc
comments of include/mooncake_meta.h (which cbindgen copies from src/*.rs).

usage: scripts/c-api-doc.py [HEADER [OUT]]
       (defaults: include/mooncake_meta.h, target/doc/c-api/mooncake_meta.md)

Like a documentation generator run with warnings as errors, it fails (exit 1,
one line per problem) instead of writing the page when
  - a function, type, struct field or constant has no /** doc comment */,
  - a doc comment is not followed by a declaration,
  - a doc comment names in backticks a `mooncake_meta_*` / `MOONCAKE_META_*`
    identifier (or a `MOONCAKE_META_X_*` family) the header does not declare,
  - a line of the header cannot be classified.
Only the Python standard library is used, so nothing has to be installed.
"""

import pathlib
import re
import sys

HEADER = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "include/mooncake_meta.h")
OUT = pathlib.Path(sys.argv[2] if len(sys.argv) > 2 else "target/doc/c-api/mooncake_meta.md")

lines = HEADER.read_text(encoding="utf-8").splitlines()
problems = []


def problem(n, what):
    problems.append(f"{HEADER}:{n}: {what}")


def doc_text(block):
    """The text of a /** ... */ block, without the comment markers."""
    out = []
    for raw in block:
        s = raw.strip()
        if s.startswith("/**"):
            s = s[3:]
        if s.endswith("*/"):
            s = s[:-2]
        s = s.strip()
        if s.startswith("* ") or s == "*":
            s = s[2:]
        out.append(s.rstrip())
    while out and not out[0]:
        out.pop(0)
    while out and not out[-1]:
        out.pop()
    return out


# --- parse: (kind, name, declaration lines, doc lines, fields, line number) --
items = []
i = 0
n_lines = len(lines)
pending_doc = None  # (doc lines, line number)
plain_doc = []  # the last plain /* comment */ (shared by the version defines)


def take_comment(i):
    block = [lines[i]]
    while not lines[i].rstrip().endswith("*/"):
        i += 1
        block.append(lines[i])
    return block, i + 1


while i < n_lines:
    line = lines[i]
    s = line.strip()
    if not s:
        i += 1
        continue
    if s.startswith("/**"):
        if pending_doc:
            problem(pending_doc[1], "doc comment not followed by a declaration")
        block, j = take_comment(i)
        pending_doc = (doc_text(block), i + 1)
        i = j
        continue
    if s.startswith("/*"):
        block, i = take_comment(i)
        plain_doc = [ln.lstrip("/*").rstrip("*/").strip() for ln in block]
        continue
    if s.startswith("#include") or s.startswith("#ifndef MOONCAKE_META_H") or \
            s.startswith("#endif") or s == "#define MOONCAKE_META_H" or \
            s.startswith("#ifdef __cplusplus") or s.startswith('extern "C"') or s.startswith("}"):
        if pending_doc:
            problem(pending_doc[1], "doc comment not followed by a declaration")
            pending_doc = None
        i += 1
        continue
    start = i
    m = re.match(r"#define (MOONCAKE_META_\w+)\s+(.*)$", s)
    if m:
        name = m.group(1)
        decl = [s]
        kind = "constant"
        fields = []
        i += 1
    elif re.match(r"typedef struct (\w+) \{$", s):
        name = re.match(r"typedef struct (\w+) \{$", s).group(1)
        kind = "struct"
        decl = [line]
        fields = []
        field_doc = None
        i += 1
        while not lines[i].startswith("}"):
            fs = lines[i].strip()
            if fs.startswith("/**"):
                block, i = take_comment(i)
                field_doc = (doc_text(block), i)
                continue
            fm = re.match(r"(.*?)(\w+)(\[[^\]]*\])?;$", fs)
            if not fm:
                problem(i + 1, f"cannot parse a field of {name}: {fs}")
            else:
                if field_doc is None:
                    problem(i + 1, f"field {name}.{fm.group(2)} has no doc comment")
                fields.append((fm.group(2), fs, field_doc[0] if field_doc else []))
            decl.append("    " + fs)
            field_doc = None
            i += 1
        decl.append(lines[i])
        i += 1
    elif s.startswith("typedef "):
        decl = [s]
        while not decl[-1].endswith(";"):
            i += 1
            decl.append(lines[i])
        i += 1
        name = re.search(r"(\w+)\s*;$", decl[-1]).group(1)
        kind = "type"
        fields = []
    elif "(" in s and re.match(r"[A-Za-z_][\w\s\*]*?\b(mooncake_meta_\w+)\(", s):
        name = re.match(r"[A-Za-z_][\w\s\*]*?\b(mooncake_meta_\w+)\(", s).group(1)
        decl = [line]
        while not decl[-1].rstrip().endswith(";"):
            i += 1
            decl.append(lines[i])
        i += 1
        kind = "function"
        fields = []
    elif re.match(r"#define MOONCAKE_META_VERSION_", s):
        i += 1
        continue
    else:
        problem(i + 1, f"cannot classify: {s}")
        i += 1
        continue
    if pending_doc is None:
        # The version defines share one plain comment; everything else needs
        # its own doc comment.
        if name.startswith("MOONCAKE_META_VERSION_") and plain_doc:
            doc = plain_doc
        else:
            problem(start + 1, f"{kind} {name} has no doc comment")
            doc = []
    else:
        doc = pending_doc[0]
        pending_doc = None
    items.append((kind, name, decl, doc, fields, start + 1))

if pending_doc:
    problem(pending_doc[1], "doc comment not followed by a declaration")

# --- cross-references --------------------------------------------------------
declared = {name for _, name, _, _, _, _ in items}
declared |= {ln.split()[1] for ln in lines if ln.startswith("#define MOONCAKE_META_")}
for kind, name, decl, doc, fields, n in items:
    texts = [doc] + [fdoc for _, _, fdoc in fields]
    for text in texts:
        for ref in re.findall(r"`([^`]*)`", " ".join(text)):
            for ident in re.findall(r"\b((?:mooncake_meta|MOONCAKE_META)_\w*\*?)", ref):
                if ident.endswith("*"):
                    prefix = ident[:-1]
                    if not any(d.startswith(prefix) for d in declared):
                        problem(n, f"doc of {name} names `{ident}`: no declaration starts with {prefix}")
                elif ident not in declared:
                    problem(n, f"doc of {name} names `{ident}`, which the header does not declare")

if problems:
    for p in problems:
        print(f"c-api-doc: {p}", file=sys.stderr)
    print(f"c-api-doc: {len(problems)} problem(s); no reference written", file=sys.stderr)
    sys.exit(1)

# --- render ------------------------------------------------------------------


def render_doc(doc):
    out = []
    for ln in doc:
        if ln.startswith("# "):
            out.append(f"**{ln[2:]}**")
        else:
            out.append(ln)
    return "\n".join(out)


abi = next((d[0].split()[2] for k, nm, d, _, _, _ in items if nm == "MOONCAKE_META_ABI_VERSION"), "?")
version = next((ln.split()[2].strip('"') for ln in lines
                if ln.startswith("#define MOONCAKE_META_VERSION_STRING")), "?")
groups = [("Constants", "constant"), ("Types", "type"), ("Structs", "struct"), ("Functions", "function")]
md = [
    "# libmooncake_meta C API reference",
    "",
    f"Library version {version}, ABI {abi}. Generated by `make docs` from the doc",
    "comments of `include/mooncake_meta.h`; the behaviour of each operation is",
    "specified in the repository's `docs/CONTRACT.md`.",
    "",
]
header_intro = []
for ln in lines[1:]:
    if ln.strip() == "*/":
        break
    header_intro.append(ln.strip()[2:] if ln.strip().startswith("* ") else "")
md += [ln for ln in header_intro] + [""]
for title, kind in groups:
    sel = [it for it in items if it[0] == kind]
    md.append(f"## {title}")
    md.append("")
    md += [f"- [`{it[1]}`](#{it[1].lower()})" for it in sel]
    md.append("")
for title, kind in groups:
    for k, name, decl, doc, fields, _ in (it for it in items if it[0] == kind):
        md.append(f"### {name}")
        md.append("")
        md.append("```c")
        md += decl
        md.append("```")
        md.append("")
        if doc:
            md.append(render_doc(doc))
            md.append("")
        if fields:
            md.append("| field | meaning |")
            md.append("|---|---|")
            for fname, fdecl, fdoc in fields:
                md.append(f"| `{fdecl}` | {' '.join(fdoc)} |")
            md.append("")

OUT.parent.mkdir(parents=True, exist_ok=True)
OUT.write_text("\n".join(md).rstrip("\n") + "\n", encoding="utf-8")
counts = ", ".join(f"{sum(1 for it in items if it[0] == k)} {t.lower()}" for t, k in groups)
print(f"c-api-doc: {OUT} ({counts})")
