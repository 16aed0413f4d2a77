//! The public face: [`Expression`] (parsed once), [`Engine`] (the function registry and the
//! limits; fill it once at start, share it) and [`Context`] (the data an evaluation sees).

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use crate::json::Json as J;
use serde_json::Value as Out;

use super::ast::{Arg, Args, Kind, Node, Tree};
use super::errors::{EvalError, EvalErrorKind, ParseError};
use super::eval::{Fail, Interp, StateRoot, States, R};
use super::limits::Limits;
use super::parser;
use super::value::{to_json, Name, Value};

/// A parsed expression. Its `Display` is the canonical text, which parses back to the same tree.
#[derive(Debug, Clone)]
pub struct Expression {
    tree: Tree,
}

impl Expression {
    /// Parses an expression.
    pub fn parse(text: &str) -> Result<Expression, ParseError> {
        Ok(Expression {
            tree: parser::parse(text)?,
        })
    }

    /// The text it was parsed from.
    pub fn source(&self) -> &str {
        self.tree.source()
    }

    /// The syntax tree's root.
    pub fn root(&self) -> Node<'_> {
        self.tree.root()
    }
}

impl PartialEq for Expression {
    /// Same syntax tree (positions and spelling aside).
    fn eq(&self, other: &Self) -> bool {
        self.root() == other.root()
    }
}

impl fmt::Display for Expression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.root().fmt(f)
    }
}

/// Function names are short and trusted: a fast hasher for the registry.
type Fx = std::hash::BuildHasherDefault<super::value::FxHasher>;

/// How a library entry may be called.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// Only as `name(args)`.
    Function,
    /// Only as `value.name(args)`.
    Method,
    /// Both; as a function the first argument is the receiver.
    Both,
}

/// The parameters a native entry accepts (after the receiver).
#[derive(Debug, Clone, Copy)]
pub struct Spec {
    /// Names of the positional parameters, in order (named arguments are matched to these).
    pub params: &'static [&'static str],
    /// How many positional arguments are required.
    pub min: usize,
    /// Accepts any number of further positional arguments.
    pub varargs: bool,
    /// Accepts `key => value` pairs freely (they land in [`Call::maps`]).
    pub kwargs: bool,
}

impl Spec {
    /// Exactly these named positional parameters, the first `min` required.
    pub const fn new(params: &'static [&'static str], min: usize) -> Spec {
        Spec {
            params,
            min,
            varargs: false,
            kwargs: false,
        }
    }

    /// Any number of positional arguments.
    pub const fn varargs(min: usize) -> Spec {
        Spec {
            params: &[],
            min,
            varargs: true,
            kwargs: false,
        }
    }

    /// Any number of positional arguments and `key => value` pairs.
    pub const fn any() -> Spec {
        Spec {
            params: &[],
            min: 0,
            varargs: true,
            kwargs: true,
        }
    }
}

/// A native library function: gets the evaluation and the call, returns a value.
pub type NativeFn = for<'a> fn(&mut Interp<'a>, &Call<'a>) -> R<Value<'a>>;

/// A helper function on JSON values: gets the receiver (for methods) then the arguments.
pub type JsonFn = Arc<dyn Fn(&[Out]) -> Result<Out, String> + Send + Sync>;

/// An entry's implementation.
#[derive(Clone)]
pub enum Imp {
    /// A native function with lazy arguments.
    Native(NativeFn),
    /// A helper on JSON values with eager arguments.
    Json(JsonFn),
}

/// A registered function or method.
#[derive(Clone)]
pub struct Entry {
    /// Its implementation.
    pub imp: Imp,
    /// Its parameters.
    pub spec: Spec,
    /// Called as a function, the first argument becomes the receiver.
    pub shift: bool,
}

/// One argument slot of a call.
#[derive(Debug, Clone)]
pub enum Slot<'a> {
    /// Not given (or skipped).
    Missing,
    /// An unevaluated expression (evaluate with [`Interp::value`], or as a lambda with [`Interp::apply`]).
    Ast(Node<'a>),
    /// An already evaluated value.
    Val(Value<'a>),
}

/// A call's argument slots, up to four without allocating.
pub type Slots<'a> = smallvec::SmallVec<[Slot<'a>; 4]>;

/// The `key => value` pairs of a call, in order: a view of its arguments (nothing copied).
#[derive(Debug, Clone, Copy, Default)]
pub struct Pairs<'a> {
    args: Option<Args<'a>>,
}

/// The pairs of a [`Pairs`], in order.
#[derive(Clone)]
pub struct PairsIter<'a> {
    args: Option<super::ast::ArgsIter<'a>>,
}

impl<'a> Iterator for PairsIter<'a> {
    type Item = (Node<'a>, Node<'a>);

    fn next(&mut self) -> Option<Self::Item> {
        let args = self.args.as_mut()?;
        loop {
            if let Arg::Map(k, v) = args.next()? {
                return Some((k, v));
            }
        }
    }
}

impl<'a> Pairs<'a> {
    /// The pairs among `args`.
    pub fn of(args: Args<'a>) -> Pairs<'a> {
        Pairs { args: Some(args) }
    }

    /// The pairs in order.
    pub fn iter(&self) -> PairsIter<'a> {
        PairsIter {
            args: self.args.map(Args::iter),
        }
    }

    /// How many pairs.
    pub fn len(&self) -> usize {
        self.iter().count()
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.iter().next().is_none()
    }
}

impl<'a> IntoIterator for &Pairs<'a> {
    type Item = (Node<'a>, Node<'a>);
    type IntoIter = PairsIter<'a>;

    fn into_iter(self) -> PairsIter<'a> {
        self.iter()
    }
}

/// A resolved call as a native function sees it.
#[derive(Debug, Clone)]
pub struct Call<'a> {
    /// The function's name.
    pub name: &'a str,
    /// The receiver (`value.name()`, or the first argument of a function-form call of a method).
    pub recv: Option<Value<'a>>,
    /// Positional arguments, named ones moved to their parameter's place (up to four kept
    /// inline).
    pub slots: Slots<'a>,
    /// `key => value` pairs, for entries that take them freely.
    pub maps: Pairs<'a>,
    /// Called as a method.
    pub method: bool,
}

impl<'a> Call<'a> {
    fn mismatch(name: &str, method: bool, why: String) -> Fail {
        if method {
            EvalErrorKind::NoMatchingMethod(name.into(), why).into()
        } else {
            EvalErrorKind::NoMatchingFunction(name.into(), why).into()
        }
    }

    /// Builds a call from syntax, matching named arguments to parameters.
    pub fn from_ast(
        name: &'a str,
        entry: &Entry,
        recv: Option<Value<'a>>,
        args: Args<'a>,
        method: bool,
    ) -> R<Call<'a>> {
        let spec = entry.spec;
        let positional = args.iter().filter(|a| !matches!(a, Arg::Map(..))).count();
        let mut slots = Slots::with_capacity(positional);
        let maps = if spec.kwargs {
            Pairs::of(args)
        } else {
            Pairs::default()
        };
        for a in args {
            match a {
                Arg::Pos(n) => slots.push(Slot::Ast(n)),
                Arg::Skip => slots.push(Slot::Missing),
                Arg::Map(k, v) => {
                    if spec.kwargs {
                        continue;
                    }
                    let Kind::Word(key) = k.kind() else {
                        return Err(Self::mismatch(name, method, "unexpected `=>` pair".into()));
                    };
                    let Some(i) = spec.params.iter().position(|p| *p == key) else {
                        return Err(Self::mismatch(
                            name,
                            method,
                            format!("no parameter `{key}`"),
                        ));
                    };
                    if slots.len() <= i {
                        slots.resize(i + 1, Slot::Missing);
                    }
                    if !matches!(slots[i], Slot::Missing) {
                        return Err(Self::mismatch(name, method, format!("`{key}` given twice")));
                    }
                    slots[i] = Slot::Ast(v);
                }
            }
        }
        Self::check(name, spec, &slots, method)?;
        Ok(Call {
            name,
            recv,
            slots,
            maps,
            method,
        })
    }

    /// Builds a call from values (as `call()` does).
    pub fn from_values(
        name: &'a str,
        entry: &Entry,
        recv: Option<Value<'a>>,
        pos: Vec<Value<'a>>,
        named: Vec<(String, Value<'a>)>,
        method: bool,
    ) -> R<Call<'a>> {
        let spec = entry.spec;
        let mut slots: Slots<'a> = pos.into_iter().map(Slot::Val).collect();
        for (key, v) in named {
            let Some(i) = spec.params.iter().position(|p| *p == key) else {
                return Err(Self::mismatch(
                    name,
                    method,
                    format!("no parameter `{key}`"),
                ));
            };
            if slots.len() <= i {
                slots.resize(i + 1, Slot::Missing);
            }
            slots[i] = Slot::Val(v);
        }
        Self::check(name, spec, &slots, method)?;
        Ok(Call {
            name,
            recv,
            slots,
            maps: Pairs::default(),
            method,
        })
    }

    fn check(name: &str, spec: Spec, slots: &[Slot<'a>], method: bool) -> R<()> {
        if !spec.varargs && slots.len() > spec.params.len() {
            return Err(Self::mismatch(
                name,
                method,
                format!("takes at most {} arguments", spec.params.len()),
            ));
        }
        if slots
            .iter()
            .take(spec.min)
            .any(|s| matches!(s, Slot::Missing))
            || slots.len() < spec.min
        {
            return Err(Self::mismatch(
                name,
                method,
                format!("needs at least {} arguments", spec.min),
            ));
        }
        Ok(())
    }

    /// The slot at `i` (missing past the end).
    pub fn slot(&self, i: usize) -> &Slot<'a> {
        self.slots.get(i).unwrap_or(&Slot::Missing)
    }

    /// True when argument `i` was given.
    pub fn has(&self, i: usize) -> bool {
        !matches!(self.slot(i), Slot::Missing)
    }

    /// The receiver, or a type error naming the function.
    pub fn this(&self) -> R<&Value<'a>> {
        self.recv
            .as_ref()
            .ok_or_else(|| Self::mismatch(self.name, self.method, "needs a receiver".into()))
    }

    /// A "no matching function/method" failure for these arguments.
    pub fn no_match(&self, why: impl Into<String>) -> Fail {
        Self::mismatch(self.name, self.method, why.into())
    }
}

/// The function registry and the limits. Build once ([`Engine::new`] has the standard library
/// and the deployment helpers), add your own helpers, then share it (`Engine` is `Send + Sync`).
#[derive(Clone)]
pub struct Engine {
    /// Every entry; the maps give positions in it.
    entries: Vec<Entry>,
    functions: HashMap<String, u32, Fx>,
    methods: HashMap<String, u32, Fx>,
    /// Changes with every change of the registry: names a registry for the calls' memory
    /// (see `memo`).
    id: u64,
    limits: Limits,
    lazy: bool,
    plain_get: bool,
    plain_diff: bool,
}

impl fmt::Debug for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Engine")
            .field("functions", &self.functions.len())
            .field("methods", &self.methods.len())
            .field("limits", &self.limits)
            .finish()
    }
}

impl Default for Engine {
    fn default() -> Self {
        Engine::new()
    }
}

impl Engine {
    /// An engine with no functions at all.
    pub fn empty() -> Engine {
        Engine {
            entries: Vec::new(),
            functions: HashMap::default(),
            methods: HashMap::default(),
            id: super::memo::new_engine_id(),
            limits: Limits::default(),
            lazy: false,
            plain_get: false,
            plain_diff: false,
        }
    }

    /// The standard library and the deployment helpers, with default limits.
    pub fn new() -> Engine {
        let mut e = Engine::empty();
        super::library::register_all(&mut e);
        super::fuel::register(&mut e);
        e.lazy = true;
        e.plain_get = true;
        e.plain_diff = true;
        e
    }

    /// True while `added`, `deleted`, `new`, `old` and `values` are the built-in ones, so that
    /// `x in added(E).key` may look for `x` without building the difference.
    pub fn plain_diff(&self) -> bool {
        self.plain_diff
    }

    /// True while `get` is the built-in one, so that `$.get('key')` on a layered state may read
    /// the key from the layers without merging them.
    pub fn plain_get(&self) -> bool {
        self.plain_get
    }

    /// True while `first`, `any`, `where`, `filter`, `select`, `map`, `values` and `matches` are
    /// the built-in ones, so that `where(...).first()` may stop at the first match and query
    /// predicates may take the shortcut of [`super::fastpath`].
    pub fn lazy_queries(&self) -> bool {
        self.lazy
    }

    /// The limits every evaluation gets.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Replaces the limits.
    pub fn set_limits(&mut self, limits: Limits) {
        self.limits = limits;
    }

    /// Registers (or replaces) a native entry.
    pub fn register(&mut self, name: &str, form: Form, spec: Spec, f: NativeFn) {
        self.insert(
            name,
            form,
            Entry {
                imp: Imp::Native(f),
                spec,
                shift: false,
            },
        );
    }

    /// Registers (or replaces) a helper working on JSON values. Its arguments are evaluated
    /// first; a method gets its receiver as the first item.
    pub fn register_json<F>(&mut self, name: &str, form: Form, f: F)
    where
        F: Fn(&[Out]) -> Result<Out, String> + Send + Sync + 'static,
    {
        self.insert(
            name,
            form,
            Entry {
                imp: Imp::Json(Arc::new(f)),
                spec: Spec::varargs(0),
                shift: false,
            },
        );
    }

    fn insert(&mut self, name: &str, form: Form, entry: Entry) {
        if name == "get" {
            self.plain_get = false;
        }
        if matches!(name, "added" | "deleted" | "new" | "old" | "values") {
            self.plain_diff = false;
        }
        if matches!(
            name,
            "first" | "any" | "where" | "filter" | "select" | "map" | "values" | "matches"
        ) {
            self.lazy = false;
        }
        self.id = super::memo::new_engine_id();
        match form {
            Form::Function => self.put(true, name, entry),
            Form::Method => self.put(false, name, entry),
            Form::Both => {
                self.put(false, name, entry.clone());
                self.put(
                    true,
                    name,
                    Entry {
                        shift: true,
                        ..entry
                    },
                );
            }
        }
    }

    /// Files `entry` as the function (or method) `name`, in place of any earlier one.
    fn put(&mut self, function: bool, name: &str, entry: Entry) {
        let map = if function {
            &mut self.functions
        } else {
            &mut self.methods
        };
        match map.get(name) {
            Some(&i) => self.entries[i as usize] = entry,
            None => {
                // A registry holds a few hundred entries, far below `u32::MAX`.
                map.insert(name.to_string(), self.entries.len() as u32);
                self.entries.push(entry);
            }
        }
    }

    /// The function entry of that name.
    pub fn function(&self, name: &str) -> Option<&Entry> {
        self.functions.get(name).map(|&i| &self.entries[i as usize])
    }

    /// The method entry of that name.
    pub fn method(&self, name: &str) -> Option<&Entry> {
        self.methods.get(name).map(|&i| &self.entries[i as usize])
    }

    /// The entry the call `node` (named `name`) resolves to: looked up by name on the node's
    /// first evaluation with this registry, then read from the node's memory.
    #[inline]
    pub(crate) fn resolve(&self, node: Node<'_>, name: &str, function: bool) -> Option<&Entry> {
        let word = node.memo();
        if let Some(i) = super::memo::entry(word, self.id) {
            return self.entries.get(i as usize);
        }
        let map = if function {
            &self.functions
        } else {
            &self.methods
        };
        let &i = map.get(name)?;
        super::memo::set_entry(word, self.id, i);
        self.entries.get(i as usize)
    }

    /// Evaluates `expr` with `$` bound to `data` (converted first: a caller evaluating often over
    /// the same data converts it once and calls [`Engine::evaluate_in`]).
    pub fn evaluate(&self, expr: &Expression, data: &Out) -> Result<Out, EvalError> {
        let data = J::from(data);
        self.evaluate_in(expr, &Context::new(&data))
    }

    /// Evaluates `expr` in a context (data, named variables, old state).
    pub fn evaluate_in(&self, expr: &Expression, ctx: &Context<'_>) -> Result<Out, EvalError> {
        let other;
        let ctx = match ctx.shared {
            Some(s) if !s.is_for(expr) => {
                other = Context {
                    shared: None,
                    ..ctx.clone()
                };
                &other
            }
            _ => ctx,
        };
        let mut interp = self.interp(ctx);
        let fail = |f: Fail| EvalError {
            kind: *f.kind,
            expr: expr.source().to_string(),
            pos: f.pos.unwrap_or(0),
        };
        let v = interp.eval(expr.root()).map_err(fail)?;
        let v = match &v {
            Value::Gen(_) => Value::list(interp.seq(&v, "a result").map_err(fail)?),
            _ => v,
        };
        to_json(&v).ok_or_else(|| {
            fail(EvalErrorKind::Type(format!("a {} has no JSON form (lambdas have none, nor values nested deeper than 256 levels)", v.type_name())).into())
        })
    }

    /// Finds `expr`'s parts that do not depend on the node (`per_node` says which top-level keys
    /// of `$` are the node's own) and evaluates them once in `ctx`: a context with the cluster
    /// part as `$`, and the old cluster part as the old state. Pass the result to every node's
    /// evaluation of `expr` with [`Context::shared`] (for nodes whose old cluster part is the
    /// same). A part whose evaluation fails, or whose value JSON cannot carry exactly, is left to
    /// each node's evaluation, so results and errors are the same either way.
    pub fn share(
        &self,
        expr: &Arc<Expression>,
        ctx: &Context<'_>,
        per_node: &dyn Fn(&str) -> bool,
    ) -> super::shared::Shared {
        let found = super::shared::find(expr.root(), per_node);
        let (mut parts, changed) = (found.parts, found.changed);
        let mut kept = Vec::with_capacity(parts.len());
        let mut whole_error = None;
        let mut joins = Vec::new();
        while let Some(node) = parts.pop() {
            // A list only joined on, `D.values()` over a dictionary read in place: indexed by
            // name, not copied.
            if self.join_by_name(ctx, node, None, &found.joins, &mut joins) {
                continue;
            }
            let mut interp = self.interp(ctx);
            let result = interp.eval(node);
            if let (Err(f), true) = (&result, node.same(expr.root())) {
                whole_error = Some(EvalError {
                    kind: (*f.kind).clone(),
                    expr: expr.source().to_string(),
                    pos: f.pos.unwrap_or(0),
                });
            }
            let value = result
                .ok()
                .filter(|v| super::shared::lossless(v, true, 0))
                .and_then(|v| Some((J::from(to_json(&v)?), matches!(v, Value::Iter(_)))));
            match value {
                Some((value, iter)) => kept.push(super::shared::Part {
                    node: node.addr(),
                    value,
                    iter,
                    state: None,
                }),
                // Its value cannot be kept: perhaps the parts below it can.
                None => parts.extend(super::shared::find_below(node, per_node)),
            }
        }
        // Parts read in a deployment helper's state: once against each state (the cluster parts
        // hold every key they read). `changed()` of one is answered whole below.
        for node in found.state_parts {
            if changed.iter().any(|c| c.same(node)) {
                continue;
            }
            for which in [StateRoot::New, StateRoot::Old] {
                let mut interp = self.interp(ctx);
                let root = match which {
                    StateRoot::New => interp.new_state(),
                    StateRoot::Old if ctx.forced => None,
                    StateRoot::Old => interp.old_state(),
                };
                let Some(root) = root else { continue };
                if self.join_by_name(ctx, node, Some((which, &root)), &found.joins, &mut joins) {
                    continue;
                }
                let value = interp
                    .eval_with(node, &[root])
                    .ok()
                    .filter(|v| super::shared::lossless(v, true, 0))
                    .and_then(|v| Some((J::from(to_json(&v)?), matches!(v, Value::Iter(_)))));
                if let Some((value, iter)) = value {
                    kept.push(super::shared::Part {
                        node: node.addr(),
                        value,
                        iter,
                        state: Some(which),
                    });
                }
            }
        }
        let mut answers = Vec::with_capacity(changed.len());
        for node in changed {
            let mut interp = self.interp(ctx);
            if let Ok(c) = super::fuel::changed_of(&mut interp, node) {
                answers.push((node.addr(), c));
            }
        }
        for &(node, recv, key, left) in &found.joins {
            let addr = recv.addr();
            for part in kept.iter().filter(|p| p.node == addr) {
                let J::Array(items) = &part.value else {
                    continue;
                };
                if let Some(index) = super::shared::build_index(items, key) {
                    joins.push(super::shared::Join {
                        node: node.addr(),
                        part: addr,
                        key: key.to_string(),
                        left,
                        index: super::shared::JoinIndex::Positions(index),
                        state: part.state,
                    });
                }
            }
        }
        let mut members = Vec::new();
        for (node, set) in found.members {
            let addr = set.addr();
            let Some(J::Array(items)) = kept
                .iter()
                .find(|p| p.node == addr && p.state.is_none())
                .map(|p| &p.value)
            else {
                continue;
            };
            if let Some(index) = super::shared::build_set(items) {
                members.push((node.addr(), addr, index));
            }
        }
        let bits = kept
            .iter()
            .map(|p| p.node)
            .chain(joins.iter().map(|j| j.node))
            .chain(members.iter().map(|m| m.0))
            .fold(0, |bits, addr| bits | super::ast::bit_of(addr));
        super::shared::Shared {
            kept: bits,
            expr: expr.clone(),
            parts: kept,
            changed: answers,
            joins,
            members,
            whole_error,
        }
    }

    /// For a part `P` that is `D.values()` over a dictionary read in place, and only the list of
    /// `P.where($.key = Y)` joins: indexes `D`'s values by name for each join (evaluated in `ctx`,
    /// or with `$` the given state) and returns true; false (nothing added) otherwise.
    #[allow(clippy::type_complexity)]
    fn join_by_name<'n>(
        &self,
        ctx: &Context<'_>,
        part: Node<'n>,
        state: Option<(StateRoot, &Value<'_>)>,
        found: &[(Node<'n>, Node<'n>, &'n str, bool)],
        joins: &mut Vec<super::shared::Join>,
    ) -> bool {
        let Some(of) = super::shared::values_of_path(part) else {
            return false;
        };
        let mine: Vec<_> = found.iter().filter(|j| j.1.same(part)).collect();
        if mine.is_empty() {
            return false;
        }
        let mut interp = self.interp(ctx);
        let d = match state {
            None => interp.eval(of),
            Some((_, root)) => interp.eval_with(of, std::slice::from_ref(root)),
        };
        let Ok(Value::Json(J::Object(d))) = d else {
            return false;
        };
        let mut built = Vec::with_capacity(mine.len());
        for &&(node, _, key, left) in &mine {
            let Some((index, names)) = super::shared::build_names(d, key) else {
                return false;
            };
            built.push(super::shared::Join {
                node: node.addr(),
                part: part.addr(),
                key: key.to_string(),
                left,
                index: super::shared::JoinIndex::Names(index, names),
                state: state.map(|s| s.0),
            });
        }
        joins.extend(built);
        true
    }

    /// A new evaluation of `ctx`: its variables, `$` and `$data`, its states.
    #[inline]
    fn interp<'a>(&'a self, ctx: &'a Context<'a>) -> Interp<'a> {
        let layers = match (ctx.data, ctx.old) {
            (Root::Layered(J::Object(b), J::Object(t)), old) => {
                let old = match old {
                    Some(Root::Layered(J::Object(ob), J::Object(ot))) => Some(Some((ob, ot))),
                    None => Some(None),
                    Some(_) => None,
                };
                old.map(|old| super::eval::Layers {
                    new: (b, t),
                    old,
                    same_outside: ctx.same_outside,
                })
            }
            _ => None,
        };
        // Room for the context's variables, `$data`, `$` and the bindings of a lambda call.
        let mut vars = Vec::with_capacity(ctx.vars.len() + 4);
        for (name, v) in &ctx.vars {
            vars.push((Name::Named(name), Value::from_json(v)));
        }
        let at = vars.len();
        let states = match layers {
            // `$data` and `$` stand for the layers, merged only when something needs them whole.
            Some(_) => {
                vars.push((Name::Named("data"), Value::Null));
                vars.push((Name::Dollar, Value::Null));
                States {
                    new: None,
                    old: None,
                    forced: ctx.forced,
                }
            }
            None => {
                let data = ctx.data.value();
                vars.push((Name::Named("data"), data.clone()));
                vars.push((Name::Dollar, data.clone()));
                States {
                    new: Some(data),
                    old: ctx.old.as_ref().map(Root::value),
                    forced: ctx.forced,
                }
            }
        };
        let root_slots = match layers {
            Some(_) => (at, at + 1),
            None => (usize::MAX, usize::MAX),
        };
        Interp::with(self, vars, states, layers, root_slots, ctx.shared)
    }

    /// Parses and evaluates in one step.
    pub fn eval_str(&self, text: &str, data: &Out) -> Result<Out, super::errors::ExprError> {
        let e = Expression::parse(text)?;
        Ok(self.evaluate(&e, data)?)
    }
}

/// What an evaluation sees: `$`, named variables (`$node`, `$common`, ...) and, for the
/// deployment helpers, the old state.
#[derive(Debug, Clone)]
pub struct Context<'c> {
    data: Root<'c>,
    vars: Vec<(&'c str, &'c J)>,
    old: Option<Root<'c>>,
    forced: bool,
    shared: Option<&'c super::shared::Shared>,
    same_outside: Option<(bool, &'c [String])>,
}

/// A state: one document, or two layered (a dictionary with the top's keys over the base's), which
/// costs nothing to build: a deployment's per-node state is the cluster part with the node's keys on
/// top, and nothing of the (large) cluster part is copied per node.
#[derive(Debug, Clone, Copy)]
enum Root<'c> {
    Json(&'c J),
    Layered(&'c J, &'c J),
}

impl<'c> Root<'c> {
    fn value(&self) -> Value<'c> {
        match *self {
            Root::Json(j) => Value::from_json(j),
            Root::Layered(base, top) => {
                let (J::Object(b), J::Object(t)) = (base, top) else {
                    return Value::from_json(top);
                };
                let mut out: indexmap::IndexMap<Value<'c>, Value<'c>> =
                    indexmap::IndexMap::with_capacity(b.len() + t.len());
                for (k, v) in b.iter().chain(t.iter()) {
                    out.insert(Value::Text(k), Value::from_json(v));
                }
                Value::Dict(std::rc::Rc::new(out))
            }
        }
    }
}

impl<'c> Context<'c> {
    /// A context with `$` bound to `data` (also reachable as `$data`).
    pub fn new(data: &'c J) -> Context<'c> {
        Context {
            data: Root::Json(data),
            vars: Vec::new(),
            old: None,
            forced: false,
            shared: None,
            same_outside: None,
        }
    }

    /// A context with `$` bound to `base`'s keys with `top`'s over them (both mappings), without
    /// copying either.
    pub fn layered(base: &'c J, top: &'c J) -> Context<'c> {
        Context {
            data: Root::Layered(base, top),
            vars: Vec::new(),
            old: None,
            forced: false,
            shared: None,
            same_outside: None,
        }
    }

    /// Sets the last deployed state as two layers (see [`Context::layered`]).
    pub fn old_layered(mut self, old: Option<(&'c J, &'c J)>) -> Self {
        self.old = old.map(|(b, t)| Root::Layered(b, t));
        self
    }

    /// Adds the variable `$name`.
    pub fn var(mut self, name: &'c str, value: &'c J) -> Self {
        self.vars.push((name, value));
        self
    }

    /// Sets the last deployed state for `old()`, `changed()` and the like.
    pub fn old(mut self, old: Option<&'c J>) -> Self {
        self.old = old.map(Root::Json);
        self
    }

    /// Uses the values of the expression's node-independent parts computed once by
    /// [`Engine::share`] (ignored when they were computed for another expression).
    pub fn shared(mut self, shared: &'c super::shared::Shared) -> Self {
        self.shared = Some(shared);
        self
    }

    /// For layered states: whether the current and the old cluster parts agree on every key but
    /// the node's own (`node_keys`), so that `changed($)` compares only those.
    pub fn same_cluster_part(mut self, same: bool, node_keys: &'c [String]) -> Self {
        self.same_outside = Some((same, node_keys));
        self
    }

    /// Marks a forced deployment: every `changed()` is true.
    pub fn forced(mut self, forced: bool) -> Self {
        self.forced = forced;
        self
    }
}
