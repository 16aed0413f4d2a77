#!/usr/bin/env python3
"""Python YAQL side of the expression benchmark.

Builds the same 1,000-node deployment context as `common/benches/expr.rs` (Nailgun's shape:
cluster data merged with the node's own), evaluates the same expressions with Python YAQL and
Nailgun-style deployment helpers, and prints per-expression timings. With `--with-rust` it also
runs the Rust benchmark (criterion) and prints both side by side with the speed-up.

    python3 -m venv /tmp/yq && /tmp/yq/bin/pip install yaql==3.2.0 pyyaml
    /tmp/yq/bin/python bench/yaql_bench.py --with-rust
"""

import argparse
import collections.abc  # YAQL's utils needs it imported first
import json
import os
import subprocess
import sys
import time

import yaql
from yaql.language import specs, utils, yaqltypes

EXPRESSIONS = [
    ("where_len", "$.nodes.where($.status = 'ready' and 'controller' in $.roles).len()"),
    ("changed_where", "changed($.nodes.where($.status = 'ready' and 'controller' in $.roles))"),
    ("uid_in_added", "$.uid in added($.network_metadata.nodes.values()).uid"),
    ("switch_deployed_before", "switch($.get('deployed_before', {}).get('value') => 1, true => 6)"),
    ("ceph_changed_any",
     "($.storage.objects_ceph or $.storage.images_ceph or\n $.storage.volumes_ceph or $.storage.ephemeral_ceph) and\n"
     "changedAny($.storage, $.get('use_syslog'), $.network_scheme, $.network_metadata.nodes.values().where(\n"
     " $.node_roles.any($.matches('(primary-)?controller'))))"),
    ("changed_nodes", "changed($.network_metadata.nodes)"),
    ("name_of_new_uid", "$.network_metadata.nodes.values().where($.uid = new($.uid)).name.first()"),
]


def node(i):
    if i % 50 == 0:
        roles = ["controller"]
    elif i % 3 == 0:
        roles = ["compute", "ceph-osd"]
    elif i % 3 == 1:
        roles = ["compute"]
    else:
        roles = ["cinder"]
    status = "discover" if i % 7 == 3 else "ready"
    pending = status == "discover"
    tags = list(roles) + (["primary-controller"] if i == 0 else [])
    return {
        "id": i + 1,
        "uid": str(i + 1),
        "name": "node-%d" % (i + 1),
        "roles": roles,
        "tags": tags,
        "labels": {"rack": "r%d" % (i % 20), "env": "prod"},
        "rack": "r%d" % (i % 20),
        "status": status,
        "pending_addition": pending,
        "pending_deletion": i % 97 == 5,
        "pending_roles": list(roles) if pending else [],
        "deployed_roles": [] if pending else list(roles),
        "facts": {"cpus": 8 * (1 + i % 4), "memory_gb": 64 + 32 * (i % 3), "disks": 2 + i % 5, "os": "ubuntu-16.04"},
    }


def context(n):
    nodes = [node(i) for i in range(n)]
    meta = {}
    for i, nd in enumerate(nodes):
        ip = "10.0.%d.%d" % (i // 250, i % 250 + 1)
        meta[nd["name"]] = {
            "uid": nd["uid"], "name": nd["name"], "fqdn": "%s.example.org" % nd["name"],
            "node_roles": nd["tags"],
            "network_roles": {"mgmt/database": ip, "mgmt/messaging": ip,
                              "cinder/iscsi": "10.1.%d.%d" % (i // 250, i % 250 + 1)},
        }
    data = {
        "cluster": {"id": 1, "name": "env-1", "status": "operational", "mode": "ha_compact", "fuel_version": "9.0"},
        "settings": {
            "storage": {"objects_ceph": True, "images_ceph": True, "volumes_ceph": True, "ephemeral_ceph": False},
            "additional_components": {"murano": False, "sahara": False, "ceilometer": True},
            "public_ssl": {"horizon": True, "services": True},
        },
        "storage": {"objects_ceph": True, "images_ceph": True, "volumes_ceph": True, "ephemeral_ceph": False,
                    "per_pool_pg_nums": {"volumes": 2048, "images": 256}},
        "deployed_before": {"value": True},
        "use_syslog": True,
        "network_scheme": {"version": "1.1",
                           "endpoints": {"br-mgmt": {"IP": ["10.0.0.2/24"], "gateway": "10.0.0.1"},
                                         "br-ex": {"IP": ["172.16.0.3/24"]}},
                           "roles": {"mgmt/database": "br-mgmt", "ex": "br-ex"}},
        "network_metadata": {"nodes": meta, "vips": {"management": {"ipaddr": "10.0.9.1"},
                                                     "public": {"ipaddr": "172.16.0.2"}}},
        "nodes": nodes,
    }
    data.update(node(0))
    data["fqdn"] = "node-1.example.org"
    return data


# Deployment helpers as Nailgun registers them: evaluate against the new or the old state.
UNDEF = utils.NO_VALUE


def materialize(x):
    """YAQL queries return lazy iterators; compare and diff their items, not the iterators."""
    if utils.is_iterator(x) or isinstance(x, (collections.abc.KeysView, collections.abc.ValuesView)):
        return tuple(materialize(i) for i in x)
    return x


@specs.parameter("expression", yaqltypes.Lambda())
@specs.name("new")
def new_(context, expression):
    return materialize(expression(context["$%new"]))


def _old(context, expression):
    old = context["$%old"]
    if old is None:
        return UNDEF
    try:
        return materialize(expression(old))
    except Exception:
        return UNDEF


@specs.parameter("expression", yaqltypes.Lambda())
@specs.name("old")
def old_(context, expression):
    return _old(context, expression)


def _changed(context, expression):
    return materialize(expression(context["$%new"])) != _old(context, expression)


@specs.parameter("expression", yaqltypes.Lambda())
@specs.name("changed")
def changed(context, expression):
    return _changed(context, expression)


@specs.parameter("expressions", yaqltypes.Lambda())
@specs.name("changedAny")
def changed_any(context, *expressions):
    return any(_changed(context, e) for e in expressions)


@specs.parameter("expressions", yaqltypes.Lambda())
@specs.name("changedAll")
def changed_all(context, *expressions):
    return all(_changed(context, e) for e in expressions)


def _diff(a, b):
    if b is UNDEF:
        return a
    if isinstance(a, dict) and isinstance(b, dict):
        return {k: v for k, v in a.items() if k not in b or b[k] != v}
    if utils.is_sequence(a) and utils.is_sequence(b):
        try:
            theirs = set(b)
        except TypeError:
            theirs = list(b)
        return [x for x in a if x not in theirs]
    return None if a == b else a


@specs.parameter("expression", yaqltypes.Lambda())
@specs.name("added")
def added(context, expression):
    return _diff(materialize(expression(context["$%new"])), _old(context, expression))


@specs.parameter("expression", yaqltypes.Lambda())
@specs.name("deleted")
def deleted(context, expression):
    old = _old(context, expression)
    if old is UNDEF:
        return None
    return _diff(old, materialize(expression(context["$%new"])))


@specs.name("isUndef")
def is_undef(value=UNDEF):
    return value is UNDEF


def plain(x):
    """A YAQL result as plain JSON data (frozen dictionaries, tuples and iterators unwrapped)."""
    if x is UNDEF:
        return None
    if isinstance(x, str):
        return x
    if isinstance(x, collections.abc.Mapping):
        return {k: plain(v) for k, v in x.items()}
    if isinstance(x, (bytes, bytearray)):
        return x.decode()
    if isinstance(x, collections.abc.Iterable):
        return [plain(i) for i in x]
    return x


@specs.method
@specs.name("toYaml")
def to_yaml(receiver):
    import yaml
    return yaml.safe_dump(plain(receiver), default_flow_style=False)


@specs.method
@specs.name("toJson")
def to_json(receiver):
    return json.dumps(plain(receiver))


def make_context(new, old):
    ctx = yaql.create_context()
    for f in (new_, old_, changed, changed_any, changed_all, added, deleted, is_undef, to_yaml, to_json):
        ctx.register_function(f)
    new = utils.convert_input_data(new)
    ctx["$"] = new
    ctx["$%new"] = new
    ctx["$%old"] = utils.convert_input_data(old)
    return ctx


def timed(fn, budget):
    """Mean seconds per call, running for about `budget` seconds (at least 3 calls)."""
    fn()
    runs, start = 0, time.perf_counter()
    while True:
        fn()
        runs += 1
        elapsed = time.perf_counter() - start
        if runs >= 3 and elapsed >= budget:
            return elapsed / runs


def rust_estimates(root):
    """Runs the criterion benchmark and reads its mean estimates (seconds) by name."""
    subprocess.run(["cargo", "bench", "-p", "plinth-common", "--bench", "expr", "--", "--noplot"], cwd=root, check=True)
    out = {}
    for group, scale, prefix in (("expr", 1, ""), ("per_node_1000", 1000, "per_node/")):
        base = os.path.join(root, "target", "criterion", group)
        for name in os.listdir(base):
            path = os.path.join(base, name, "new", "estimates.json")
            if os.path.exists(path):
                with open(path) as f:
                    out[prefix + name] = json.load(f)["mean"]["point_estimate"] / 1e9 / scale
    return out


def fmt(seconds):
    if seconds is None:
        return "-"
    if seconds >= 1e-3:
        return "%.2f ms" % (seconds * 1e3)
    if seconds >= 1e-6:
        return "%.2f us" % (seconds * 1e6)
    return "%.0f ns" % (seconds * 1e9)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--budget", type=float, default=2.0, help="seconds per measurement")
    ap.add_argument("--with-rust", action="store_true", help="also run the Rust benchmark and compare")
    args = ap.parse_args()

    engine = yaql.factory.YaqlFactory(allow_delegates=True).create(
        options={"yaql.limitIterators": -1, "yaql.memoryQuota": -1})
    ctx = make_context(context(args.nodes), context(args.nodes - 1))
    py = {}
    for name, text in EXPRESSIONS:
        parsed = engine(text)
        result = parsed.evaluate(context=ctx.create_child_context())
        py[name] = timed(lambda: parsed.evaluate(context=ctx.create_child_context()), args.budget)
        print("python %-24s %12s  result %s" % (name, fmt(py[name]), json.dumps(result, default=str)[:60]), flush=True)
    texts = ["%s and %d > 0" % (EXPRESSIONS[i % len(EXPRESSIONS)][1].replace("\n", " "), i) for i in range(1000)]
    py["parse_1000_distinct"] = timed(lambda: [engine(t) for t in texts], args.budget)
    print("python %-24s %12s" % ("parse_1000_distinct", fmt(py["parse_1000_distinct"])), flush=True)

    if not args.with_rust:
        return 0
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    rust = rust_estimates(root)
    print()
    print("One evaluation (node 1's merged data, nothing shared), and the cost per node when all 1,000")
    print("nodes of the deployment evaluate it (node-independent parts once), against Python's one evaluation:")
    print("%-24s %12s %12s %10s %12s %10s" % ("expression", "python", "rust", "speed-up", "per node", "speed-up"))
    for name in [n for n, _ in EXPRESSIONS] + ["parse_1000_distinct"]:
        p, r, n = py.get(name), rust.get(name), rust.get("per_node/" + name)
        ratio = "%.0fx" % (p / r) if p and r else "-"
        ratio_n = "%.0fx" % (p / n) if p and n else "-"
        print("%-24s %12s %12s %10s %12s %10s" % (name, fmt(p), fmt(r), ratio, fmt(n), ratio_n))
    return 0


if __name__ == "__main__":
    sys.exit(main())
