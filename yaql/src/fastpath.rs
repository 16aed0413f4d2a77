//! A shortcut for the commonest query predicates (`$.status = 'ready' and 'controller' in
//! $.roles`, `$.node_roles.any($.matches('controller'))`): comparisons, membership,
//! `and`/`or`/`not`, `L.any(P)` and `S.matches('pattern')` over `$`, `$.key` of input data and
//! literals are evaluated straight on the JSON, without the general evaluator. Whenever the
//! shortcut is unsure (a missing key, a value it does not handle, an error) it answers `None`
//! and the item goes through the general evaluator, so results and errors are exactly the same.

use std::rc::Rc;

use crate::json::Json as J;

use super::ast::{Arg, BinOp, Kind, Node, UnOp};
use super::value::{compare, equal, json_get, Value, View};

/// A predicate compiled for the shortcut.
#[derive(Debug)]
pub enum Fast<'a> {
    /// `$.key`
    Key(&'a str),
    /// A literal.
    Lit(Value<'a>),
    /// `not x`
    Not(Box<Fast<'a>>),
    /// `x and y`
    And(Box<Fast<'a>>, Box<Fast<'a>>),
    /// `x or y`
    Or(Box<Fast<'a>>, Box<Fast<'a>>),
    /// A comparison or `in`.
    Bin(BinOp, Box<Fast<'a>>, Box<Fast<'a>>),
    /// `$` (or `$1`): the item itself.
    This,
    /// `L.any(P)`: whether `P` holds for some item of the input list `L` (`P`'s `$` the item).
    Any(Box<Fast<'a>>, Box<Fast<'a>>),
    /// `S.matches('pattern')` on an input string `S`.
    Matches(Box<Fast<'a>>, Rc<regex::Regex>),
}

/// Compiles `node` when it is made only of what the shortcut handles; `calls` allows `any` and
/// `matches` (pass whether they are the built-in ones: [`super::Engine::lazy_queries`]).
pub fn compile(node: Node<'_>, calls: bool) -> Option<Fast<'_>> {
    let compile = |n| compile(n, calls);
    Some(match node.kind() {
        Kind::Paren(n) => return compile(n),
        Kind::Var(v) if v.is_empty() || v == "1" => Fast::This,
        Kind::Method {
            recv,
            name: "any",
            args,
            safe: false,
        } if calls => match args.one() {
            Some(p) => Fast::Any(Box::new(compile(recv)?), Box::new(compile(p)?)),
            None => return None,
        },
        Kind::Method {
            recv,
            name: "matches",
            args,
            safe: false,
        } if calls => {
            let (1, Some(Arg::Pos(p))) = (args.len(), args.first()) else {
                return None;
            };
            let Kind::Str(pattern) = p.kind() else {
                return None;
            };
            let re = super::pattern::compile(pattern, "").ok()?;
            Fast::Matches(Box::new(compile(recv)?), re)
        }
        Kind::Null => Fast::Lit(Value::Null),
        Kind::Bool(b) => Fast::Lit(Value::Bool(b)),
        Kind::Int(i) => Fast::Lit(Value::Int(i)),
        Kind::Float(x) => Fast::Lit(Value::Float(x)),
        Kind::Str(s) | Kind::Word(s) => Fast::Lit(Value::Text(s)),
        Kind::Const(j) => Fast::Lit(Value::from_json(j)),
        Kind::Member {
            recv,
            rhs,
            safe: false,
        } => match (recv.kind(), rhs.kind()) {
            (Kind::Var(v), Kind::Word(k)) if v.is_empty() || v == "1" => Fast::Key(k),
            _ => return None,
        },
        Kind::Unary(UnOp::Not, n) => Fast::Not(Box::new(compile(n)?)),
        Kind::Binary(BinOp::And, l, r) => Fast::And(Box::new(compile(l)?), Box::new(compile(r)?)),
        Kind::Binary(BinOp::Or, l, r) => Fast::Or(Box::new(compile(l)?), Box::new(compile(r)?)),
        Kind::Binary(
            op
            @ (BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Gt | BinOp::Le | BinOp::Ge | BinOp::In),
            l,
            r,
        ) => Fast::Bin(op, Box::new(compile(l)?), Box::new(compile(r)?)),
        _ => return None,
    })
}

/// True when the predicate reads at least one key (else the shortcut gains nothing).
pub fn reads_keys(f: &Fast<'_>) -> bool {
    match f {
        Fast::Key(_) | Fast::Any(..) | Fast::Matches(..) => true,
        Fast::Lit(_) | Fast::This => false,
        Fast::Not(x) => reads_keys(x),
        Fast::And(l, r) | Fast::Or(l, r) | Fast::Bin(_, l, r) => reads_keys(l) || reads_keys(r),
    }
}

/// Evaluates the predicate on one item of input data; `None` when the general evaluator must
/// decide.
pub fn run<'a>(f: &Fast<'a>, item: &'a J) -> Option<Value<'a>> {
    Some(match f {
        Fast::Key(k) => match item {
            J::Object(m) => Value::from_json(json_get(m, k)?),
            _ => return None,
        },
        Fast::This => Value::from_json(item),
        Fast::Any(l, p) => match run(l, item)? {
            Value::Json(J::Array(items)) => {
                for i in items.iter() {
                    if run(p, i)?.truthy() {
                        return Some(Value::Bool(true));
                    }
                }
                Value::Bool(false)
            }
            _ => return None,
        },
        Fast::Matches(s, re) => match run(s, item)? {
            Value::Json(J::String(s)) => Value::Bool(re.is_match(s)),
            _ => return None,
        },
        Fast::Lit(v) => v.clone(),
        Fast::Not(x) => Value::Bool(!run(x, item)?.truthy()),
        Fast::And(l, r) => {
            let a = run(l, item)?;
            if a.truthy() {
                run(r, item)?
            } else {
                a
            }
        }
        Fast::Or(l, r) => {
            let a = run(l, item)?;
            if a.truthy() {
                a
            } else {
                run(r, item)?
            }
        }
        Fast::Bin(op, l, r) => {
            let (a, b) = (run(l, item)?, run(r, item)?);
            let o = || compare(&a, &b);
            Value::Bool(match op {
                BinOp::Eq => equal(&a, &b),
                BinOp::Ne => !equal(&a, &b),
                BinOp::Lt => o()?.is_lt(),
                BinOp::Gt => o()?.is_gt(),
                BinOp::Le => o()?.is_le(),
                BinOp::Ge => o()?.is_ge(),
                BinOp::In => match (b.view(), a.view()) {
                    (View::JList(l), _) => l.iter().any(|j| equal(&Value::from_json(j), &a)),
                    (View::Str(hay), View::Str(needle)) => hay.contains(needle),
                    _ => return None,
                },
                _ => return None,
            })
        }
    })
}
