#!/usr/bin/env bash
# make docs-check: the documentation stands alone. In README.md, docs/,
# bench/README.md, include/, src/, core/src/, go/ and rust-sys/ it fails on
#   - a section reference ("§4", "§4.8", "docs/CONTRACT.md section 9") that
#     is not a heading of docs/CONTRACT.md ("## 4. ..." or "### 4.8 ...");
#   - any mention of SEMANTICS, ANCHOR.md or ../shared (documents that are
#     not in the repository), or of this project's issue tracker by number
#     ("issue 11"; an upstream "Mooncake issue #3028" is fine);
#   - a relative Markdown link [text](path) in a .md file whose path does not
#     exist (an #anchor after the path is not checked; http(s):, mailto: and
#     pure #anchor links are skipped).
#
# usage: scripts/check-docs.sh              check the repository
#        scripts/check-docs.sh --self-test  show that it fails on bad fixtures
#        scripts/check-docs.sh --root DIR   check another tree (used by the self-test)
set -euo pipefail

cd "$(dirname "$0")/.."
SCRIPT=$PWD/scripts/check-docs.sh
command -v python3 >/dev/null || { echo "check-docs: python3 is required (apt-get install -y python3)" >&2; exit 1; }

check() {
    python3 - "$1" <<'PY'
import os, re, sys, pathlib

root = pathlib.Path(sys.argv[1])
PLACES = ["README.md", "docs", "bench/README.md", "include", "src", "core/src", "go", "rust-sys"]
EXTS = {".md", ".h", ".hpp", ".rs", ".go", ".c", ".cpp", ".toml", ".in"}
SKIP_DIRS = {"target", ".git", "testdata"}

contract = root / "docs" / "CONTRACT.md"
if not contract.is_file():
    sys.exit(f"check-docs: {contract} is missing")
headings = set()
for line in contract.read_text(encoding="utf-8").splitlines():
    m = re.match(r"^#{2,3} (\d+(?:\.\d+)?)\.? ", line)
    if m:
        headings.add(m.group(1))

def files():
    for place in PLACES:
        p = root / place
        if p.is_file():
            yield p
        elif p.is_dir():
            for dirpath, dirnames, names in os.walk(p):
                dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
                for n in sorted(names):
                    f = pathlib.Path(dirpath) / n
                    if f.suffix in EXTS:
                        yield f

SECTION = re.compile(r"§\s?(\d+(?:\.\d+)?)|CONTRACT\.md,? sections? (\d+(?:\.\d+)?)")
OUTSIDE = re.compile(r"SEMANTICS|ANCHOR\.md|\.\./shared|\b[Ii]ssue[- ]\d+\b")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^\s*(```|~~~)")

bad = 0
checked = 0
def fail(f, n, what):
    global bad
    bad += 1
    print(f"check-docs: FAIL: {f.relative_to(root)}:{n}: {what}")

for f in files():
    checked += 1
    try:
        text = f.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        fail(f, 0, "not UTF-8")
        continue
    in_fence = False
    for n, line in enumerate(text.splitlines(), 1):
        for m in SECTION.finditer(line):
            sec = m.group(1) or m.group(2)
            if sec not in headings:
                fail(f, n, f"'{m.group(0)}' is not a section of docs/CONTRACT.md")
        m = OUTSIDE.search(line)
        if m and m.group(0).lower().startswith("issue"):
            fail(f, n, f"'{m.group(0)}' points at the issue tracker; say what it asks in the repository's own words")
        elif m:
            fail(f, n, f"'{m.group(0)}' names a document outside the repository")
        if f.suffix != ".md":
            continue
        if FENCE.match(line):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        for m in LINK.finditer(line):
            target = m.group(1)
            if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
                continue
            path = target.split("#", 1)[0]
            dest = (f.parent / path) if not path.startswith("/") else (root / path.lstrip("/"))
            if not dest.exists():
                fail(f, n, f"link to '{target}': {path} does not exist")

if checked == 0:
    sys.exit("check-docs: no file checked (wrong root?)")
print(f"check-docs: {checked} files, {len(headings)} sections of docs/CONTRACT.md, {bad} problem(s)")
sys.exit(1 if bad else 0)
PY
}

case "${1:-}" in
"")
    check "$PWD"
    exit
    ;;
--root)
    check "$2"
    exit
    ;;
--self-test) ;;
*)
    echo "usage: $0 [--self-test | --root DIR]" >&2
    exit 2
    ;;
esac

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# A small tree that passes; each fixture adds one bad reference to a copy.
make_tree() {
    rm -rf "$tmp/tree" && mkdir -p "$tmp/tree/docs" "$tmp/tree/src" "$tmp/tree/go"
    cat >"$tmp/tree/docs/CONTRACT.md" <<'EOF'
# contract
## 1. Time
## 4. The soft pin
### 4.8 Deadline index
EOF
    cat >"$tmp/tree/README.md" <<'EOF'
See [the contract](docs/CONTRACT.md#4-the-soft-pin), [upstream](https://example.com/x.md)
and [below](#time); the index is in §4.8 and time in §1 (upstream: Mooncake issue #3028).
```sh
echo "[not a link](nowhere.md)"
```
EOF
    echo '//! Deadline index (docs/CONTRACT.md §4.8, and docs/CONTRACT.md section 4).' >"$tmp/tree/src/lib.rs"
    echo '// A manual clock (docs/CONTRACT.md §1).' >"$tmp/tree/go/doc.go"
}

rc=0
# expect NAME MESSAGE: check the tree, which must fail (or pass, MESSAGE "")
expect() {
    local name=$1 message=$2 out
    if out=$(bash "$SCRIPT" --root "$tmp/tree" 2>&1); then
        if [ -n "$message" ]; then
            echo "check-docs self-test: FAIL: '$name' was not detected" >&2
            echo "$out" >&2
            rc=1
        else
            echo "check-docs self-test: ok: $name passes"
        fi
    elif [ -z "$message" ]; then
        echo "check-docs self-test: FAIL: '$name' should pass:" >&2
        echo "$out" >&2
        rc=1
    elif ! grep -qF -- "$message" <<<"$out"; then
        echo "check-docs self-test: FAIL: '$name' failed for another reason:" >&2
        echo "$out" >&2
        rc=1
    else
        echo "check-docs self-test: ok: $name -> $(grep -F -- "$message" <<<"$out" | head -1)"
    fi
}

make_tree
expect "clean fixture" ""

make_tree
echo '// Pending rule (§3.4).' >>"$tmp/tree/src/lib.rs"
expect "section the contract lacks" "src/lib.rs:2: '§3.4' is not a section of docs/CONTRACT.md"

make_tree
echo '/** Checks docs/CONTRACT.md section 9. */' >"$tmp/tree/src/config.h"
mkdir -p "$tmp/tree/include" && mv "$tmp/tree/src/config.h" "$tmp/tree/include/"
expect "'section N' the contract lacks" "include/config.h:1: 'CONTRACT.md section 9' is not a section"

make_tree
echo '// Defaults of SEMANTICS §1.' >>"$tmp/tree/go/doc.go"
expect "SEMANTICS" "go/doc.go:2: 'SEMANTICS' names a document outside the repository"

make_tree
echo 'The upstream figures are in ANCHOR.md.' >>"$tmp/tree/README.md"
expect "ANCHOR.md" "'ANCHOR.md' names a document outside the repository"

make_tree
echo 'As in ../shared/spec, roughly.' >>"$tmp/tree/docs/CONTRACT.md"
expect "../shared" "docs/CONTRACT.md:5: '../shared' names a document outside the repository"

make_tree
echo '// The targets of issue 11.' >>"$tmp/tree/src/lib.rs"
expect "issue-tracker number" "src/lib.rs:2: 'issue 11' points at the issue tracker"

make_tree
echo 'Read [the guide](docs/GUIDE.md#intro).' >>"$tmp/tree/README.md"
expect "link to a missing file" "link to 'docs/GUIDE.md#intro': docs/GUIDE.md does not exist"

# The C API reference generator (make docs) fails on mutated headers.
# expect_api NAME MESSAGE HEADER: scripts/c-api-doc.py must fail on HEADER saying MESSAGE.
expect_api() {
    local name=$1 message=$2 header=$3 out
    if out=$(python3 scripts/c-api-doc.py "$header" "$tmp/api.md" 2>&1); then
        echo "check-docs self-test: FAIL: c-api-doc did not detect '$name'" >&2
        rc=1
    elif ! grep -qF -- "$message" <<<"$out"; then
        echo "check-docs self-test: FAIL: c-api-doc failed on '$name' for another reason:" >&2
        echo "$out" >&2
        rc=1
    else
        echo "check-docs self-test: ok: c-api-doc: $name -> $(grep -F -- "$message" <<<"$out" | head -1)"
    fi
}
sed 's/`mooncake_meta_bytes_len`/`mooncake_meta_bytes_length`/' include/mooncake_meta.h >"$tmp/badref.h"
expect_api "reference to an undeclared name" "names \`mooncake_meta_bytes_length\`, which the header does not declare" "$tmp/badref.h"
# Drop the doc comment right above mooncake_meta_version's declaration.
awk '
    /^\/\*\*/ { held = ""; holding = 1 }
    holding { held = held $0 "\n"; if ($0 ~ /\*\/$/) holding = 0; next }
    /^const char \*mooncake_meta_version\(void\);/ { held = "" }
    { printf "%s", held; held = ""; print }
' include/mooncake_meta.h >"$tmp/undocumented.h"
expect_api "undocumented function" "function mooncake_meta_version has no doc comment" "$tmp/undocumented.h"
if out=$(python3 scripts/c-api-doc.py include/mooncake_meta.h "$tmp/api.md" 2>&1); then
    echo "check-docs self-test: ok: c-api-doc passes on the real header"
else
    echo "check-docs self-test: FAIL: c-api-doc fails on the real header:" >&2
    echo "$out" >&2
    rc=1
fi

# And the repository itself passes, so the failures above are the fixtures'.
if out=$(bash "$SCRIPT" 2>&1); then
    echo "check-docs self-test: ok: the repository passes ($(tail -1 <<<"$out"))"
else
    echo "check-docs self-test: FAIL: the repository does not pass:" >&2
    echo "$out" >&2
    rc=1
fi
exit $rc
