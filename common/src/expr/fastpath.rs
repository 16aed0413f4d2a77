//! A shortcut for the commonest query predicates (`$.status = 'ready' and 'controller' in
//! $.roles`): comparisons, membership and `and`/`or`/`not` over `$.key` of input objects and
//! literals are evaluated straight on the JSON, without the general evaluator. Whenever the
//! shortcut is unsure (a missing key, a value it does not handle) it answers `None` and the item
//! goes through the general evaluator, so results and errors are exactly the same.

use serde_json::Value as J;

use super::ast::{BinOp, Kind, Node, UnOp};
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
}

/// Compiles `node` when it is made only of what the shortcut handles.
pub fn compile(node: Node<'_>) -> Option<Fast<'_>> {
    Some(match node.kind() {
        Kind::Paren(n) => return compile(n),
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
        Fast::Key(_) => true,
        Fast::Lit(_) => false,
        Fast::Not(x) => reads_keys(x),
        Fast::And(l, r) | Fast::Or(l, r) | Fast::Bin(_, l, r) => reads_keys(l) || reads_keys(r),
    }
}

/// Evaluates the predicate on one item; `None` when the general evaluator must decide.
pub fn run<'a>(f: &Fast<'a>, item: &'a serde_json::Map<String, J>) -> Option<Value<'a>> {
    Some(match f {
        Fast::Key(k) => Value::from_json(json_get(item, k)?),
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
