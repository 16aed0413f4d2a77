//! The function table and the calling convention, below the library and the evaluator: the
//! registry of [`Engine`] (entries filed by name, as functions or methods), what a native function
//! is ([`NativeFn`], [`Spec`], [`Form`]) and what it gets: the [`Call`] with its argument
//! [`Slot`]s, and [`Interp`], the evaluation in progress. The library registers its functions
//! here; `eval` holds `Interp`'s evaluating methods and `engine` the evaluation's entry points.

use std::collections::HashMap;
use std::fmt;
use std::rc::Rc;
use std::sync::Arc;

use serde_json::Value as Out;

use crate::ast::{Arg, Args, ArgsIter, Kind, Node};
use crate::errors::{EvalErrorKind, Fail, R};
use crate::hashindex::HashIndex;
use crate::limits::Limits;
use crate::memo;
use crate::shared;
use crate::states::{Layers, StateRoot, States};
use crate::value::{FxHasher, Name, Value};

/// Function names are short and trusted: a fast hasher for the registry.
type Fx = std::hash::BuildHasherDefault<FxHasher>;

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
    args: Option<ArgsIter<'a>>,
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
    pub(crate) lazy: bool,
    pub(crate) plain_get: bool,
    pub(crate) plain_diff: bool,
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

impl Engine {
    /// An engine with no functions at all.
    pub fn empty() -> Engine {
        Engine {
            entries: Vec::new(),
            functions: HashMap::default(),
            methods: HashMap::default(),
            id: memo::new_engine_id(),
            limits: Limits::default(),
            lazy: false,
            plain_get: false,
            plain_diff: false,
        }
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
        self.id = memo::new_engine_id();
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
        if let Some(i) = memo::entry(word, self.id) {
            return self.entries.get(i as usize);
        }
        let map = if function {
            &self.functions
        } else {
            &self.methods
        };
        let &i = map.get(name)?;
        memo::set_entry(word, self.id, i);
        self.entries.get(i as usize)
    }
}

/// The variables in scope, innermost last. (A vector: kept inline, four of them made an
/// evaluation a few hundred bytes larger, and copying that cost more than the allocation.)
pub type Vars<'a> = Vec<(Name<'a>, Value<'a>)>;

/// One evaluation in progress: what a native function gets with its [`Call`]. Its evaluating
/// methods ([`Interp::eval`], [`Interp::value`], [`Interp::apply`], ...) are in `eval`.
pub struct Interp<'a> {
    /// The engine (registry and limits).
    pub engine: &'a Engine,
    /// Variables in scope, innermost last.
    pub vars: Vars<'a>,
    /// The limits.
    pub limits: Limits,
    /// Old state for the deployment helpers.
    pub states: States<'a>,
    /// Sort keys of lists made by `orderBy`, for `thenBy`.
    #[allow(clippy::type_complexity)]
    pub orderings: Vec<(Rc<Vec<Value<'a>>>, Vec<Vec<(Value<'a>, bool)>>)>,
    /// Values of the expression's node-independent parts, computed once (see `shared`).
    pub(crate) shared: &'a [shared::Part],
    /// `changed(x)` of node-independent `x`, computed once: (address of `x`, changed).
    pub(crate) changed: &'a [(usize, bool)],
    /// Indexes for `where($.key = Y)` over kept lists.
    pub(crate) joins: &'a [shared::Join],
    /// Indexes for `X in P` over kept lists.
    #[allow(clippy::type_complexity)]
    pub(crate) members: &'a [(usize, usize, HashIndex)],
    /// The bits of the nodes with a kept value or an index (`Shared::kept`).
    pub(crate) kept: u64,
    /// The states as layers, when given so; `$` (and `$data`) at `root_slots` stand for
    /// `layers.new` and are merged only when needed.
    pub(crate) layers: Option<Layers<'a>>,
    pub(crate) root_slots: (usize, usize),
    pub(crate) root_new: std::cell::OnceCell<Value<'a>>,
    pub(crate) root_old: std::cell::OnceCell<Value<'a>>,
    /// Variables that stand for a layered state's root, bound by the deployment helpers without
    /// merging the layers: (slot, which state, scope they were bound in).
    pub(crate) state_slots: Vec<(usize, StateRoot, u32)>,
    /// The variable scope in use: a lambda call runs in a scope of its own.
    pub(crate) scope: u32,
    pub(crate) scopes: u32,
    pub(crate) steps: u64,
    pub(crate) depth: usize,
}

impl<'a> Interp<'a> {
    /// A new evaluation with the given variables.
    #[inline]
    pub fn new(engine: &'a Engine, vars: Vars<'a>, states: States<'a>) -> Self {
        Self::with(engine, vars, states, None, (usize::MAX, usize::MAX), None)
    }

    /// A new evaluation with its layers and kept values, built in one piece (in the caller's
    /// place: an `Interp` is a few hundred bytes, and built then changed, it was copied).
    #[inline]
    pub(crate) fn with(
        engine: &'a Engine,
        vars: Vars<'a>,
        states: States<'a>,
        layers: Option<Layers<'a>>,
        root_slots: (usize, usize),
        shared: Option<&'a shared::Shared>,
    ) -> Self {
        Interp {
            engine,
            vars,
            limits: engine.limits(),
            states,
            orderings: Vec::new(),
            shared: shared.map_or(&[], |s| &s.parts),
            changed: shared.map_or(&[], |s| &s.changed),
            joins: shared.map_or(&[], |s| &s.joins),
            members: shared.map_or(&[], |s| &s.members),
            kept: shared.map_or(0, |s| s.kept),
            layers,
            root_slots,
            root_new: std::cell::OnceCell::new(),
            root_old: std::cell::OnceCell::new(),
            state_slots: Vec::new(),
            scope: 0,
            scopes: 0,
            steps: 0,
            depth: 0,
        }
    }
}

/// Binds `$` (also `$1`), `$2`, ... and `$name` for a lambda call.
pub fn bind_args<'a>(scope: &mut Vars<'a>, pos: &[Value<'a>], named: &[(&'a str, Value<'a>)]) {
    if let Some(first) = pos.first() {
        scope.push((Name::Dollar, first.clone()));
    }
    for (i, v) in pos.iter().enumerate().skip(1) {
        scope.push((Name::Pos(i + 1), v.clone()));
    }
    for (k, v) in named {
        scope.push((Name::Named(k), v.clone()));
    }
}
