#!/usr/bin/env bash
# make readme-check: the README's code compiles as shown.
#
# Every fenced block of README.md tagged c, cpp / c++, go or rust is either
#   - complete: it contains a main (`int main`, `func main`, `fn main`). It is
#     extracted to a file of its own, built exactly as it stands, and run
#     (it must exit 0):
#       c     cc -std=c11 -Wall -Wextra -Wpedantic -Werror -Iinclude, static library
#       cpp   c++ -std=c++17 -Wall -Wextra -Wpedantic -Werror -Iinclude, static library
#       go    a package main inside the go/ module (default static link)
#       rust  an example of the sys crate if it uses mooncake_meta_sys, else
#             of the core crate
#   - or a fragment: it must appear verbatim in one of the files the tests
#     build (examples/, core/examples/, rust-sys/examples/, c_tests/, go/*_test.go).
# Then the quick-start examples themselves are built and run.
#
# usage: scripts/readme-check.sh [README]    (default README.md)
#        scripts/readme-check.sh --self-test  show that a broken block fails
set -euo pipefail
cd "$(dirname "$0")/.."
command -v python3 >/dev/null || { echo "readme-check: python3 is required (apt-get install -y python3)" >&2; exit 1; }
CC=${CC:-cc}
CXX=${CXX:-c++}
CARGO=${CARGO:-cargo}
LIB=target/release/libmooncake_meta.a

if [ "${1:-}" = "--self-test" ]; then
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    rc=0
    # expect NAME MESSAGE README-TEXT: checking README-TEXT must fail with MESSAGE.
    expect() {
        local name=$1 message=$2 out
        printf '%s\n' "$3" >"$tmp/README.md"
        if out=$(bash scripts/readme-check.sh --blocks-only "$tmp/README.md" 2>&1); then
            echo "readme-check self-test: FAIL: '$name' was not detected" >&2
            rc=1
        elif ! grep -qF -- "$message" <<<"$out"; then
            echo "readme-check self-test: FAIL: '$name' failed for another reason:" >&2
            echo "$out" >&2
            rc=1
        else
            echo "readme-check self-test: ok: $name -> $(grep -F -- "$message" <<<"$out" | head -1)"
        fi
    }
    fence='```'
    expect "complete C block that does not compile" "c block at line 2 does not build" \
        "$(printf 'x\n%sc\n#include <mooncake_meta.h>\nint main(void) { return mooncake_meta_no_such_function(); }\n%s' "$fence" "$fence")"
    expect "complete C block that fails when run" "c block at line 2 exited with status 3" \
        "$(printf 'x\n%sc\nint main(void) { return 3; }\n%s' "$fence" "$fence")"
    expect "complete C++ block that does not compile" "cpp block at line 2 does not build" \
        "$(printf 'x\n%scpp\n#include <string_view>\nint main() { std::string_view s = 1; return 0; }\n%s' "$fence" "$fence")"
    expect "fragment found nowhere" "rust block at line 2 is a fragment in no built file" \
        "$(printf 'x\n%srust\n    let no_such_line_anywhere = 42;\n%s' "$fence" "$fence")"
    expect "README without code" "no C, C++, Go or Rust block" "just prose"
    exit $rc
fi

blocks_only=0
if [ "${1:-}" = "--blocks-only" ]; then
    blocks_only=1
    shift
fi
README=${1:-README.md}

tmp=$(mktemp -d)
cleanup() {
    rm -rf "$tmp"
    rm -rf go/.readme-check core/examples/readme_check_*.rs rust-sys/examples/readme_check_*.rs
}
trap cleanup EXIT

# Extract the blocks: one file per block in $tmp, and a list "KIND LANG LINE FILE".
python3 - "$README" "$tmp" <<'PY'
import pathlib, re, sys
readme, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
lines = readme.read_text(encoding="utf-8").splitlines()
LANG = {"c": "c", "cpp": "cpp", "c++": "cpp", "go": "go", "rust": "rust"}
MAIN = {"c": r"\bint\s+main\s*\(", "cpp": r"\bint\s+main\s*\(", "go": r"\bfunc\s+main\s*\(",
        "rust": r"\bfn\s+main\s*\("}
CORPUS = ["examples", "core/examples", "rust-sys/examples", "c_tests"]
corpus = {}
for d in CORPUS:
    for p in sorted(pathlib.Path(d).rglob("*")):
        if p.is_file() and p.suffix in {".c", ".cpp", ".cc", ".h", ".hpp", ".rs", ".go"} \
                and not p.name.startswith("readme_check_"):
            corpus[str(p)] = p.read_text(encoding="utf-8")
for p in sorted(pathlib.Path("go").glob("*_test.go")):
    corpus[str(p)] = p.read_text(encoding="utf-8")
listing, count, bad = [], {}, 0
i = 0
while i < len(lines):
    m = re.match(r"^```\s*([^\s`]*)", lines[i])
    if not m:
        i += 1
        continue
    tag, start, i = m.group(1).lower(), i + 1, i + 1
    body = []
    while i < len(lines) and not lines[i].startswith("```"):
        body.append(lines[i])
        i += 1
    i += 1
    if tag not in LANG:
        continue
    lang = LANG[tag]
    count[lang] = count.get(lang, 0) + 1
    name = f"{lang} block at line {start}"
    text = "\n".join(body) + "\n"
    if re.search(MAIN[lang], text):
        f = out / f"block{len(listing)}.{ {'c': 'c', 'cpp': 'cpp', 'go': 'go', 'rust': 'rs'}[lang] }"
        f.write_text(text, encoding="utf-8")
        listing.append(f"complete {lang} {start} {f}")
    else:
        frag = text.strip("\n")
        where = [p for p, t in corpus.items() if frag in t]
        if where:
            print(f"readme-check: {name} is a fragment of {where[0]}")
        else:
            bad += 1
            print(f"readme-check: FAIL: {name} is a fragment in no built file "
                  f"(not a whole program: no main): '{frag.strip().splitlines()[0][:60]}'")
if not count:
    sys.exit(f"readme-check: FAIL: no C, C++, Go or Rust block in {readme}")
(out / "blocks").write_text("".join(l + "\n" for l in listing))
if bad:
    sys.exit(f"readme-check: {bad} fragment(s) in no built file")
PY

fail=0
n=0
while read -r kind lang line file; do
    [ "$kind" = complete ] || continue
    n=$((n + 1))
    name="$lang block at line $line"
    exe=$tmp/prog$n
    case $lang in
    c) build() { "$CC" -std=c11 -Wall -Wextra -Wpedantic -Werror -Iinclude "$file" "$LIB" -lpthread -ldl -lm -o "$exe"; } ;;
    cpp) build() { "$CXX" -std=c++17 -Wall -Wextra -Wpedantic -Werror -Iinclude "$file" "$LIB" -lpthread -ldl -lm -o "$exe"; } ;;
    go)
        build() {
            command -v go >/dev/null || { echo "go is required: install Go >= 1.24 from https://go.dev/dl/"; return 1; }
            rm -rf go/.readme-check && mkdir -p go/.readme-check && cp "$file" go/.readme-check/main.go &&
                (cd go && GOTOOLCHAIN=local CGO_ENABLED=1 go build -o "$exe" ./.readme-check)
        }
        ;;
    rust)
        if grep -q 'mooncake_meta_sys' "$file"; then crate=mooncake-meta-sys dir=rust-sys; else crate=mooncake-meta-core dir=core; fi
        build() {
            cp "$file" "$dir/examples/readme_check_$n.rs" &&
                "$CARGO" build --release --quiet -p "$crate" --example "readme_check_$n" &&
                cp "target/release/examples/readme_check_$n" "$exe"
        }
        ;;
    esac
    if ! build </dev/null >"$tmp/build$n.log" 2>&1; then
        echo "readme-check: FAIL: $name does not build:" >&2
        sed 's/^/    /' "$tmp/build$n.log" >&2
        fail=$((fail + 1))
        continue
    fi
    set +e
    "$exe" </dev/null >"$tmp/run$n.log" 2>&1
    status=$?
    set -e
    if [ "$status" -ne 0 ]; then
        echo "readme-check: FAIL: $name exited with status $status:" >&2
        sed 's/^/    /' "$tmp/run$n.log" >&2
        fail=$((fail + 1))
    else
        echo "readme-check: $name builds and runs: $(head -1 "$tmp/run$n.log")"
    fi
done <"$tmp/blocks"
[ "$fail" -eq 0 ] || { echo "readme-check: $fail complete block(s) failed" >&2; exit 1; }
echo "readme-check: $n complete block(s) built and run, every fragment found in a built file"
[ "$blocks_only" -eq 1 ] && exit 0

# The examples the README points to.
mkdir -p target/c
"$CC" -std=c11 -Wall -Wextra -Wpedantic -Werror -Iinclude examples/quickstart.c \
    "$LIB" -lpthread -ldl -lm -o target/c/quickstart
./target/c/quickstart
"$CARGO" run --release --quiet -p mooncake-meta-core --example quickstart
"$CXX" -std=c++17 -Wall -Wextra -Wpedantic -Werror -Iinclude examples/quickstart.cpp \
    "$LIB" -lpthread -ldl -lm -o target/c/quickstart_cpp
./target/c/quickstart_cpp
