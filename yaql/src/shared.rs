//! Parts of an expression that do not depend on the node: found once, evaluated once per
//! deployment (or per class of nodes sharing an old state), reused for every node.
//!
//! A deployment evaluates each `yaql_exp` once per node, with `$` the cluster part and the node's
//! own keys over it. A subtree that reads only cluster keys (`$.network_metadata`, `$common`),
//! literals and the items of its own lambdas has the same value for every node with the same old
//! state. [`shared_parts`] finds the largest such subtrees that call something (anything cheaper
//! is not worth keeping); [`Shared`] holds their values, which evaluation then reads instead of
//! evaluating the subtree again.
//!
//! The analysis is conservative: a function it does not know may rebind `$`, so a subtree with
//! one is shared only when nothing under it reads `$` or a variable.

use std::sync::Arc;

use crate::json::Json as J;

use super::ast::{Arg, Args, Kind, Node};
use super::hashindex::{HashIndex, Names};
use super::parser::Expression;
use super::states::StateRoot;
use super::value::{Value, View};

/// Functions whose arguments are evaluated against the current or the last deployed state, with
/// `$` bound to that state's root.
const STATE_FUNCTIONS: [&str; 7] = [
    "new",
    "old",
    "changed",
    "changedAny",
    "changedAll",
    "added",
    "deleted",
];

/// Functions whose value may differ from one call to the next: never shared.
const NOT_SHARED: [&str; 3] = ["now", "random", "localtz"];

/// Methods whose arguments are lambdas over the receiver's items (`$` is the item).
const LAMBDA_METHODS: [&str; 22] = [
    "where",
    "filter",
    "select",
    "map",
    "any",
    "all",
    "selectMany",
    "orderBy",
    "orderByDescending",
    "thenBy",
    "thenByDescending",
    "groupBy",
    "skipWhile",
    "takeWhile",
    "indexWhere",
    "lastIndexWhere",
    "distinct",
    "sum",
    "min",
    "max",
    "splitWhere",
    "sliceWhere",
];

/// Functions and methods that evaluate their arguments as values, in the caller's scope.
const EAGER: [&str; 58] = [
    "len",
    "count",
    "get",
    "values",
    "keys",
    "items",
    "matches",
    "contains",
    "containsKey",
    "containsValue",
    "str",
    "int",
    "float",
    "toLower",
    "toUpper",
    "split",
    "join",
    "trim",
    "replace",
    "startsWith",
    "endsWith",
    "list",
    "dict",
    "set",
    "toList",
    "toSet",
    "concat",
    "flatten",
    "union",
    "intersect",
    "difference",
    "first",
    "last",
    "single",
    "isEmpty",
    "isList",
    "isDict",
    "isString",
    "isInteger",
    "isNumber",
    "isBoolean",
    "isUndef",
    "toJson",
    "toYaml",
    "regex",
    "format",
    "substring",
    "indexOf",
    "abs",
    "range",
    "append",
    "skip",
    "take",
    "limit",
    "reverse",
    "switch",
    "coalesce",
    "bool",
];

/// What a subtree reads.
#[derive(Debug, Clone, Copy, Default)]
struct Reads {
    /// The node's own keys, `$node`, the whole `$`, or something the analysis cannot see through.
    node: bool,
    /// A variable bound inside the expression (a lambda's `$`, a state function's `$`).
    bound: bool,
    /// Calls something (worth keeping).
    work: bool,
    /// The `$` a deployment helper binds to the current or the last deployed state.
    state: bool,
}

impl Reads {
    fn or(self, o: Reads) -> Reads {
        Reads {
            node: self.node || o.node,
            bound: self.bound || o.bound,
            work: self.work || o.work,
            state: self.state || o.state,
        }
    }
    const OPAQUE: Reads = Reads {
        node: true,
        bound: true,
        work: true,
        state: true,
    };
}

/// What `$` means where a subtree is evaluated.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Dollar {
    /// The root of the data (the node's layered state).
    Root,
    /// The root of the current or old state, bound by a state function.
    State,
    /// A lambda's argument.
    Item,
}

struct Finder<'n, 'f> {
    per_node: &'f dyn Fn(&str) -> bool,
    found: Vec<Node<'n>>,
    /// The largest subtrees that read the state a deployment helper binds `$` to, but only its
    /// keys that are not the node's own.
    state_found: Vec<Node<'n>>,
    /// Arguments of `changed()`, `changedAny()`, `changedAll()` that do not read the node.
    changed: Vec<Node<'n>>,
    /// `P.where($.key = Y)` (or `Y = $.key`) with `Y` not reading the item: (the `where` node,
    /// `P`, the key, `Y` on the left).
    joins: Vec<(Node<'n>, Node<'n>, &'n str, bool)>,
    /// `X in P`: (the `in` node, `P`).
    members: Vec<(Node<'n>, Node<'n>)>,
}

impl<'n> Finder<'n, '_> {
    /// Analyses `n`; records the largest shareable subtrees below it when `n` itself is not one
    /// (the caller records `n` when it is, and is the largest).
    fn visit(&mut self, n: Node<'n>, dollar: Dollar) -> Reads {
        let mut parts: Vec<(Node<'n>, Reads)> = Vec::new();
        let reads = self.reads(n, dollar, &mut parts);
        if !(shareable(reads)) {
            for (p, r) in parts {
                if shareable(r) {
                    self.found.push(p);
                } else if state_shareable(r) && !state_shareable(reads) {
                    self.state_found.push(p);
                }
            }
        }
        reads
    }

    /// Analyses a child: returns its reads and keeps it as a candidate.
    fn child(&mut self, n: Node<'n>, dollar: Dollar, parts: &mut Vec<(Node<'n>, Reads)>) -> Reads {
        let r = self.visit(n, dollar);
        parts.push((n, r));
        r
    }

    fn args(
        &mut self,
        args: Args<'n>,
        dollar: Dollar,
        parts: &mut Vec<(Node<'n>, Reads)>,
    ) -> Reads {
        let mut r = Reads::default();
        for a in args {
            r = r.or(self.arg(a, dollar, parts));
        }
        r
    }

    fn arg(&mut self, a: Arg<'n>, dollar: Dollar, parts: &mut Vec<(Node<'n>, Reads)>) -> Reads {
        match a {
            Arg::Pos(n) => self.child(n, dollar, parts),
            Arg::Map(k, v) => {
                let mut r = Reads::default();
                // A named argument's name is no expression.
                if !matches!(k.kind(), Kind::Word(_)) {
                    r = r.or(self.child(k, dollar, parts));
                }
                r.or(self.child(v, dollar, parts))
            }
            Arg::Skip => Reads::default(),
        }
    }

    fn dollar(&self, dollar: Dollar, key: Option<&str>) -> Reads {
        match (dollar, key) {
            (Dollar::Item, _) => Reads {
                bound: true,
                ..Reads::default()
            },
            (Dollar::Root, Some(k)) => Reads {
                node: (self.per_node)(k),
                ..Reads::default()
            },
            (Dollar::State, Some(k)) => Reads {
                node: (self.per_node)(k),
                state: true,
                ..Reads::default()
            },
            (_, None) => Reads {
                node: true,
                state: dollar == Dollar::State,
                ..Reads::default()
            },
        }
    }

    fn reads(&mut self, n: Node<'n>, dollar: Dollar, parts: &mut Vec<(Node<'n>, Reads)>) -> Reads {
        let is_dollar = |v: &str| v.is_empty() || v == "1";
        match n.kind() {
            Kind::Null
            | Kind::Bool(_)
            | Kind::Int(_)
            | Kind::Float(_)
            | Kind::Str(_)
            | Kind::Word(_)
            | Kind::Const(_) => Reads::default(),
            Kind::Var(v) if is_dollar(v) => self.dollar(dollar, None),
            Kind::Var("common") => Reads::default(),
            Kind::Var("data") => self.dollar(Dollar::Root, None),
            Kind::Var(v) if v.chars().all(|c| c.is_ascii_digit()) && dollar == Dollar::Item => {
                self.dollar(dollar, None)
            }
            Kind::Var(_) => Reads::OPAQUE,
            Kind::Member { recv, rhs, .. } => {
                if let (Kind::Var(v), Kind::Word(k)) = (recv.kind(), rhs.kind()) {
                    if is_dollar(v) {
                        return self.dollar(dollar, Some(k));
                    }
                    if v == "data" {
                        return self.dollar(Dollar::Root, Some(k));
                    }
                }
                let r = self.child(recv, dollar, parts);
                match rhs.kind() {
                    Kind::Word(_) => r,
                    _ => Reads::OPAQUE,
                }
            }
            Kind::Method {
                recv, name, args, ..
            } => {
                // `$.get('key', default)` reads one key of the root.
                let (recv_reads, rest) = match (recv.kind(), name, args.first()) {
                    (Kind::Var(v), "get", Some(Arg::Pos(key))) if is_dollar(v) => {
                        let r = match key.kind() {
                            Kind::Str(k) | Kind::Word(k) => self.dollar(dollar, Some(k)),
                            _ => self.dollar(dollar, None),
                        };
                        (r, args.skip(1))
                    }
                    _ => (self.child(recv, dollar, parts), args),
                };
                let work = Reads {
                    work: true,
                    ..Reads::default()
                };
                if matches!(name, "where" | "filter") {
                    if let Some((key, left)) = self.join_key(args) {
                        self.joins.push((n, recv, key, left));
                    }
                }
                if LAMBDA_METHODS.contains(&name) {
                    let mut inner = self.args(rest, Dollar::Item, parts);
                    // The lambda's `$` (and `$1`, `$2`) are bound here; anything else it reads
                    // (a named variable) is already marked as reading the node.
                    inner.bound = false;
                    recv_reads.or(inner).or(work)
                } else if EAGER.contains(&name) {
                    recv_reads.or(self.args(rest, dollar, parts)).or(work)
                } else {
                    let inner = self.args(rest, Dollar::Item, parts);
                    recv_reads.or(opaque_if_reads(inner)).or(work)
                }
            }
            Kind::Call(name, _) if NOT_SHARED.contains(&name) => Reads::OPAQUE,
            Kind::Call(name, args) => {
                let work = Reads {
                    work: true,
                    ..Reads::default()
                };
                if STATE_FUNCTIONS.contains(&name) {
                    let compares = matches!(name, "changed" | "changedAny" | "changedAll");
                    let mut inner = Reads::default();
                    for a in args {
                        let r = match a {
                            Arg::Pos(x) => {
                                let r = self.child(x, Dollar::State, parts);
                                if compares && !r.node {
                                    self.changed.push(x);
                                }
                                r
                            }
                            other => self.arg(other, Dollar::State, parts),
                        };
                        inner = inner.or(r);
                    }
                    // The state's `$` is bound here.
                    inner.state = false;
                    inner.or(work)
                } else if EAGER.contains(&name) {
                    self.args(args, dollar, parts).or(work)
                } else {
                    let inner = self.args(args, Dollar::Item, parts);
                    opaque_if_reads(inner).or(work)
                }
            }
            Kind::Index(v, args) => {
                let r = self.child(v, dollar, parts);
                r.or(self.args(args, dollar, parts))
            }
            Kind::List(args) | Kind::Dict(args) => self.args(args, dollar, parts),
            Kind::Paren(inner) | Kind::Unary(_, inner) => self.child(inner, dollar, parts),
            Kind::Binary(super::ast::BinOp::Then, _, _) | Kind::Invoke(..) => Reads::OPAQUE,
            Kind::Binary(op, l, r) => {
                if op == super::ast::BinOp::In {
                    self.members.push((n, r));
                }
                let a = self.child(l, dollar, parts);
                a.or(self.child(r, dollar, parts))
            }
        }
    }

    /// For `where($.key = Y)` or `where(Y = $.key)` where `Y` reads neither the item nor any
    /// other bound variable: the key, and whether `Y` is on the left.
    fn join_key(&self, args: Args<'n>) -> Option<(&'n str, bool)> {
        let p = args.one()?;
        let Kind::Binary(super::ast::BinOp::Eq, l, r) = p.kind() else {
            return None;
        };
        let key_of = |n: Node<'n>| match n.kind() {
            Kind::Member {
                recv,
                rhs,
                safe: false,
            } => match (recv.kind(), rhs.kind()) {
                (Kind::Var(v), Kind::Word(k)) if v.is_empty() || v == "1" => Some(k),
                _ => None,
            },
            _ => None,
        };
        let (key, y, left) = match (key_of(l), key_of(r)) {
            (Some(k), None) => (k, r, false),
            (None, Some(k)) => (k, l, true),
            _ => return None,
        };
        let mut probe = Finder {
            per_node: self.per_node,
            found: Vec::new(),
            state_found: Vec::new(),
            changed: Vec::new(),
            joins: Vec::new(),
            members: Vec::new(),
        };
        let mut parts = Vec::new();
        let reads = probe.reads(y, Dollar::Item, &mut parts);
        (!reads.bound && !reads.state).then_some((key, left))
    }
}

/// A function the analysis does not know may rebind `$`: if its arguments read `$` or a
/// variable, nothing about it can be shared.
fn opaque_if_reads(r: Reads) -> Reads {
    if r.node || r.bound || r.state {
        Reads::OPAQUE
    } else {
        r
    }
}

fn shareable(r: Reads) -> bool {
    !r.node && !r.bound && !r.state && r.work
}

/// Reads the state a deployment helper binds `$` to, but nothing of the node: the same for every
/// node of a class, once for the current state and once for the old one.
fn state_shareable(r: Reads) -> bool {
    !r.node && !r.bound && r.state && r.work
}

/// The largest subtrees of `root` that call something and read neither the node (`$node`, keys
/// for which `per_node` is true, the whole `$`) nor a variable bound outside them.
pub fn shared_parts<'n>(root: Node<'n>, per_node: &dyn Fn(&str) -> bool) -> Vec<Node<'n>> {
    find(root, per_node).parts
}

/// What [`find`] finds.
pub struct Found<'n> {
    /// The largest shareable subtrees.
    pub parts: Vec<Node<'n>>,
    /// The largest subtrees that read only keys of the state a deployment helper binds `$` to
    /// that are not the node's own (kept once for each state).
    pub state_parts: Vec<Node<'n>>,
    /// Node-independent arguments of `changed()`, `changedAny()`, `changedAll()`.
    pub changed: Vec<Node<'n>>,
    /// `P.where($.key = Y)` with `Y` independent of the item: (`where` node, `P`, key, `Y` left).
    pub joins: Vec<(Node<'n>, Node<'n>, &'n str, bool)>,
    /// `X in P`: (`in` node, `P`).
    pub members: Vec<(Node<'n>, Node<'n>)>,
}

/// [`shared_parts`], and the arguments of `changed()`, `changedAny()` and `changedAll()` that
/// read no node key (whether they changed is the same for every node of a class).
pub fn find<'n>(root: Node<'n>, per_node: &dyn Fn(&str) -> bool) -> Found<'n> {
    let mut f = Finder {
        per_node,
        found: Vec::new(),
        state_found: Vec::new(),
        changed: Vec::new(),
        joins: Vec::new(),
        members: Vec::new(),
    };
    let r = f.visit(root, Dollar::Root);
    Found {
        parts: if shareable(r) { vec![root] } else { f.found },
        state_parts: if shareable(r) {
            Vec::new()
        } else {
            f.state_found
        },
        changed: f.changed,
        joins: f.joins,
        members: f.members,
    }
}

/// The largest shareable subtrees strictly below `part` (itself a shareable part, which reads
/// `$` only at the root if at all): where to look when `part`'s own value cannot be kept.
pub fn find_below<'n>(part: Node<'n>, per_node: &dyn Fn(&str) -> bool) -> Vec<Node<'n>> {
    let mut f = Finder {
        per_node,
        found: Vec::new(),
        state_found: Vec::new(),
        changed: Vec::new(),
        joins: Vec::new(),
        members: Vec::new(),
    };
    let mut parts = Vec::new();
    f.reads(part, Dollar::Root, &mut parts);
    for (p, r) in parts {
        if shareable(r) {
            f.found.push(p);
        }
    }
    f.found
}

/// One shared part's value.
#[derive(Debug, Clone)]
pub(crate) struct Part {
    /// The subtree's address in the expression (the expression is kept alive by [`Shared`]).
    pub(crate) node: usize,
    /// Its value.
    pub(crate) value: J,
    /// It was a query result (`list()` spreads those).
    pub(crate) iter: bool,
    /// For a part read with `$` the state a deployment helper binds: which state.
    pub(crate) state: Option<StateRoot>,
}

/// The values of an expression's node-independent parts for one class of nodes (same cluster
/// part, same old cluster part, same forced flag). Build with [`super::Engine::share`], pass
/// with [`super::Context::shared`].
#[derive(Debug, Clone)]
pub struct Shared {
    pub(crate) expr: Arc<Expression>,
    pub(crate) parts: Vec<Part>,
    /// Whether each node-independent argument of `changed()` and the like changed.
    pub(crate) changed: Vec<(usize, bool)>,
    /// Indexes for `P.where($.key = Y)` over a kept `P`.
    pub(crate) joins: Vec<Join>,
    /// Indexes for `X in P` over a kept list `P`: (the `in` node, `P`, positions by hash).
    pub(crate) members: Vec<(usize, usize, HashIndex)>,
    /// The error of the whole expression, when it reads nothing of the node and fails.
    pub(crate) whole_error: Option<super::errors::EvalError>,
    /// The bits ([`Node::bit`]) of the nodes with a kept value or an index: a node whose bit is
    /// not set has none, found without searching.
    pub(crate) kept: u64,
}

/// An index of a kept list of objects by one key, for `where($.key = Y)` over it.
#[derive(Debug, Clone)]
pub(crate) struct Join {
    /// The `where` node.
    pub(crate) node: usize,
    /// The list (`P`): a [`Part`]'s value for [`JoinIndex::Positions`].
    pub(crate) part: usize,
    /// The key.
    pub(crate) key: String,
    /// `Y` is on the left of `=`.
    pub(crate) left: bool,
    /// Where the items are, by the hash of their value at `key`.
    pub(crate) index: JoinIndex,
    /// For a list read in the state a deployment helper binds `$` to: which state.
    pub(crate) state: Option<StateRoot>,
}

/// Where a [`Join`]'s items are.
#[derive(Debug, Clone)]
pub(crate) enum JoinIndex {
    /// Positions in the kept list `P`.
    Positions(HashIndex),
    /// `P` is `D.values()` for a dictionary `D` read in place from the input by a path of keys
    /// (`$.network_metadata.nodes`): the items' names in `D`, by position, which each evaluation
    /// reads again (nothing of `D` is copied): at the same position when the key there is still
    /// that name, else by name.
    Names(HashIndex, Names),
}

/// `X` when `node` is `X.values()` and `X` a path of keys from a variable (`$.a.b`, `$common.a`):
/// cheap to evaluate again, and read in place.
pub(crate) fn values_of_path(node: Node<'_>) -> Option<Node<'_>> {
    let Kind::Method {
        recv,
        name,
        args,
        safe: false,
    } = node.kind()
    else {
        return None;
    };
    if name != "values" || !args.is_empty() {
        return None;
    }
    let mut at: Node<'_> = recv;
    loop {
        match at.kind() {
            Kind::Var(_) => return Some(recv),
            Kind::Member {
                recv: r,
                rhs,
                safe: false,
            } if matches!(rhs.kind(), Kind::Word(_)) => at = r,
            _ => return None,
        }
    }
}

/// Indexes the values of `d` by their value at `key`, by position, with their names; `None`
/// unless every value is an object with that key.
pub(crate) fn build_names(d: &crate::json::Object, key: &str) -> Option<(HashIndex, Names)> {
    let mut hashes = Vec::with_capacity(d.len());
    let mut names = Names::with_capacity(d.len());
    for (name, item) in d {
        let v = super::value::json_get(item.as_object()?, key)?;
        hashes.push(join_hash(&Value::from_json(v)));
        names.push(name);
    }
    Some((HashIndex::build(&hashes)?, names))
}

/// The hash [`Join`] indexes by (consistent with YAQL equality: `1 = 1.0`).
pub(crate) fn join_hash(v: &Value<'_>) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = super::value::FxHasher::default();
    v.hash(&mut h);
    h.finish()
}

/// Indexes `items` by their own hash.
pub(crate) fn build_set(items: &[J]) -> Option<HashIndex> {
    let hashes: Vec<u64> = items
        .iter()
        .map(|item| join_hash(&Value::from_json(item)))
        .collect();
    HashIndex::build(&hashes)
}

/// Indexes `items` by their value at `key`; `None` unless every item is an object with that key.
pub(crate) fn build_index(items: &[J], key: &str) -> Option<HashIndex> {
    let mut hashes = Vec::with_capacity(items.len());
    for item in items {
        let v = super::value::json_get(item.as_object()?, key)?;
        hashes.push(join_hash(&Value::from_json(v)));
    }
    HashIndex::build(&hashes)
}

impl Shared {
    /// How many parts have a kept value (values, `changed()` answers and indexes).
    pub fn len(&self) -> usize {
        self.parts.len() + self.changed.len() + self.joins.len() + self.members.len()
    }

    /// True when nothing could be kept (every node evaluates the whole expression).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The whole expression's value, when it does not depend on the node at all.
    pub fn whole(&self) -> Option<&J> {
        let root = self.expr.root().addr();
        self.parts
            .iter()
            .find(|p| p.node == root && p.state.is_none())
            .map(|p| &p.value)
    }

    /// The whole expression's error, when it does not depend on the node and fails (every node
    /// of the class would get this same error).
    pub fn whole_error(&self) -> Option<&super::errors::EvalError> {
        self.whole_error.as_ref()
    }

    /// True when these values were computed for `expr` (the same parsed expression).
    pub fn is_for(&self, expr: &Expression) -> bool {
        self.expr.root().same(expr.root())
    }
}

/// A value as JSON when nothing is lost on the way back: no undefined value, set, regex,
/// lambda, sequence, date, non-string key, non-finite float, and query results only at the top.
pub(crate) fn lossless(v: &Value<'_>, top: bool, depth: usize) -> bool {
    if depth > 64 {
        return false;
    }
    match v {
        Value::Undef
        | Value::Set(_)
        | Value::Regex(_)
        | Value::Lambda(_)
        | Value::Gen(_)
        | Value::DateTime(_)
        | Value::Span(_) => false,
        Value::Float(x) => x.is_finite(),
        Value::Iter(_) if !top => false,
        Value::List(items) | Value::Iter(items) => {
            items.iter().all(|x| lossless(x, false, depth + 1))
        }
        Value::Dict(d) => d
            .iter()
            .all(|(k, x)| matches!(k.view(), View::Str(_)) && lossless(x, false, depth + 1)),
        // Borrowed input, and JSON numbers, are always finite.
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Expression;

    /// The canonical text of the parts found, with `uid`, `roles` and `name` the node's own keys.
    fn parts(text: &str) -> (Vec<String>, Vec<String>) {
        let e = Expression::parse(text).expect("parses");
        let per_node = |k: &str| matches!(k, "uid" | "roles" | "name");
        let found = find(e.root(), &per_node);
        let show = |v: Vec<Node<'_>>| v.iter().map(|n| n.to_string()).collect();
        (show(found.parts), show(found.changed))
    }

    #[test]
    fn cluster_reads_are_shared_node_reads_are_not() {
        let (p, _) = parts("changed($.nodes.where('controller' in $.roles).len())");
        assert_eq!(p, ["changed($.nodes.where('controller' in $.roles).len())"]);
        let (p, _) = parts("$.uid in added($.network_metadata.nodes.values()).uid");
        assert_eq!(p, ["added($.network_metadata.nodes.values()).uid"]);
        let (p, _) = parts("$.network_metadata.nodes.values().where($.uid = new($.uid)).first()");
        assert_eq!(p, ["$.network_metadata.nodes.values()"]);
        let (p, _) = parts("switch($.get('deployed_before', {}).get('value') => 1, true => 6)");
        assert_eq!(p.len(), 1, "the whole switch: {p:?}");
        // The node's own keys, `$node`, the whole `$`: per node.
        for text in [
            "$.roles.len()",
            "$.get('uid').len()",
            "$node.roles.len()",
            "$.len()",
            "changed($)",
            "let(x => $.nodes) -> $x.len()",
        ] {
            assert!(parts(text).0.is_empty(), "{text}");
        }
        // A lambda's `$` is its item: the lambda alone is never a part, the query is.
        let (p, _) = parts("$.roles.where($ in $common.tags.toSet())");
        assert_eq!(p, ["$common.tags.toSet()"]);
        // An unknown function may rebind `$`: not trusted with `$` inside.
        assert!(parts("$.nodes.myQuery($.name.len())").0.is_empty());
        // The clock and randomness are never kept.
        assert!(parts("now().year").0.is_empty());
    }

    #[test]
    fn changed_arguments_without_node_keys_are_answered_once() {
        let (p, c) = parts("changedAny($.storage, ('controller' in $.roles), $.network_metadata)");
        assert!(p.is_empty(), "{p:?}");
        assert_eq!(c, ["$.storage", "$.network_metadata"]);
    }
}
