//! Regular expressions compiled from YAQL's patterns and flags, kept per thread: for `regex()`,
//! `matches`, `=~` and the fast path's `matches`.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use crate::errors::{EvalErrorKind, R};

thread_local! {
    static CACHE: RefCell<HashMap<String, Rc<regex::Regex>>> = RefCell::new(HashMap::new());
}

/// Compiles a pattern with inline flags (`i`, `m`, `s`), reusing recent compilations.
pub fn compile(pattern: &str, flags: &str) -> R<Rc<regex::Regex>> {
    if flags.is_empty() {
        if let Some(re) = CACHE.with(|c| c.borrow().get(pattern).cloned()) {
            return Ok(re);
        }
    }
    let full = if flags.is_empty() {
        pattern.to_string()
    } else {
        format!("(?{flags}){pattern}")
    };
    if let Some(re) = CACHE.with(|c| c.borrow().get(&full).cloned()) {
        return Ok(re);
    }
    let re = regex::RegexBuilder::new(&full)
        .size_limit(1 << 20)
        .build()
        .map_err(|e| EvalErrorKind::Value(format!("bad regular expression: {e}")))?;
    let re = Rc::new(re);
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        if c.len() > 256 {
            c.clear();
        }
        c.insert(full, re.clone());
    });
    Ok(re)
}
