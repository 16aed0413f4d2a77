//! `plinthctl expr eval` and `expr shell`: YAQL offline, with the controller's own engine (YAQL's
//! library, Nailgun's deployment helpers and the controller's registered helpers).

use crate::inputs;
use crate::output::{self, Format};
use anyhow::{anyhow, bail, Result};
use plinth_common::expr::Context;
use plinth_common::json::Json;
use plinth_common::snapshot::Expressions;
use serde_json::{json, Value};
use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;

/// The data an expression sees.
pub struct Data {
    /// `$` (the new state when `old` is given).
    pub data: Json,
    /// The last deployed state, for `changed()`, `old()`, ...
    pub old: Option<Json>,
}

/// What the data options name.
pub struct DataFiles {
    /// `--data FILE`.
    pub data: Option<PathBuf>,
    /// `--old FILE`.
    pub old: Option<PathBuf>,
    /// `--new FILE`.
    pub new: Option<PathBuf>,
}

impl DataFiles {
    /// Reads the files: `$` is `--new` (or `--data`), the old state `--old`.
    pub fn load(&self) -> Result<Data> {
        let stdin_uses = [&self.data, &self.old, &self.new]
            .iter()
            .filter(|p| p.as_deref() == Some(std::path::Path::new("-")))
            .count();
        if stdin_uses > 1 {
            bail!("only one of --data, --old and --new can read standard input");
        }
        let data = match (&self.data, &self.new) {
            (Some(_), Some(_)) => bail!("give the data as --data or as --new, not both"),
            (Some(p), None) | (None, Some(p)) => inputs::read_doc(p)?,
            (None, None) => json!({}),
        };
        let old = match &self.old {
            Some(p) => {
                if self.new.is_none() {
                    bail!(
                        "--old needs --new (the state `$` is, which the old one is compared with)"
                    );
                }
                Some(inputs::read_doc(p)?)
            }
            None => None,
        };
        Ok(Data {
            data: Json::from(data),
            old: old.map(Json::from),
        })
    }
}

/// Evaluates one expression; the error is the engine's message with its caret.
fn evaluate(exprs: &Expressions, text: &str, data: &Data) -> Result<Value, String> {
    let expr = exprs.cache.get_or_parse(text).map_err(|e| e.to_string())?;
    let mut ctx = Context::new(&data.data);
    if data.old.is_some() {
        ctx = ctx.old(data.old.as_ref());
    }
    exprs
        .engine
        .evaluate_in(&expr, &ctx)
        .map_err(|e| e.to_string())
}

/// `plinthctl expr eval EXPR`: prints the result as JSON; a parse or evaluation error is an error.
pub fn eval(text: &str, files: &DataFiles, format: Format) -> Result<bool> {
    let data = files.load()?;
    let exprs = Expressions::standard();
    let v = evaluate(&exprs, text, &data).map_err(|e| anyhow!("{e}"))?;
    match format {
        Format::Json => println!("{}", serde_json::to_string(&v)?),
        Format::Table => output::json(&v),
    }
    Ok(true)
}

/// `plinthctl expr shell`: reads expressions line by line, printing each result (one line of JSON) or
/// error (`error: ...` with its caret); ends at the end of input.
pub fn shell(files: &DataFiles) -> Result<bool> {
    let data = files.load()?;
    let exprs = Expressions::standard();
    let stdin = std::io::stdin();
    let interactive = stdin.is_terminal();
    let mut out = std::io::stdout();
    if interactive {
        println!("YAQL shell: one expression a line; `$` is the data. End with Ctrl-D.");
    }
    let mut lines = stdin.lock().lines();
    loop {
        if interactive {
            print!("yaql> ");
            let _ = out.flush();
        }
        let Some(line) = lines.next() else { break };
        let line = line.map_err(|e| anyhow!("cannot read standard input: {e}"))?;
        let text = line.trim();
        if text.is_empty() || text.starts_with('#') {
            continue;
        }
        match evaluate(&exprs, text, &data) {
            Ok(v) => println!("{}", serde_json::to_string(&v).unwrap_or_default()),
            Err(e) => println!("error: {e}"),
        }
        let _ = out.flush();
    }
    if interactive {
        println!();
    }
    Ok(true)
}
