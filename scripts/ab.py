#!/usr/bin/env python3
"""Compares two builds of the benchmark harness, alternating them in one window.

usage: scripts/ab.py [--rounds N] [--env KEY=VALUE]... BIN_A BIN_B -- CHILD_ARGS...
       scripts/ab.py --self-test
       scripts/ab.py --help

Runs `BIN_A CHILD_ARGS...` and `BIN_B CHILD_ARGS...` N times each (default 6),
alternately, and swaps which of the two goes first from one round to the next:
on a shared machine the second process of a pair can run some figures several
per cent slower or faster than the first (an A/A run showed Removes 7-10 %
slower, bench/README.md "Fresh memory on the put path"), so a fixed order
biases the comparison. Each run's last line of output must be one JSON object
(what `mooncake-meta-bench --child ...` prints). For every numeric field the
script prints the median of A, the median of B, the median over rounds of
B / A, in how many rounds B was higher, and how many rounds were skipped for
that field (either build's value not a finite number, e.g. null, or A's 0).
The fields are those that are a number in any round of either build. A ratio
above 1 is better for a rate and worse for a time.

Example (two copies of target/release/mooncake-meta-bench, one per build):

    MOONCAKE_BENCH_CLOCK=cpu scripts/ab.py --rounds 8 /tmp/bench-before \\
        /tmp/bench-after -- --child write n=1000000 op=pin_interleaved
"""

import json
import math
import os
import statistics
import subprocess
import sys
import tempfile


def usage(msg):
    sys.stderr.write(f"ab.py: {msg}\n")
    sys.stderr.write(__doc__.split("\n\n")[1] + "\n")
    sys.exit(2)


def parse(argv):
    rounds, env, rest = 6, {}, list(argv)
    pos = []
    while rest:
        a = rest.pop(0)
        if a == "--":
            break
        if a == "--rounds":
            if not rest:
                usage("--rounds needs a number")
            try:
                rounds = int(rest.pop(0))
            except ValueError:
                usage("--rounds needs a number")
            if rounds < 1:
                usage("--rounds must be at least 1")
        elif a == "--env":
            if not rest or "=" not in rest[0]:
                usage("--env needs KEY=VALUE")
            k, v = rest.pop(0).split("=", 1)
            env[k] = v
        else:
            pos.append(a)
    if len(pos) != 2:
        usage("two builds are needed: BIN_A BIN_B")
    return rounds, env, pos[0], pos[1], rest


def run_once(cmd, env):
    full_env = dict(os.environ, **env)
    p = subprocess.run(cmd, env=full_env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    lines = [l for l in p.stdout.splitlines() if l.strip()]
    if p.returncode != 0 or not lines:
        sys.exit(f"ab.py: {' '.join(cmd)} failed (exit {p.returncode}, {len(lines)} lines of output)")
    try:
        row = json.loads(lines[-1])
    except json.JSONDecodeError as e:
        sys.exit(f"ab.py: {' '.join(cmd)}: its last line is not JSON ({e}): {lines[-1][:120]!r}")
    if not isinstance(row, dict):
        sys.exit(f"ab.py: {' '.join(cmd)}: its last line is not a JSON object")
    return row


def compare(rounds, env, a, b, args, run=run_once, out=sys.stdout):
    rows = {"A": [], "B": []}
    for i in range(rounds):
        order = ("A", "B") if i % 2 == 0 else ("B", "A")
        for which in order:
            binary = a if which == "A" else b
            rows[which].append(run([binary] + args, env))
    # Every field that is a number in any round of either build, in the
    # order first seen: a field one build left null in its first round is
    # still compared over the rounds where both have it.
    fields = []
    for row in rows["A"] + rows["B"]:
        for k, v in row.items():
            if is_number(v) and k not in fields:
                fields.append(k)
    result = {}
    out.write(f"{'field':45s} {'A':>12s} {'B':>12s} {'B/A':>7s}  B higher  skipped\n")
    for k in fields:
        # A round pairs A's and B's value of the field; a pair where either
        # side is not a finite number (null, missing, NaN) or A's is 0 (no
        # ratio) is skipped and counted.
        pairs = []
        for x, y in zip(rows["A"], rows["B"]):
            xa, yb = x.get(k), y.get(k)
            if is_finite(xa) and is_finite(yb) and xa != 0:
                pairs.append((xa, yb))
        skipped = rounds - len(pairs)
        if not pairs:
            result[k] = (None, None, None, 0, 0, skipped)
            out.write(f"{k:45s} {'-':>12s} {'-':>12s} {'-':>7s}  0/0       {skipped}\n")
            continue
        ratio = statistics.median(y / x for x, y in pairs)
        higher = sum(y > x for x, y in pairs)
        ma = statistics.median(x for x, _ in pairs)
        mb = statistics.median(y for _, y in pairs)
        result[k] = (ma, mb, ratio, higher, len(pairs), skipped)
        counted = f"{higher}/{len(pairs)}"
        out.write(f"{k:45s} {ma:12.4g} {mb:12.4g} {ratio:7.4f}  {counted:8s}  {skipped}\n")
    return result


def is_number(v):
    """A JSON number (not a boolean)."""
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def is_finite(v):
    """A JSON number that is finite (not a boolean, null, NaN or infinite)."""
    return is_number(v) and math.isfinite(v)


def self_test():
    with tempfile.TemporaryDirectory() as d:
        log = os.path.join(d, "order")
        progs = {}
        for name, rate, ms in [("a", 100, 10), ("b", 150, 5)]:
            path = os.path.join(d, name)
            with open(path, "w") as f:
                f.write(
                    "#!/usr/bin/env python3\n"
                    "import json, sys\n"
                    f"open({log!r}, 'a').write({name!r})\n"
                    "print('noise first')\n"
                    f"print(json.dumps({{'rate': {rate}, 'time_ms': {ms}, 'ok': True, 'name': {name!r}}}))\n"
                )
            os.chmod(path, 0o755)
            progs[name] = path
        import io

        out = io.StringIO()
        res = compare(4, {}, progs["a"], progs["b"], ["--child", "x"], out=out)
        order = open(log).read()
        assert order == "abbaabba", f"the builds' order does not alternate: {order}"
        assert res["rate"] == (100, 150, 1.5, 4, 4, 0), res["rate"]
        assert res["time_ms"] == (10, 5, 0.5, 0, 4, 0), res["time_ms"]
        assert "ok" not in res and "name" not in res, "non-numeric fields are not compared"
        # A field null in some rounds of A (its first among them): compared
        # over the other rounds, the skipped ones counted; never dropped.
        count = os.path.join(d, "count")
        nully = os.path.join(d, "nully")
        with open(nully, "w") as f:
            f.write(
                "#!/usr/bin/env python3\n"
                "import json, os\n"
                f"n = len(open({count!r}).read()) if os.path.exists({count!r}) else 0\n"
                f"open({count!r}, 'a').write('x')\n"
                "print(json.dumps({'rate': 100, 'p99': None if n in (0, 2) else 5.0,\n"
                "                  'late': None if n == 0 else 1.0}))\n"
            )
        os.chmod(nully, 0o755)
        full = os.path.join(d, "full")
        with open(full, "w") as f:
            f.write("#!/bin/sh\necho '{\"rate\": 150, \"p99\": 4.0, \"late\": 2.0, \"gone\": null}'\n")
        os.chmod(full, 0o755)
        out = io.StringIO()
        res = compare(4, {}, nully, full, [], out=out)
        assert res["rate"] == (100, 150, 1.5, 4, 4, 0), res["rate"]
        # Rounds 0 and 2 skipped (A null), rounds 1 and 3 compared.
        assert res["p99"] == (5.0, 4.0, 0.8, 0, 2, 2), res["p99"]
        # Null in A's first round only: not dropped.
        assert res["late"] == (1.0, 2.0, 2.0, 3, 3, 1), res["late"]
        assert "gone" not in res, "a field that is never a number is not compared"
        # A build whose last line is not JSON stops the comparison with a message.
        bad = os.path.join(d, "bad")
        with open(bad, "w") as f:
            f.write("#!/bin/sh\necho not json\n")
        os.chmod(bad, 0o755)
        p = subprocess.run(
            [sys.executable, __file__, "--rounds", "1", progs["a"], bad, "--"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert p.returncode != 0 and "not JSON" in p.stderr, p.stderr
        p = subprocess.run(
            [sys.executable, __file__, progs["a"]], stderr=subprocess.PIPE, text=True
        )
        assert p.returncode == 2 and "two builds" in p.stderr, p.stderr
    print("ab.py self-test: ok")


def main():
    if sys.argv[1:] == ["--self-test"]:
        self_test()
        return
    if sys.argv[1:2] in (["-h"], ["--help"]):
        print(__doc__.strip())
        return
    rounds, env, a, b, args = parse(sys.argv[1:])
    compare(rounds, env, a, b, args)


if __name__ == "__main__":
    main()
