//! The evaluator: walks the syntax tree with a stack of variables, resolves calls through the
//! engine's registry and enforces the limits. Its functions are the methods of [`Interp`] (defined
//! with the calling convention in `registry`, so the library names it without importing this
//! module). `Fail`, `R`, the states and `Interp` are defined below it (`errors`, `states`,
//! `registry`) and re-exported here.

use std::rc::Rc;

use crate::json::Json as J;

use super::ast::{Arg, Args, BinOp, Kind, Node, UnOp};
use super::errors::EvalErrorKind;
use super::library::operators;
use super::registry::{Call, Entry, Imp, Slot};
use super::states::layered_get_at;
use super::value::{seq_items, to_json, Lambda, Name, Value, View};

pub use crate::errors::{type_err, Fail, R};
pub use crate::registry::{bind_args, Interp, Vars};
pub use crate::states::{layered_get, merge_layers, Layers, Map, StateRoot, States};
pub use crate::value::gen_take;

impl<'a> Interp<'a> {
    /// Counts `n` steps against the budget.
    pub fn tick(&mut self, n: u64) -> R<()> {
        self.steps += n;
        if self.steps > self.limits.max_steps {
            return Err(EvalErrorKind::StepLimit(self.limits.max_steps).into());
        }
        Ok(())
    }

    /// Fails when a built collection exceeds the collection limit.
    pub fn check_len(&self, n: usize) -> R<()> {
        if n > self.limits.max_collection {
            return Err(EvalErrorKind::CollectionTooLarge(self.limits.max_collection).into());
        }
        Ok(())
    }

    /// Fails when a built string exceeds the memory quota.
    pub fn check_bytes(&self, n: usize) -> R<()> {
        if n > self.limits.memory_quota {
            return Err(EvalErrorKind::MemoryQuota(self.limits.memory_quota).into());
        }
        Ok(())
    }

    /// A list value, checked against the collection limit.
    pub fn new_list(&mut self, v: Vec<Value<'a>>) -> R<Value<'a>> {
        self.check_len(v.len())?;
        self.tick(v.len() as u64)?;
        Ok(Value::list(v))
    }

    /// A query result, checked against the collection limit.
    pub fn new_iter(&mut self, v: Vec<Value<'a>>) -> R<Value<'a>> {
        self.check_len(v.len())?;
        self.tick(v.len() as u64)?;
        Ok(Value::Iter(Rc::new(v)))
    }

    /// Looks a variable up.
    pub fn lookup(&self, name: Name<'_>) -> Option<&Value<'a>> {
        let i = self.vars.iter().rposition(|(n, _)| *n == name)?;
        if let Some(l) = self.layers {
            if self.is_root_slot(i) {
                return Some(self.root_new.get_or_init(|| merge_layers(l.new)));
            }
            if let Some(which) = self.state_slot(i) {
                return self.merged_state(which);
            }
        }
        Some(&self.vars[i].1)
    }

    /// The layered state `which`, merged (once per evaluation).
    fn merged_state(&self, which: StateRoot) -> Option<&Value<'a>> {
        let l = self.layers?;
        Some(match which {
            StateRoot::New => self.root_new.get_or_init(|| merge_layers(l.new)),
            StateRoot::Old => self
                .root_old
                .get_or_init(|| merge_layers(l.old.unwrap_or(l.new))),
        })
    }

    /// Which layered state the variable at slot `i` stands for, if it was bound to one by
    /// [`Interp::eval_in_state`] in the scope in use.
    fn state_slot(&self, i: usize) -> Option<StateRoot> {
        self.state_slots
            .iter()
            .rev()
            .find(|s| s.0 == i && s.2 == self.scope)
            .map(|s| s.1)
    }

    /// Which layered state `$` stands for here, if it is one bound by a deployment helper.
    pub(crate) fn current_state(&self) -> Option<StateRoot> {
        if self.state_slots.is_empty() {
            return None;
        }
        let i = self.vars.iter().rposition(|(n, _)| *n == Name::Dollar)?;
        self.state_slot(i)
    }

    /// Evaluates `node` with `$` bound to the layered state `which` (the current state, or the
    /// last deployed one), merging the layers only if something needs the state whole. Only
    /// for layered evaluations whose state `which` exists.
    pub(crate) fn eval_in_state(&mut self, node: Node<'a>, which: StateRoot) -> R<Value<'a>> {
        let at = self.vars.len();
        self.vars.push((Name::Dollar, Value::Null));
        self.state_slots.push((at, which, self.scope));
        let r = self.eval(node);
        self.state_slots.pop();
        self.vars.truncate(at);
        r
    }

    /// The variables in scope, for a lambda to keep: states bound by a deployment helper are
    /// merged into values (the lambda may be called after they are gone).
    pub fn capture_scope(&self) -> Vec<(Name<'a>, Value<'a>)> {
        let mut scope = self.vars.clone();
        for &(i, which, s) in &self.state_slots {
            if s == self.scope {
                if let (Some(slot), Some(v)) = (scope.get_mut(i), self.merged_state(which)) {
                    slot.1 = v.clone();
                }
            }
        }
        scope
    }

    fn is_root_slot(&self, i: usize) -> bool {
        i == self.root_slots.0 || i == self.root_slots.1
    }

    /// `$var.key` when `$var` is the layered root: the key looked up in the layers, merging
    /// nothing. `None` when `$var` is anything else.
    #[inline]
    fn root_key(&self, var: &str, key: &str, at: Node<'_>) -> Option<R<Value<'a>>> {
        let l = self.layers?;
        let i = self
            .vars
            .iter()
            .rposition(|(n, _)| *n == Name::from_var(var))?;
        let layers = if self.is_root_slot(i) {
            l.new
        } else {
            match self.state_slot(i)? {
                StateRoot::New => l.new,
                StateRoot::Old => l.old?,
            }
        };
        Some(match layered_get_at(layers, key, at) {
            Some(j) => Ok(Value::from_json(j)),
            None => Err(EvalErrorKind::KeyNotFound(key.into()).into()),
        })
    }

    /// The current state's root (for `new()`, `changed()`, ...), if any.
    pub fn new_state(&self) -> Option<Value<'a>> {
        match (&self.states.new, self.layers) {
            (Some(v), _) => Some(v.clone()),
            (None, Some(l)) => Some(self.root_new.get_or_init(|| merge_layers(l.new)).clone()),
            (None, None) => None,
        }
    }

    /// The last deployed state's root (for `old()`, `changed()`, ...), if any.
    pub fn old_state(&self) -> Option<Value<'a>> {
        match (&self.states.old, self.layers.and_then(|l| l.old)) {
            (Some(v), _) => Some(v.clone()),
            (None, Some(old)) => Some(self.root_old.get_or_init(|| merge_layers(old)).clone()),
            (None, None) => None,
        }
    }

    /// `changed(x)` of a node-independent `x`, when it was computed once.
    pub fn changed_part(&self, node: Node<'_>) -> Option<bool> {
        let addr = node.addr();
        self.changed
            .iter()
            .find(|(a, _)| *a == addr)
            .map(|(_, c)| *c)
    }

    /// The items of a list, set or lazy sequence (lazy ones cut at the collection limit, failing
    /// beyond it). `None` for anything else.
    pub fn items(&mut self, v: &Value<'a>) -> R<Option<Vec<Value<'a>>>> {
        match v {
            Value::Gen(g) => {
                let limit = self.limits.max_collection;
                let out = gen_take(g, limit + 1);
                self.check_len(out.len())?;
                Ok(Some(out))
            }
            _ if v.is_iterable() => Ok(Some(seq_items(v))),
            _ => Ok(None),
        }
    }

    /// Like [`Interp::items`] but failing with a type error for non-collections.
    pub fn seq(&mut self, v: &Value<'a>, what: &str) -> R<Vec<Value<'a>>> {
        match self.items(v)? {
            Some(items) => Ok(items),
            None => type_err(format!(
                "{what} needs a collection, not a {}",
                v.type_name()
            )),
        }
    }

    /// Evaluates a node.
    pub fn eval(&mut self, node: Node<'a>) -> R<Value<'a>> {
        if self.kept & node.bit() != 0 {
            if let Some(v) = self.shared_value(node) {
                return Ok(v);
            }
            if !self.joins.is_empty() {
                if let Some(r) = self.join(node) {
                    return r;
                }
            }
            if !self.members.is_empty() {
                if let Some(r) = self.member_of(node) {
                    return r;
                }
            }
        }
        self.depth += 1;
        let r = if self.depth > self.limits.max_depth {
            Err(EvalErrorKind::TooDeep(self.limits.max_depth).into())
        } else {
            self.tick(1).and_then(|_| self.eval_kind(node))
        };
        self.depth -= 1;
        r.map_err(|mut f| {
            if f.pos.is_none() {
                f.pos = Some(node.pos());
            }
            f
        })
    }

    /// The kept value of a node-independent part, if `node` is one.
    #[inline(never)]
    fn shared_value(&self, node: Node<'a>) -> Option<Value<'a>> {
        let addr = node.addr();
        let part = self.part_at(addr)?;
        Some(match (&part.value, part.iter) {
            (J::Array(items), true) => {
                Value::Iter(Rc::new(items.iter().map(Value::from_json).collect()))
            }
            (j, _) => Value::from_json(j),
        })
    }

    /// The kept part at `addr` for where it is evaluated (a part read in a deployment helper's
    /// state only when `$` is that state).
    fn part_at(&self, addr: usize) -> Option<&'a super::shared::Part> {
        let shared: &'a [super::shared::Part] = self.shared;
        let mut here = None;
        shared.iter().find(|p| {
            p.node == addr
                && match p.state {
                    None => true,
                    Some(w) => *here.get_or_insert_with(|| self.current_state()) == Some(w),
                }
        })
    }

    /// `P.where($.key = Y)` through the index of the kept `P`: the items whose `key` equals `Y`,
    /// in order. `None` when `node` has no index.
    #[inline(never)]
    fn join(&mut self, node: Node<'a>) -> Option<R<Value<'a>>> {
        Some(match self.join_items(node)? {
            Ok(items) => self.new_iter(items.into_vec()),
            Err(f) => Err(f),
        })
    }

    /// The items of [`Interp::join`], not yet made a list (a join finds one or two, as a rule).
    fn join_items(&mut self, node: Node<'a>) -> Option<R<Found<'a>>> {
        let addr = node.addr();
        let joins: &'a [super::shared::Join] = self.joins;
        let mut here = None;
        let j = joins.iter().find(|j| {
            j.node == addr
                && match j.state {
                    None => true,
                    Some(w) => *here.get_or_insert_with(|| self.current_state()) == Some(w),
                }
        })?;
        let Kind::Method { recv, args, .. } = node.kind() else {
            return None;
        };
        let p = args.one()?;
        let Kind::Binary(BinOp::Eq, l, r) = p.kind() else {
            return None;
        };
        // The items: in the kept list, or read again in place by name.
        let (items, positions, names) = match &j.index {
            super::shared::JoinIndex::Positions(index) => {
                let shared: &'a [super::shared::Part] = self.shared;
                let Some(J::Array(items)) = shared
                    .iter()
                    .find(|p| p.node == j.part && p.state == j.state)
                    .map(|p| &p.value)
                else {
                    return None;
                };
                (Some(items), Some(index), None)
            }
            super::shared::JoinIndex::Names(index, names) => {
                let of = super::shared::values_of_path(recv)?;
                let d = match self.eval(of) {
                    Ok(Value::Json(J::Object(d))) => d,
                    // Not the dictionary indexed: the query as written.
                    _ => return None,
                };
                (None, None, Some((d, index, names)))
            }
        };
        // Over no items the predicate is never evaluated.
        if items.is_some_and(|i| i.is_empty()) || names.is_some_and(|(d, ..)| d.is_empty()) {
            return Some(Ok(Found::new()));
        }
        let y = match self.eval(if j.left { l } else { r }) {
            Ok(y) => y,
            Err(f) => return Some(Err(f)),
        };
        let h = super::shared::join_hash(&y);
        let hit = |item: &'a J| {
            let v = match item {
                J::Object(m) => super::value::json_get(m, j.key.as_str()),
                _ => None,
            };
            v.is_some_and(|v| super::value::equal(&Value::from_json(v), &y))
        };
        let mut out = Found::new();
        if let (Some(items), Some(index)) = (items, positions) {
            for i in index.get(h) {
                let Some(item) = items.get(i) else { continue };
                if hit(item) {
                    out.push(Value::from_json(item));
                }
            }
        }
        if let Some((d, index, names)) = names {
            for i in index.get(h) {
                let Some(name) = names.get(i) else { continue };
                // Where the name was when indexed (the same dictionary, as a rule: checked by
                // its key), else looked up by name.
                let item = match d.iter().nth(i) {
                    Some((k, item)) if super::value::str_eq(k, name) => Some(item),
                    _ => super::value::json_get(d, name),
                };
                if let Some(item) = item.filter(|i| hit(i)) {
                    out.push(Value::from_json(item));
                }
            }
        }
        Some(Ok(out))
    }

    /// `X in P` through the index of the kept list `P`. `None` when `node` has no index.
    #[inline(never)]
    fn member_of(&mut self, node: Node<'a>) -> Option<R<Value<'a>>> {
        let addr = node.addr();
        let members = self.members;
        let (_, part, index) = members.iter().find(|m| m.0 == addr)?;
        let shared: &'a [super::shared::Part] = self.shared;
        let Some(J::Array(items)) = shared
            .iter()
            .find(|p| p.node == *part && p.state.is_none())
            .map(|p| &p.value)
        else {
            return None;
        };
        let Kind::Binary(BinOp::In, l, _) = node.kind() else {
            return None;
        };
        let x = match self.eval(l) {
            Ok(x) => x,
            Err(f) => return Some(Err(f)),
        };
        let hit = index
            .get(super::shared::join_hash(&x))
            .filter_map(|i| items.get(i))
            .any(|item| super::value::equal(&Value::from_json(item), &x));
        Some(Ok(Value::Bool(hit)))
    }

    fn eval_kind(&mut self, node: Node<'a>) -> R<Value<'a>> {
        Ok(match node.kind() {
            Kind::Null => Value::Null,
            Kind::Bool(b) => Value::Bool(b),
            Kind::Int(i) => Value::Int(i),
            Kind::Float(x) => Value::Float(x),
            Kind::Str(s) | Kind::Word(s) => Value::Text(s),
            Kind::Const(j) => Value::from_json(j),
            Kind::Var(v) => match self.lookup(Name::from_var(v)) {
                // The commonest: input data, copied without the general clone.
                Some(&Value::Json(j)) => Value::Json(j),
                Some(other) => other.clone(),
                None => Value::Null,
            },
            Kind::Paren(n) => self.eval(n)?,
            Kind::List(args) => self.list_literal(args)?,
            Kind::Dict(args) => self.dict_literal(args)?,
            Kind::Call(name, args) => self.call_function(node, name, args)?,
            Kind::Method {
                recv,
                name,
                args,
                safe,
            } => {
                if name == "get" && !safe && self.engine.plain_get() {
                    if self.layers.is_some() {
                        if let Some(v) = self.root_get(node, recv, args)? {
                            return Ok(v);
                        }
                    }
                    if let Some((key, default)) = const_key(args) {
                        // `d.get('key')` on a dictionary read in place: the key looked up there.
                        let r = self.eval(recv)?;
                        if let Value::Json(J::Object(m)) = &r {
                            return match (super::memo::json_get_at(m, key, node), default) {
                                (Some(j), _) => Ok(Value::from_json(j)),
                                (None, Some(d)) => self.eval(d),
                                (None, None) => Ok(Value::Null),
                            };
                        }
                        return self.call_method(node, name, r, args);
                    }
                }
                if !safe && self.engine.lazy_queries() && matches!(name, "first" | "any") {
                    if let Some(v) = self.lazy_query(recv, name, args)? {
                        return Ok(v);
                    }
                }
                let r = self.eval(recv)?;
                if safe && r.is_null() {
                    return Ok(Value::Null);
                }
                self.call_method(node, name, r, args)?
            }
            Kind::Member { recv, rhs, safe } => {
                // Fast path for the commonest form, `$var.key` on input data.
                if let (Kind::Var(v), Kind::Word(key)) = (recv.kind(), rhs.kind()) {
                    if let Some(r) = self.root_key(v, key, node) {
                        return r;
                    }
                    if let Some(&Value::Json(J::Object(m))) = self.lookup(Name::from_var(v)) {
                        return match super::memo::json_get_at(m, key, node) {
                            Some(j) => Ok(Value::from_json(j)),
                            None => Err(EvalErrorKind::KeyNotFound(key.to_string()).into()),
                        };
                    }
                }
                let r = self.eval(recv)?;
                if safe && r.is_null() {
                    return Ok(Value::Null);
                }
                match rhs.kind() {
                    Kind::Word(key) => match &r {
                        Value::Json(J::Object(m)) => match super::memo::json_get_at(m, key, node) {
                            Some(j) => Value::from_json(j),
                            None => return Err(EvalErrorKind::KeyNotFound(key.into()).into()),
                        },
                        _ => self.member(&r, key)?,
                    },
                    _ => return Err(bad_member()),
                }
            }
            Kind::Index(v, args) => {
                let target = self.eval(v)?;
                self.index(target, args)?
            }
            Kind::Invoke(callee, args) => self.invoke(callee, args)?,
            Kind::Unary(op, n) => self.unary(op, n)?,
            Kind::Binary(BinOp::And, l, r) => {
                let l = self.eval(l)?;
                if !l.truthy() {
                    l
                } else {
                    self.eval(r)?
                }
            }
            Kind::Binary(BinOp::Or, l, r) => {
                let l = self.eval(l)?;
                if l.truthy() {
                    l
                } else {
                    self.eval(r)?
                }
            }
            Kind::Binary(BinOp::Then, l, r) => {
                let mark = self.vars.len();
                let result = self.then(l, r);
                self.vars.truncate(mark);
                result?
            }
            Kind::Binary(op, l, r) => {
                let l = self.eval(l)?;
                if op == BinOp::In && self.engine.plain_diff() {
                    if let Some(found) = super::fuel::in_diff_key(self, &l, r) {
                        return Ok(Value::Bool(found));
                    }
                }
                let r = self.eval(r)?;
                match op {
                    BinOp::Eq => Value::Bool(super::value::equal(&l, &r)),
                    BinOp::Ne => Value::Bool(!super::value::equal(&l, &r)),
                    _ => operators::binary(self, op, l, r)?,
                }
            }
        })
    }

    /// `$.get('key')` or `$.get('key', default)` where `$` is a layered state: the key read from
    /// the layers, merging nothing. `None` when the call is anything else.
    #[inline(never)]
    fn root_get(&mut self, node: Node<'a>, recv: Node<'a>, args: Args<'a>) -> R<Option<Value<'a>>> {
        let Some((key, default)) = const_key(args) else {
            return Ok(None);
        };
        let found = match recv.kind() {
            Kind::Var(v) => match self.root_key(v, key, node) {
                None => return Ok(None),
                Some(found) => found.ok(),
            },
            // `old($).get(...)`, `new($).get(...)`: the state's key, merging nothing.
            Kind::Call(name, of) if self.engine.plain_diff() => {
                let (Some(l), Some(d)) = (self.layers, of.one()) else {
                    return Ok(None);
                };
                if !matches!(d.kind(), Kind::Var(v) if v.is_empty() || v == "1") {
                    return Ok(None);
                }
                let layers = match name {
                    "new" => Some(l.new),
                    // Without an old state, or when forced, the old state is empty.
                    "old" if self.states.forced => None,
                    "old" => l.old,
                    _ => return Ok(None),
                };
                layers
                    .and_then(|l| layered_get_at(l, key, node))
                    .map(Value::from_json)
            }
            _ => return Ok(None),
        };
        match (found, default) {
            (Some(v), _) => Ok(Some(v)),
            (None, Some(d)) => self.eval(d).map(Some),
            (None, None) => Ok(Some(Value::Null)),
        }
    }

    /// `first()` and `any()` at the end of a chain of `where`/`select`/`.key` stop at the first
    /// item found, as YAQL's lazy iterators do. `None` when the chain does not qualify.
    #[inline(never)]
    fn lazy_query(&mut self, recv: Node<'a>, name: &str, args: Args<'a>) -> R<Option<Value<'a>>> {
        if args.iter().any(|a| !matches!(a, Arg::Pos(_))) || args.len() > 1 {
            return Ok(None);
        }
        let mut stages: smallvec::SmallVec<[Stage<'a>; 4]> = smallvec::SmallVec::new();
        let mut node = recv;
        // The chain starts at a `where` answered by an index (a list, whatever it reads).
        let mut joined = false;
        loop {
            let indexed = node.addr();
            if self.joins.iter().any(|j| j.node == indexed) {
                joined = true;
                break;
            }
            match node.kind() {
                Kind::Method {
                    name,
                    args,
                    safe: false,
                    ..
                } => match (name, args.one()) {
                    ("where" | "filter", Some(p)) => stages.push(Stage::Where(p)),
                    ("select" | "map", Some(p)) => stages.push(Stage::Select(p)),
                    _ => break,
                },
                Kind::Member {
                    rhs, safe: false, ..
                } => match rhs.kind() {
                    Kind::Word(k) => stages.push(Stage::Key(k)),
                    _ => break,
                },
                _ => break,
            }
            node = match node.kind() {
                Kind::Method { recv, .. } | Kind::Member { recv, .. } => recv,
                _ => break,
            };
        }
        if !joined && !stages.iter().any(|s| matches!(s, Stage::Where(_))) {
            return Ok(None);
        }
        stages.reverse();
        // `dict.values()` as the source: its values are read in place, not collected.
        let mut dict_values = None;
        if let Kind::Method {
            recv: of,
            name: values,
            args: none,
            safe: false,
        } = node.kind()
        {
            if values == "values" && none.is_empty() {
                let d = self.eval(of)?;
                match d {
                    Value::Json(J::Object(m)) => dict_values = Some(m),
                    other => {
                        // Not a dictionary borrowed from the input: the general path decides.
                        let entry = self.engine.method("values");
                        if let (Some(entry), true) = (entry, other.is_dict()) {
                            let call = Call::from_ast("values", entry, Some(other), none, true)?;
                            let v = self.run(entry, &call)?;
                            return self.lazy_over(v, &stages, name, args).map(Some);
                        }
                        return Ok(None);
                    }
                }
            }
        }
        // The index's items, read as they are found (no list made), unless the node has a kept
        // value (which `eval` would take first).
        if joined && self.part_at(node.addr()).is_none() {
            if let Some(found) = self.join_items(node) {
                let found = found?;
                self.check_len(found.len())?;
                self.tick(found.len() as u64)?;
                return self
                    .lazy_items(found.into_iter(), &stages, name, args)
                    .map(Some);
            }
        }
        let source = match dict_values {
            Some(m) => {
                let items = m.values().map(Value::from_json);
                return self.lazy_items(items, &stages, name, args).map(Some);
            }
            None => self.eval(node)?,
        };
        if matches!(source, Value::Gen(_)) || !source.is_iterable() {
            return Ok(None);
        }
        self.lazy_over(source, &stages, name, args).map(Some)
    }

    /// The lazy chain over an evaluated collection.
    fn lazy_over(
        &mut self,
        source: Value<'a>,
        stages: &[Stage<'a>],
        name: &str,
        args: Args<'a>,
    ) -> R<Value<'a>> {
        if let Value::Json(J::Array(l)) = source {
            return self.lazy_items(l.iter().map(Value::from_json), stages, name, args);
        }
        // A built list is read in place, each item cloned only when reached.
        if let Value::Iter(l) | Value::List(l) = &source {
            let l = l.clone();
            return self.lazy_items(l.iter().cloned(), stages, name, args);
        }
        let items = seq_items(&source);
        self.lazy_items(items.into_iter(), stages, name, args)
    }

    /// `first()` / `any()` over `items` through the stages.
    fn lazy_items(
        &mut self,
        items: impl Iterator<Item = Value<'a>>,
        stages: &[Stage<'a>],
        name: &str,
        args: Args<'a>,
    ) -> R<Value<'a>> {
        let pred = match args.first() {
            Some(Arg::Pos(p)) => Some(p),
            _ => None,
        };
        'items: for item in items {
            self.tick(1)?;
            let mut item = item;
            for stage in stages {
                match stage {
                    Stage::Where(p) => {
                        if !self.eval_with(*p, std::slice::from_ref(&item))?.truthy() {
                            continue 'items;
                        }
                    }
                    Stage::Select(p) => item = self.eval_with(*p, std::slice::from_ref(&item))?,
                    Stage::Key(k) => item = self.member(&item, k)?,
                }
            }
            if name == "first" {
                return Ok(item);
            }
            let found = match pred {
                Some(p) => self.eval_with(p, std::slice::from_ref(&item))?.truthy(),
                None => true,
            };
            if found {
                return Ok(Value::Bool(true));
            }
        }
        if name == "any" {
            return Ok(Value::Bool(false));
        }
        match pred {
            Some(default) => self.eval(default),
            None => Err(EvalErrorKind::Sequence("the collection is empty".into()).into()),
        }
    }

    #[inline(never)]
    fn list_literal(&mut self, args: Args<'a>) -> R<Value<'a>> {
        let mut out = Vec::with_capacity(args.len());
        for a in args {
            match a {
                Arg::Pos(n) => out.push(self.eval(n)?),
                Arg::Skip => out.push(Value::Null),
                Arg::Map(..) => return type_err("a list literal cannot hold `=>` pairs"),
            }
        }
        self.new_list(out)
    }

    #[inline(never)]
    fn dict_literal(&mut self, args: Args<'a>) -> R<Value<'a>> {
        let mut out = indexmap::IndexMap::with_capacity(args.len());
        for a in args {
            match a {
                Arg::Map(k, v) => {
                    let k = self.eval(k)?;
                    let v = self.eval(v)?;
                    out.insert(k, v);
                }
                _ => return type_err("a dictionary literal holds only `key => value` pairs"),
            }
        }
        self.check_len(out.len())?;
        Ok(Value::Dict(Rc::new(out)))
    }

    #[inline(never)]
    fn invoke(&mut self, callee: Node<'a>, args: Args<'a>) -> R<Value<'a>> {
        match &self.eval(callee)? {
            Value::Lambda(l) => {
                let (pos, named) = self.eval_args(args)?;
                self.call_lambda(l, &pos, &named, None)
            }
            other => Err(EvalErrorKind::NoMatchingFunction(
                "#call".into(),
                format!("a {} cannot be called", other.type_name()),
            )
            .into()),
        }
    }

    #[inline(never)]
    fn unary(&mut self, op: UnOp, n: Node<'a>) -> R<Value<'a>> {
        let v = self.eval(n)?;
        Ok(match op {
            UnOp::Not => Value::Bool(!v.truthy()),
            UnOp::Plus => match v.view() {
                View::Int(_) | View::Float(_) | View::Span(_) => v,
                _ => return type_err(format!("unary + of a {}", v.type_name())),
            },
            UnOp::Minus if matches!(v, Value::Span(_)) => match v {
                Value::Span(us) => Value::Span(us.checked_neg().ok_or(EvalErrorKind::Overflow)?),
                _ => v,
            },
            UnOp::Minus => match v.view() {
                View::Int(i) => Value::Int(i.checked_neg().ok_or(EvalErrorKind::Overflow)?),
                View::Float(x) => Value::Float(-x),
                _ => return type_err(format!("unary - of a {}", v.type_name())),
            },
        })
    }

    /// `left -> right`: `left` binds variables (let, with, def, unpack) or, for any other value,
    /// `$`; `right` is evaluated with them.
    fn then(&mut self, l: Node<'a>, r: Node<'a>) -> R<Value<'a>> {
        let v = self.eval(l)?;
        if !matches!(v, Value::Undef) || !is_binder(l) {
            self.vars.push((Name::Dollar, v));
        }
        self.eval(r)
    }

    /// Evaluates a call's arguments: positional values and `name => value` pairs.
    #[allow(clippy::type_complexity)]
    pub fn eval_args(&mut self, args: Args<'a>) -> R<(Vec<Value<'a>>, Vec<(&'a str, Value<'a>)>)> {
        let mut pos = Vec::new();
        let mut named = Vec::new();
        for a in args {
            match a {
                Arg::Pos(n) => pos.push(self.eval(n)?),
                Arg::Skip => pos.push(Value::Null),
                Arg::Map(k, v) => match k.kind() {
                    Kind::Word(name) => named.push((name, self.eval(v)?)),
                    _ => return type_err("a `=>` pair whose key is not a name"),
                },
            }
        }
        Ok((pos, named))
    }

    /// Calls a lambda with positional and named arguments. `def_name` is set for functions made
    /// by `def`, which see themselves (recursion).
    pub fn call_lambda(
        &mut self,
        l: &Rc<Lambda<'a>>,
        pos: &[Value<'a>],
        named: &[(&'a str, Value<'a>)],
        def_name: Option<&'a str>,
    ) -> R<Value<'a>> {
        self.depth += 1;
        if self.depth > self.limits.max_depth {
            self.depth -= 1;
            return Err(EvalErrorKind::TooDeep(self.limits.max_depth).into());
        }
        let mut scope = l.scope.clone();
        if let Some(name) = def_name {
            scope.push((Name::Func(name), Value::Lambda(l.clone())));
        }
        bind_args(&mut scope, pos, named);
        let saved = std::mem::replace(&mut self.vars, scope);
        let saved_scope = self.scope;
        self.scopes += 1;
        self.scope = self.scopes;
        let r = self.eval(l.body);
        self.scope = saved_scope;
        self.vars = saved;
        self.depth -= 1;
        r
    }

    /// Evaluates `node` with `$` (and `$1`, `$2`, ...) bound to `args`.
    pub fn eval_with(&mut self, node: Node<'a>, args: &[Value<'a>]) -> R<Value<'a>> {
        let mark = self.vars.len();
        bind_args(&mut self.vars, args, &[]);
        let r = self.eval(node);
        self.vars.truncate(mark);
        r
    }

    /// Calls the argument in `slot` as a lambda of `args`: an expression argument is evaluated
    /// with `$` bound; a value argument is called when it is a lambda, else returned as is.
    pub fn apply(&mut self, slot: &Slot<'a>, args: &[Value<'a>]) -> R<Value<'a>> {
        match slot {
            Slot::Ast(n) => self.eval_with(*n, args),
            Slot::Val(Value::Lambda(l)) => {
                let l = l.clone();
                self.call_lambda(&l, args, &[], None)
            }
            Slot::Val(v) => Ok(v.clone()),
            Slot::Missing => Ok(Value::Null),
        }
    }

    /// Evaluates the argument in `slot`; `None` when it was not given.
    pub fn value(&mut self, slot: &Slot<'a>) -> R<Option<Value<'a>>> {
        match slot {
            Slot::Ast(n) => self.eval(*n).map(Some),
            Slot::Val(v) => Ok(Some(v.clone())),
            Slot::Missing => Ok(None),
        }
    }

    /// Resolves and runs `name(args)` (the call `node`).
    fn call_function(&mut self, node: Node<'a>, name: &'a str, args: Args<'a>) -> R<Value<'a>> {
        if let Some(Value::Lambda(l)) = self.lookup(Name::Func(name)) {
            let l = l.clone();
            let (pos, named) = self.eval_args(args)?;
            return self.call_lambda(&l, &pos, &named, Some(name));
        }
        let engine = self.engine;
        match engine.resolve(node, name, true) {
            Some(entry) => {
                let (recv, rest) = if entry.shift {
                    match args.first() {
                        Some(Arg::Pos(n)) => (Some(self.eval(n)?), args.skip(1)),
                        _ => {
                            return Err(EvalErrorKind::NoMatchingFunction(
                                name.into(),
                                "missing the first argument".into(),
                            )
                            .into())
                        }
                    }
                } else {
                    (None, args)
                };
                let call = Call::from_ast(name, entry, recv, rest, false)?;
                self.run(entry, &call)
            }
            None if engine.method(name).is_some() => Err(EvalErrorKind::NoMatchingFunction(
                name.into(),
                "it is a method: call it as `value.name(...)`".into(),
            )
            .into()),
            None => Err(EvalErrorKind::NoFunction(name.into()).into()),
        }
    }

    /// Resolves and runs `recv.name(args)` (the call `node`).
    fn call_method(
        &mut self,
        node: Node<'a>,
        name: &'a str,
        recv: Value<'a>,
        args: Args<'a>,
    ) -> R<Value<'a>> {
        let engine = self.engine;
        match engine.resolve(node, name, false) {
            Some(entry) => {
                let call = Call::from_ast(name, entry, Some(recv), args, true)?;
                self.run(entry, &call)
            }
            None if engine.function(name).is_some() => Err(EvalErrorKind::NoMatchingMethod(
                name.into(),
                "it is a function: call it as `name(...)`".into(),
            )
            .into()),
            None => Err(EvalErrorKind::NoMethod(name.into()).into()),
        }
    }

    /// Runs a resolved entry.
    pub fn run(&mut self, entry: &'a Entry, call: &Call<'a>) -> R<Value<'a>> {
        match &entry.imp {
            Imp::Native(f) => f(self, call),
            Imp::Json(f) => {
                let mut args = Vec::new();
                if let Some(r) = &call.recv {
                    args.push(
                        to_json(r).ok_or_else(|| EvalErrorKind::Type("no JSON form".into()))?,
                    );
                }
                for s in &call.slots {
                    let v = self.value(s)?.unwrap_or(Value::Null);
                    args.push(
                        to_json(&v).ok_or_else(|| EvalErrorKind::Type("no JSON form".into()))?,
                    );
                }
                let out = f(&args).map_err(EvalErrorKind::Custom)?;
                Ok(super::value::from_json_owned(&out))
            }
        }
    }

    /// `value.key`: a dictionary's key, or the key of every item of a collection.
    pub fn member(&mut self, r: &Value<'a>, key: &'a str) -> R<Value<'a>> {
        if let Value::Json(J::Object(m)) = r {
            return match super::value::json_get(m, key) {
                Some(v) => Ok(Value::from_json(v)),
                None => Err(EvalErrorKind::KeyNotFound(key.into()).into()),
            };
        }
        if let Some(p) = super::library::datetime::property(r, key) {
            return p;
        }
        if r.is_dict() {
            return r
                .dict_get_str(key)
                .ok_or_else(|| EvalErrorKind::KeyNotFound(key.into()).into());
        }
        // A list read in place: each item's key, nothing copied first.
        if let Value::Iter(l) | Value::List(l) = r {
            self.tick(l.len() as u64)?;
            let mut out = Vec::with_capacity(l.len());
            for it in l.iter() {
                out.push(self.member(it, key)?);
            }
            return self.new_iter(out);
        }
        if let Value::Json(J::Array(l)) = r {
            self.tick(l.len() as u64)?;
            let mut out = Vec::with_capacity(l.len());
            for it in l.iter() {
                out.push(self.member(&Value::from_json(it), key)?);
            }
            return self.new_iter(out);
        }
        if r.is_iterable() {
            let items = self.seq(r, "`.`")?;
            self.tick(items.len() as u64)?;
            let mut out = Vec::with_capacity(items.len());
            for it in &items {
                out.push(self.member(it, key)?);
            }
            return self.new_iter(out);
        }
        Err(EvalErrorKind::NoMatchingFunction(
            "#operator_.".into(),
            format!("a {} has no key `{key}`", r.type_name()),
        )
        .into())
    }

    /// `value[args]`.
    fn index(&mut self, target: Value<'a>, args: Args<'a>) -> R<Value<'a>> {
        let mut key = None;
        let mut default = None;
        for (i, a) in args.iter().enumerate() {
            match a {
                Arg::Pos(n) if i == 0 => key = Some(self.eval(n)?),
                Arg::Pos(n) if i == 1 => default = Some(self.eval(n)?),
                Arg::Map(k, v) if matches!(k.kind(), Kind::Word(w) if w == "default") => {
                    default = Some(self.eval(v)?)
                }
                _ => {
                    return Err(EvalErrorKind::NoMatchingFunction(
                        "#indexer".into(),
                        "bad indexer arguments".into(),
                    )
                    .into())
                }
            }
        }
        let Some(key) = key else {
            return Err(EvalErrorKind::NoMatchingFunction(
                "#indexer".into(),
                "an indexer needs a key".into(),
            )
            .into());
        };
        if target.is_dict() {
            return match target.dict_get(&key) {
                Some(v) => Ok(v),
                None => match default {
                    Some(d) => Ok(d),
                    None => {
                        Err(EvalErrorKind::KeyNotFound(super::value::display_string(&key)).into())
                    }
                },
            };
        }
        let Some(i) = key.as_int() else {
            return Err(EvalErrorKind::NoMatchingFunction(
                "#indexer".into(),
                format!(
                    "cannot index a {} by a {}",
                    target.type_name(),
                    key.type_name()
                ),
            )
            .into());
        };
        if default.is_some() {
            return Err(EvalErrorKind::NoMatchingFunction(
                "#indexer".into(),
                "a default applies to dictionaries only".into(),
            )
            .into());
        }
        let items: Vec<Value<'a>> = match target.view() {
            View::Str(_) => {
                return Err(EvalErrorKind::NoMatchingFunction(
                    "#indexer".into(),
                    "strings cannot be indexed".into(),
                )
                .into())
            }
            View::JList(l) => {
                let n = l.len() as i64;
                let j = if i < 0 { i + n } else { i };
                return match usize::try_from(j).ok().and_then(|j| l.get(j)) {
                    Some(v) => Ok(Value::from_json(v)),
                    None => default.ok_or_else(|| EvalErrorKind::IndexOutOfRange(i).into()),
                };
            }
            _ => match self.items(&target)? {
                Some(items) => items,
                None => {
                    return Err(EvalErrorKind::NoMatchingFunction(
                        "#indexer".into(),
                        format!("cannot index a {}", target.type_name()),
                    )
                    .into())
                }
            },
        };
        let n = items.len() as i64;
        let j = if i < 0 { i + n } else { i };
        match usize::try_from(j).ok().and_then(|j| items.get(j)) {
            Some(v) => Ok(v.clone()),
            None => default.ok_or_else(|| EvalErrorKind::IndexOutOfRange(i).into()),
        }
    }
}

/// The arguments of `get('key')` or `get('key', default)` with a literal key.
fn const_key(args: Args<'_>) -> Option<(&str, Option<Node<'_>>)> {
    let (key, default) = match (args.len(), args.get(0), args.get(1)) {
        (1, Some(Arg::Pos(k)), _) => (k, None),
        (2, Some(Arg::Pos(k)), Some(Arg::Pos(d))) => (k, Some(d)),
        _ => return None,
    };
    match key.kind() {
        Kind::Str(k) | Kind::Word(k) => Some((k, default)),
        Kind::Const(J::String(k)) => Some((&**k, default)),
        _ => None,
    }
}

#[cold]
fn bad_member() -> Fail {
    EvalErrorKind::NoMatchingFunction(
        "#operator_.".into(),
        "the right side of `.` must be a name or a method call".into(),
    )
    .into()
}

/// True when `node` is a call to one of the binders, which return the undefined value after
/// binding variables.
fn is_binder(node: Node<'_>) -> bool {
    match node.kind() {
        Kind::Call(name, _) | Kind::Method { name, .. } => {
            matches!(name, "let" | "with" | "def" | "unpack")
        }
        _ => false,
    }
}

/// The items an index finds, two kept inline.
type Found<'a> = smallvec::SmallVec<[Value<'a>; 2]>;

/// One step of a lazy `where`/`select`/`.key` chain.
enum Stage<'n> {
    Where(Node<'n>),
    Select(Node<'n>),
    Key(&'n str),
}
