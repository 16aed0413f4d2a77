//! Error types: a parse error and an evaluation error, both carrying the expression text and a
//! caret at the position of the fault.

use std::fmt;

/// Writes the line of `expr` holding byte offset `pos` and a `^` under it.
fn write_caret(f: &mut fmt::Formatter<'_>, expr: &str, pos: usize) -> fmt::Result {
    let pos = pos.min(expr.len());
    let start = expr[..pos].rfind('\n').map(|i| i + 1).unwrap_or(0);
    let end = expr[pos..]
        .find('\n')
        .map(|i| pos + i)
        .unwrap_or(expr.len());
    let line = &expr[start..end];
    let column = expr[start..pos].chars().count();
    write!(f, "\n    {line}\n    {}^", " ".repeat(column))
}

/// Byte offset of `pos` rounded down to a character boundary of `text`.
pub(crate) fn floor_boundary(text: &str, pos: usize) -> usize {
    let mut p = pos.min(text.len());
    while !text.is_char_boundary(p) {
        p -= 1;
    }
    p
}

/// Which stage of parsing found the fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParseErrorKind {
    /// A character that starts no token (YAQL's lexical error).
    Lexical,
    /// Tokens in an order the grammar does not allow (YAQL's grammar error).
    Grammar,
}

/// An expression that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ParseError {
    /// Lexical or grammar error.
    pub kind: ParseErrorKind,
    /// What is wrong.
    pub message: String,
    /// The expression text.
    pub expr: String,
    /// Byte offset of the fault in `expr`.
    pub pos: usize,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.kind {
            ParseErrorKind::Lexical => "lexical error",
            ParseErrorKind::Grammar => "syntax error",
        };
        write!(
            f,
            "{what} at column {}: {}",
            self.expr[..floor_boundary(&self.expr, self.pos)]
                .chars()
                .count()
                + 1,
            self.message
        )?;
        write_caret(f, &self.expr, floor_boundary(&self.expr, self.pos))
    }
}

/// What went wrong while evaluating.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EvalErrorKind {
    /// A dictionary has no such key (`$.missing`, `$[missing]`).
    #[error("key not found: {0}")]
    KeyNotFound(String),
    /// A list index outside the list.
    #[error("index {0} out of range")]
    IndexOutOfRange(i64),
    /// No function of that name is registered.
    #[error("unknown function `{0}`")]
    NoFunction(String),
    /// No method of that name is registered.
    #[error("unknown method `{0}`")]
    NoMethod(String),
    /// A function exists but not for these arguments.
    #[error("no matching function `{0}`: {1}")]
    NoMatchingFunction(String, String),
    /// A method exists but not for this receiver or these arguments.
    #[error("no matching method `{0}`: {1}")]
    NoMatchingMethod(String, String),
    /// Division or modulo by zero.
    #[error("division by zero")]
    ZeroDivision,
    /// Operands of the wrong type.
    #[error("type error: {0}")]
    Type(String),
    /// A value outside what a function accepts.
    #[error("value error: {0}")]
    Value(String),
    /// An empty or ambiguous sequence where one item was needed.
    #[error("{0}")]
    Sequence(String),
    /// A collection grew beyond the collection limit.
    #[error("collection larger than {0} items")]
    CollectionTooLarge(usize),
    /// A value grew beyond the memory quota.
    #[error("value larger than the memory quota of {0} bytes")]
    MemoryQuota(usize),
    /// The evaluation took more steps than allowed.
    #[error("evaluation exceeded {0} steps")]
    StepLimit(u64),
    /// Calls nested deeper than allowed.
    #[error("calls nested deeper than {0}")]
    TooDeep(usize),
    /// `assert` failed.
    #[error("assertion failed: {0}")]
    Assertion(String),
    /// An integer result outside 64 bits.
    #[error("integer overflow")]
    Overflow,
    /// An error raised by a registered helper function.
    #[error("{0}")]
    Custom(String),
}

/// An expression that failed to evaluate: the error, the expression and where in it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub struct EvalError {
    /// What went wrong.
    pub kind: EvalErrorKind,
    /// The expression text.
    pub expr: String,
    /// Byte offset in `expr` of the operation that failed.
    pub pos: usize,
}

impl fmt::Display for EvalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pos = floor_boundary(&self.expr, self.pos);
        write!(
            f,
            "evaluation error at column {}: {}",
            self.expr[..pos].chars().count() + 1,
            self.kind
        )?;
        write_caret(f, &self.expr, pos)
    }
}

/// Parse or evaluation failure, for callers that do both in one step.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ExprError {
    /// The expression does not parse.
    #[error(transparent)]
    Parse(#[from] ParseError),
    /// The expression failed to evaluate.
    #[error(transparent)]
    Eval(#[from] EvalError),
}

/// An evaluation failure and, once known, where it happened.
#[derive(Debug, Clone)]
pub struct Fail {
    /// What went wrong (boxed: keeps results small on the hot path).
    pub kind: Box<EvalErrorKind>,
    /// Byte offset of the failing operation, filled in by the innermost node that knows it.
    pub pos: Option<usize>,
}

impl From<EvalErrorKind> for Fail {
    fn from(kind: EvalErrorKind) -> Self {
        Fail {
            kind: Box::new(kind),
            pos: None,
        }
    }
}

/// Result of evaluator and library operations.
pub type R<T> = Result<T, Fail>;

/// Shorthand for a type error.
pub fn type_err<T>(msg: impl Into<String>) -> R<T> {
    Err(EvalErrorKind::Type(msg.into()).into())
}
