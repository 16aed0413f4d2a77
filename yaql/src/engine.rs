//! The public face: [`Expression`] (parsed once), [`Engine`] (the function registry and the
//! limits; fill it once at start, share it) and [`Context`] (the data an evaluation sees). Here
//! are what stands above the library and the evaluator: [`Engine::new`] with the standard library
//! and the deployment helpers, evaluation and [`Engine::share`]; `Expression` is defined in
//! `parser`, the registry's types (`Engine`, `Call`, `Spec`, ...) in `registry`, and both are
//! re-exported here.

use std::sync::Arc;

use crate::json::Json as J;
use serde_json::Value as Out;

use super::ast::Node;
use super::errors::{EvalError, EvalErrorKind, Fail};
use super::registry::Interp;
use super::states::{StateRoot, States};
use super::value::{to_json, Name, Value};

pub use crate::parser::Expression;
pub use crate::registry::{
    Call, Engine, Entry, Form, Imp, JsonFn, NativeFn, Pairs, PairsIter, Slot, Slots, Spec,
};

impl Default for Engine {
    fn default() -> Self {
        Engine::new()
    }
}

impl Engine {
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
                old.map(|old| super::states::Layers {
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
