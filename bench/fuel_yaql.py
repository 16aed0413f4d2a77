#!/usr/bin/env python3
"""Fuel's 206 yaql_exp on Python YAQL 3.2 with Nailgun's helpers, against Plinth's record.

The data is what node 1 (a controller) of a 1,000-node Fuel cluster sees, now and as last
deployed (900 nodes); the Rust test `common/tests/expr_fuel_results.rs` writes it
(`PLINTH_FUEL_CONTEXT=<file>`) and holds Plinth's results in
`common/tests/data/fuel_yaql_results.json`.

    --check   evaluate each expression once and compare with the record (exit 1 on a difference
              not listed in KNOWN_DIFFERENCES)
    --bench   time each expression, and with --rust-times (written by
              `FUEL_YAQL_TIMES=<file> cargo bench -p plinth-common --bench expr`) print a
              Markdown table, slowest ratio first

    python3 -m venv /tmp/yq && /tmp/yq/bin/pip install yaql==3.2.0 pyyaml
    PLINTH_FUEL_CONTEXT=/tmp/fuel.json cargo test -p plinth-common --test expr_fuel_results
    /tmp/yq/bin/python bench/fuel_yaql.py --context /tmp/fuel.json --check
"""

import argparse
import hashlib
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import yaql_bench  # noqa: E402  (the helpers, registered as Nailgun does)
import yaql  # noqa: E402
import yaml  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RECORD = os.path.join(ROOT, "common", "tests", "data", "fuel_yaql_results.json")

# Expressions whose results differ on purpose, by position in the record, with the reason.
KNOWN_DIFFERENCES = {}


def canonical(v):
    return json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def digest(v):
    text = canonical(v)
    return hashlib.sha256(text.encode()).hexdigest(), len(text.encode())


def outcome(text, ok, value):
    """The record's form of a result (see the Rust test)."""
    if not ok:
        return {"expr": text, "error": True}
    value = yaql_bench.plain(value)
    if isinstance(value, str) and "toYaml()" in text:
        return {"expr": text, "yaml": digest(yaml.safe_load(value))[0]}
    if isinstance(value, str) and "toJson()" in text:
        return {"expr": text, "json": digest(json.loads(value))[0]}
    sha, length = digest(value)
    if length <= 200:
        return {"expr": text, "value": value}
    return {"expr": text, "sha256": sha, "len": length}


def same(a, b):
    """Records agree (numbers by value: Python's 1 and 1.0 are one number)."""
    return canonical(a) == canonical(b) or json.loads(canonical(a)) == json.loads(canonical(b))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--context", required=True, help="the data the Rust test wrote")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--bench", action="store_true")
    ap.add_argument("--rust-times", help="Plinth's times, one per expression (JSON list of seconds)")
    ap.add_argument("--budget", type=float, default=0.2, help="seconds per expression when timing")
    args = ap.parse_args()

    with open(args.context) as f:
        data = json.load(f)
    with open(RECORD) as f:
        record = json.load(f)
    engine = yaql.factory.YaqlFactory(allow_delegates=True).create(
        options={"yaql.limitIterators": -1, "yaql.memoryQuota": -1})
    ctx = yaql_bench.make_context(data["new"], data["old"])

    def run(parsed):
        try:
            return True, yaql_bench.plain(parsed.evaluate(context=ctx.create_child_context()))
        except Exception as e:  # noqa: BLE001  (any YAQL failure is "an error")
            return False, repr(e)

    differences, py_times = [], []
    for i, rec in enumerate(record):
        text = rec["expr"]
        try:
            parsed = engine(text)
        except Exception as e:  # noqa: BLE001
            parsed, ok, value = None, False, repr(e)
        if parsed is not None:
            ok, value = run(parsed)
        got = outcome(text, ok, value)
        if not same(got, rec):
            if i in KNOWN_DIFFERENCES:
                print("known difference #%d: %s" % (i, KNOWN_DIFFERENCES[i]))
            else:
                differences.append((i, text, rec, got, value))
        if args.bench and parsed is not None:
            py_times.append(yaql_bench.timed(lambda: run(parsed), args.budget))
        elif args.bench:
            py_times.append(None)

    for i, text, rec, got, value in differences:
        print("DIFFERENT #%d: %s\n  Plinth: %s\n  Python: %s\n  (Python said %s)"
              % (i, " ".join(text.split())[:200], json.dumps(rec)[:300], json.dumps(got)[:300],
                 str(value)[:300]))
    agree = len(record) - len(differences) - sum(1 for i in KNOWN_DIFFERENCES if i < len(record))
    print("fuel yaql_exp: %d passed, %d failed" % (agree + len(KNOWN_DIFFERENCES), len(differences)))

    if args.bench and args.rust_times:
        with open(args.rust_times) as f:
            rust = json.load(f)
        rows = []
        for i, rec in enumerate(record):
            p, r = py_times[i], rust[i]
            if p and r:
                rows.append((p / r, i, rec["expr"], p, r))
        rows.sort()
        print("| # | expression | Python YAQL | Plinth | ratio |")
        print("|---|---|---|---|---|")
        for ratio, i, text, p, r in rows:
            short = " ".join(text.split())
            if len(short) > 90:
                short = short[:87] + "..."
            print("| %d | `%s` | %s | %s | %s× |" % (
                i, short.replace("|", "\\|"), yaql_bench.fmt(p), yaql_bench.fmt(r),
                "{:,.0f}".format(ratio)))
    return 1 if args.check and differences else 0


if __name__ == "__main__":
    sys.exit(main())
