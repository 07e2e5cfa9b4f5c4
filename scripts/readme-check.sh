#!/usr/bin/env bash
# make readme-check: every fenced C, C++, Go or Rust block of README.md must
# appear verbatim in a file that CI builds; the C, C++ and Rust quick starts
# are built and run here, the Go example runs in `make test-go`.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v python3 >/dev/null || { echo "readme-check: python3 is required (apt-get install -y python3)" >&2; exit 1; }
python3 - <<'PY'
import re, sys, pathlib
readme = pathlib.Path("README.md").read_text()
built = ["examples/quickstart.c", "examples/quickstart.cpp", "core/examples/quickstart.rs", "go/example_test.go",
         "rust-sys/examples/quickstart.rs"]
corpus = {p: pathlib.Path(p).read_text() for p in built if pathlib.Path(p).exists()}
blocks = re.findall(r"```(c|cpp|go|rust)\n(.*?)```", readme, re.S)
if not blocks:
    sys.exit("readme-check: no C/C++/Go/Rust block found in README.md")
bad = 0
for lang, body in blocks:
    where = [p for p, text in corpus.items() if body.strip("\n") in text]
    first = body.strip().splitlines()[0]
    if where:
        print(f"readme-check: {lang} block '{first[:50]}' is in {where[0]}")
    else:
        bad += 1
        print(f"readme-check: FAIL: {lang} block '{first[:60]}' is in no built file ({', '.join(built)})")
print(f"readme-check: {len(blocks) - bad} passed, {bad} failed")
sys.exit(1 if bad else 0)
PY
mkdir -p target/c
cc -std=c11 -Wall -Wextra -Wpedantic -Werror -Iinclude examples/quickstart.c \
    target/release/libmooncake_meta.a -lpthread -ldl -lm -o target/c/quickstart
./target/c/quickstart
c++ -std=c++17 -Wall -Wextra -Wpedantic -Werror -Iinclude examples/quickstart.cpp \
    target/release/libmooncake_meta.a -lpthread -ldl -lm -o target/c/quickstart_cpp
./target/c/quickstart_cpp
cargo run --release --quiet -p mooncake-meta-core --example quickstart
