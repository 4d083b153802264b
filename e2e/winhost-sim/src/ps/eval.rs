//! The evaluator: runs a parsed script over a host's state with PowerShell 5.1's error model (non-terminating
//! cmdlet errors, statement-terminating runtime errors, script-terminating `throw` and `-ErrorAction Stop`),
//! `$?`, `$LASTEXITCODE`, `try`/`catch`, pipelines, and the exit-code rules of windows-commands.md §3.

use std::collections::HashMap;
use std::rc::Rc;

use super::ast::{Argument, BinaryOp, Block, Command, Element, Expr, Pipeline, Statement};
use super::value::{Object, ObjectKind, Value};
use crate::host::Host;

/// An error record.
#[derive(Clone, Debug, PartialEq)]
pub struct PsError {
    /// The cmdlet (or empty for runtime errors).
    pub command: String,
    /// The exception message.
    pub message: String,
    /// The ErrorCategory (`ObjectNotFound`).
    pub category: String,
    /// The exception type name (`ItemNotFoundException`).
    pub exception: String,
    /// FullyQualifiedErrorId.
    pub error_id: String,
    /// The target object's text.
    pub target: String,
}

impl PsError {
    /// An error record.
    pub fn new(
        command: &str,
        message: impl Into<String>,
        category: &str,
        exception: &str,
        error_id: &str,
        target: &str,
    ) -> PsError {
        PsError {
            command: command.to_owned(),
            message: message.into(),
            category: category.to_owned(),
            exception: exception.to_owned(),
            error_id: error_id.to_owned(),
            target: target.to_owned(),
        }
    }

    /// A RuntimeException (statement-terminating runtime errors, `throw`).
    pub fn runtime(message: impl Into<String>, category: &str, error_id: &str) -> PsError {
        PsError::new("", message, category, "RuntimeException", error_id, "")
    }

    /// The error as PowerShell's console view prints it (CRLF lines).
    pub fn render(&self) -> String {
        let head =
            if self.command.is_empty() { self.message.clone() } else { format!("{} : {}", self.command, self.message) };
        let activity = if self.command.is_empty() { String::new() } else { format!(" [{}]", self.command) };
        format!(
            "{head}\r\n    + CategoryInfo          : {}: ({}:String){activity}, {}\r\n    + FullyQualifiedErrorId : {}\r\n \r\n",
            self.category, self.target, self.exception, self.error_id
        )
    }

    /// `$_` in a catch block: an ErrorRecord.
    fn record(&self) -> Value {
        let exception = Object::typed(
            &format!("System.Management.Automation.{}", self.exception),
            vec![("Message", Value::str(self.message.clone()))],
        );
        let mut record = Object::typed(
            "System.Management.Automation.ErrorRecord",
            vec![
                ("Exception", Value::Object(Box::new(exception))),
                ("FullyQualifiedErrorId", Value::str(self.error_id.clone())),
                (
                    "CategoryInfo",
                    Value::str(format!(
                        "{}: ({}:String) [{}], {}",
                        self.category, self.target, self.command, self.exception
                    )),
                ),
            ],
        );
        record.kind = ObjectKind::ErrorRecord;
        Value::Object(Box::new(record))
    }
}

/// How control leaves a statement.
#[derive(Debug)]
pub enum Flow {
    /// `exit N`.
    Exit(i64),
    /// An error; `script` when it ends the script (throw, Stop), else only the statement.
    Error {
        /// The record.
        error: Box<PsError>,
        /// Script-terminating.
        script: bool,
    },
}

/// What `-ErrorAction` / `$ErrorActionPreference` say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorAction {
    /// Write the error and go on.
    Continue,
    /// Record the error silently.
    SilentlyContinue,
    /// Turn the error into a script-terminating one.
    Stop,
}

impl ErrorAction {
    /// Parses a preference value.
    pub fn parse(text: &str) -> Option<ErrorAction> {
        match text.to_ascii_lowercase().as_str() {
            "continue" => Some(ErrorAction::Continue),
            "silentlycontinue" | "ignore" => Some(ErrorAction::SilentlyContinue),
            "stop" => Some(ErrorAction::Stop),
            _ => None,
        }
    }
}

/// Bound arguments of one command call.
#[derive(Debug, Default)]
pub struct Arguments {
    /// `-Name value` pairs (names lower-cased; switches carry `Bool(true)`).
    pub named: Vec<(String, Value)>,
    /// Positional values.
    pub positional: Vec<Value>,
}

impl Arguments {
    /// A named value.
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.named.iter().find(|(key, _)| key.eq_ignore_ascii_case(name)).map(|(_, value)| value)
    }

    /// A named value or the positional one at `position`.
    pub fn get_or_position(&self, name: &str, position: usize) -> Option<&Value> {
        self.get(name).or_else(|| self.positional.get(position))
    }

    /// A named or positional value as text.
    pub fn text(&self, name: &str, position: Option<usize>) -> Option<String> {
        match position {
            Some(index) => self.get_or_position(name, index),
            None => self.get(name),
        }
        .map(Value::to_text)
    }

    /// Whether a switch is present (and not `:$false`).
    pub fn switch(&self, name: &str) -> bool {
        self.get(name).is_some_and(Value::truthy)
    }
}

/// Parameters that are switches (they take no value).
const SWITCHES: [&str; 13] = [
    "force",
    "recurse",
    "compress",
    "online",
    "raw",
    "passthru",
    "nonewline",
    "asjob",
    "all",
    "asplaintext",
    "wait",
    "usebasicparsing",
    "nonewwindow",
];

/// One PowerShell process's session.
pub struct Session<'h> {
    /// The host.
    pub host: &'h mut Host,
    variables: HashMap<String, Value>,
    /// Text written to stdout.
    pub stdout: String,
    /// Error records written (rendered at the end).
    pub errors: Vec<PsError>,
    /// `$?`.
    pub last_success: bool,
    /// Assemblies loaded by `Add-Type -AssemblyName` (lower case), whose types the session now knows.
    pub assemblies: Vec<String>,
    try_depth: usize,
}

impl<'h> Session<'h> {
    /// A session on `host`.
    pub fn new(host: &'h mut Host) -> Session<'h> {
        Session {
            host,
            variables: HashMap::new(),
            stdout: String::new(),
            errors: Vec::new(),
            last_success: true,
            assemblies: Vec::new(),
            try_depth: 0,
        }
    }

    /// A variable's value.
    pub fn variable(&self, name: &str) -> Value {
        match name.to_ascii_lowercase().as_str() {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            "null" => Value::Null,
            lowered => self.variables.get(lowered).cloned().unwrap_or(Value::Null),
        }
    }

    /// Sets a variable.
    pub fn set_variable(&mut self, name: &str, value: Value) {
        self.variables.insert(name.to_ascii_lowercase(), value);
    }

    fn error_preference(&self) -> ErrorAction {
        ErrorAction::parse(&self.variable("ErrorActionPreference").to_text()).unwrap_or(ErrorAction::Continue)
    }

    /// Reports a non-terminating error under `action` (or the preference).
    ///
    /// # Errors
    /// [`Flow::Error`] when the action is Stop.
    pub fn report(&mut self, error: PsError, action: Option<ErrorAction>) -> Result<(), Flow> {
        self.last_success = false;
        match action.unwrap_or_else(|| self.error_preference()) {
            ErrorAction::Stop => Err(Flow::Error { error: Box::new(error), script: true }),
            ErrorAction::Continue => {
                self.errors.push(error);
                Ok(())
            }
            ErrorAction::SilentlyContinue => Ok(()),
        }
    }

    /// Runs a script's statements, printing their output; returns the process exit code.
    pub fn run_script(&mut self, statements: &[Statement]) -> u32 {
        self.set_variable("ErrorActionPreference", Value::str("Continue"));
        self.set_variable("ProgressPreference", Value::str("Continue"));
        let mut output = Vec::new();
        let result = self.run_statements(statements, &mut output, true);
        match result {
            Ok(()) => u32::from(!self.last_success),
            Err(Flow::Exit(code)) => code as i32 as u32,
            Err(Flow::Error { error, .. }) => {
                self.errors.push(*error);
                1
            }
        }
    }

    /// Runs statements; output goes to `output`, or to stdout when `top`.
    ///
    /// # Errors
    /// Exit and script-terminating errors.
    pub fn run_statements(&mut self, statements: &[Statement], output: &mut Vec<Value>, top: bool) -> Result<(), Flow> {
        for statement in statements {
            let mut produced = Vec::new();
            self.last_success = true;
            match self.statement(statement, &mut produced) {
                Ok(()) => {}
                Err(Flow::Error { error, script: false })
                    if self.try_depth == 0 && self.error_preference() != ErrorAction::Stop =>
                {
                    self.last_success = false;
                    self.errors.push(*error);
                }
                Err(Flow::Error { error, .. }) => return Err(Flow::Error { error, script: true }),
                Err(exit) => {
                    self.flush(top, produced, output);
                    return Err(exit);
                }
            }
            self.flush(top, produced, output);
        }
        Ok(())
    }

    fn flush(&mut self, top: bool, produced: Vec<Value>, output: &mut Vec<Value>) {
        if top {
            self.stdout.push_str(&super::format::format_output(&produced));
        } else {
            output.extend(produced);
        }
    }

    fn block(&mut self, block: &Block, output: &mut Vec<Value>) -> Result<(), Flow> {
        self.run_statements(&block.statements, output, false)
    }

    fn statement(&mut self, statement: &Statement, output: &mut Vec<Value>) -> Result<(), Flow> {
        match statement {
            Statement::Assign { variable, value } => {
                let value = self.pipeline_value(value)?;
                self.set_variable(variable, value);
            }
            Statement::Pipeline(pipeline) => output.extend(self.pipeline(pipeline)?),
            Statement::If { branches, otherwise } => {
                for (condition, body) in branches {
                    if self.pipeline_value(condition)?.truthy() {
                        return self.block(body, output);
                    }
                }
                if let Some(body) = otherwise {
                    self.block(body, output)?;
                }
            }
            Statement::Foreach { variable, collection, body } => {
                for item in self.pipeline_value(collection)?.enumerate() {
                    if item == Value::Null {
                        continue;
                    }
                    self.set_variable(variable, item);
                    self.block(body, output)?;
                }
            }
            Statement::Try { body, handler } => {
                self.try_depth += 1;
                let mut produced = Vec::new();
                let result = self.block(body, &mut produced);
                self.try_depth -= 1;
                output.extend(produced);
                match result {
                    Err(Flow::Error { error, .. }) => {
                        self.set_variable("_", error.record());
                        self.last_success = true;
                        self.block(handler, output)?;
                    }
                    other => other?,
                }
            }
            Statement::Exit(value) => {
                let code = match value {
                    Some(expr) => self.expression(expr)?.as_int().unwrap_or(0),
                    None => 0,
                };
                return Err(Flow::Exit(code));
            }
            Statement::Throw(value) => {
                let message = match value {
                    Some(expr) => self.expression(expr)?.to_text(),
                    None => "ScriptHalted".to_owned(),
                };
                let error = PsError::runtime(message.clone(), "OperationStopped", &message);
                return Err(Flow::Error { error: Box::new(PsError { target: message, ..error }), script: true });
            }
        }
        Ok(())
    }

    /// A pipeline's value as an assignment sees it: an expression's value as is, a command's output collected.
    fn pipeline_value(&mut self, pipeline: &Pipeline) -> Result<Value, Flow> {
        if let [Element::Expr(expr)] = pipeline.elements.as_slice() {
            return self.expression(expr);
        }
        Ok(collect(self.pipeline(pipeline)?))
    }

    /// Runs a pipeline and returns its output items.
    ///
    /// # Errors
    /// Exit and errors.
    pub fn pipeline(&mut self, pipeline: &Pipeline) -> Result<Vec<Value>, Flow> {
        let mut items: Option<Vec<Value>> = None;
        for element in &pipeline.elements {
            items = Some(match element {
                Element::Expr(expr) => self.expression(expr)?.enumerate(),
                Element::Command(command) => self.command(command, items.take())?,
            });
        }
        Ok(items.unwrap_or_default())
    }

    fn command(&mut self, command: &Command, input: Option<Vec<Value>>) -> Result<Vec<Value>, Flow> {
        let mut arguments = Arguments::default();
        let mut iter = command.arguments.iter().peekable();
        while let Some(argument) = iter.next() {
            match argument {
                Argument::Parameter(name, Some(value)) => {
                    let value = self.expression(value)?;
                    arguments.named.push((name.to_ascii_lowercase(), value));
                }
                Argument::Parameter(name, None) => {
                    let lowered = name.to_ascii_lowercase();
                    let takes_value = !SWITCHES.contains(&lowered.as_str());
                    let value = match iter.peek() {
                        Some(Argument::Value(expr)) if takes_value => {
                            iter.next();
                            self.expression(expr)?
                        }
                        _ => Value::Bool(true),
                    };
                    arguments.named.push((lowered, value));
                }
                Argument::Value(expr) => {
                    let value = self.expression(expr)?;
                    arguments.positional.push(value);
                }
            }
        }
        let action = match arguments.get("erroraction").or_else(|| arguments.get("ea")) {
            Some(value) => Some(ErrorAction::parse(&value.to_text()).ok_or_else(|| Flow::Error {
                error: Box::new(PsError::runtime(
                    format!("Cannot bind parameter 'ErrorAction'. Cannot convert value \"{}\" to type \"System.Management.Automation.ActionPreference\".", value.to_text()),
                    "InvalidArgument",
                    "CannotConvertArgumentNoMessage",
                )),
                script: false,
            })?),
            None => None,
        };
        arguments.named.retain(|(name, _)| name != "erroraction" && name != "ea");
        super::cmdlets::invoke(self, &command.name, arguments, input.unwrap_or_default(), action)
    }

    /// Runs a script block with `$_` bound to `item`.
    ///
    /// # Errors
    /// Exit and errors from the block.
    pub fn run_block_with(&mut self, block: &Rc<Block>, item: Value) -> Result<Vec<Value>, Flow> {
        self.set_variable("_", item);
        let mut output = Vec::new();
        self.block(block, &mut output)?;
        Ok(output)
    }

    /// Evaluates an expression.
    ///
    /// # Errors
    /// Exit and errors.
    pub fn expression(&mut self, expr: &Expr) -> Result<Value, Flow> {
        Ok(match expr {
            Expr::Str(text) | Expr::Bare(text) => Value::Str(text.clone()),
            Expr::Int(number) => Value::Int(*number),
            Expr::Variable(name) => self.variable(name),
            Expr::Env(name) => self.host.session_env(name).map_or(Value::Null, Value::Str),
            Expr::ArraySub(statements) => {
                let mut output = Vec::new();
                self.run_statements(statements, &mut output, false)?;
                Value::Array(output.into_iter().flat_map(Value::enumerate).collect())
            }
            Expr::Sub(statements) => {
                if let [Statement::Pipeline(pipeline)] = statements.as_slice() {
                    return self.pipeline_value(pipeline);
                }
                let mut output = Vec::new();
                self.run_statements(statements, &mut output, false)?;
                collect(output)
            }
            Expr::List(items) => {
                let mut values = Vec::new();
                for item in items {
                    values.push(self.expression(item)?);
                }
                Value::Array(values)
            }
            Expr::Hash { ordered, custom, entries } => {
                let mut properties: Vec<(String, Value)> = Vec::new();
                for (key, value) in entries {
                    let value = self.pipeline_value(value)?;
                    properties.retain(|(existing, _)| !existing.eq_ignore_ascii_case(key));
                    properties.push((key.clone(), value));
                }
                let kind = if *custom {
                    ObjectKind::Custom
                } else if *ordered {
                    ObjectKind::Ordered
                } else {
                    ObjectKind::Hashtable
                };
                Value::Object(Box::new(Object { kind, properties }))
            }
            Expr::Static { type_name, member, arguments } => {
                let mut values = Vec::new();
                for argument in arguments.iter().flatten() {
                    values.push(self.expression(argument)?);
                }
                super::cmdlets::static_member(self, type_name, member, arguments.is_some(), values)?
            }
            Expr::Member(target, name) => self.expression(target)?.member(name),
            Expr::Method(target, name, arguments) => {
                let target = self.expression(target)?;
                let mut values = Vec::new();
                for argument in arguments {
                    values.push(self.expression(argument)?);
                }
                method(target, name, &values)?
            }
            Expr::Index(target, index) => {
                let target = self.expression(target)?;
                let index = self.expression(index)?;
                index_value(&target, &index)?
            }
            Expr::Not(inner) => Value::Bool(!self.expression(inner)?.truthy()),
            Expr::Negate(inner) => Value::Int(-self.expression(inner)?.as_int().unwrap_or(0)),
            Expr::Binary(op, left, right) => self.binary(*op, left, right)?,
            Expr::ScriptBlock(block) => Value::Block(Rc::clone(block)),
        })
    }

    fn binary(&mut self, op: BinaryOp, left: &Expr, right: &Expr) -> Result<Value, Flow> {
        let left = self.expression(left)?;
        match op {
            BinaryOp::And if !left.truthy() => return Ok(Value::Bool(false)),
            BinaryOp::Or if left.truthy() => return Ok(Value::Bool(true)),
            BinaryOp::And | BinaryOp::Or => return Ok(Value::Bool(self.expression(right)?.truthy())),
            _ => {}
        }
        let right = self.expression(right)?;
        let test = |item: &Value| compare(op, item, &right);
        Ok(match &left {
            Value::Array(items) => Value::Array(items.iter().filter(|item| test(item)).cloned().collect()),
            scalar => Value::Bool(test(scalar)),
        })
    }
}

/// Collects pipeline output the way an assignment does: nothing → `$null`, one item → the item, more → an array.
pub fn collect(mut items: Vec<Value>) -> Value {
    match items.len() {
        0 => Value::Null,
        1 => items.remove(0),
        _ => Value::Array(items),
    }
}

fn compare(op: BinaryOp, left: &Value, right: &Value) -> bool {
    if let Some(order) = super::provisioning::version_ordering(left, right) {
        match op {
            BinaryOp::Eq => return order.is_eq(),
            BinaryOp::Ne => return order.is_ne(),
            BinaryOp::Lt => return order.is_lt(),
            BinaryOp::Gt => return order.is_gt(),
            BinaryOp::Le => return order.is_le(),
            BinaryOp::Ge => return order.is_ge(),
            BinaryOp::Like | BinaryOp::NotLike | BinaryOp::And | BinaryOp::Or => {}
        }
    }
    let ordering = || match (left, right, left.as_int(), right.as_int()) {
        (Value::DateTime(a), Value::DateTime(b), _, _) => a.cmp(b),
        (_, _, Some(a), Some(b)) if !matches!(left, Value::Str(_)) => a.cmp(&b),
        _ => left.to_text().to_lowercase().cmp(&right.to_text().to_lowercase()),
    };
    match op {
        BinaryOp::Eq => left.equals(right),
        BinaryOp::Ne => !left.equals(right),
        BinaryOp::Lt => ordering().is_lt(),
        BinaryOp::Gt => ordering().is_gt(),
        BinaryOp::Le => ordering().is_le(),
        BinaryOp::Ge => ordering().is_ge(),
        BinaryOp::Like => wildcard(&right.to_text(), &left.to_text()),
        BinaryOp::NotLike => !wildcard(&right.to_text(), &left.to_text()),
        BinaryOp::And | BinaryOp::Or => false,
    }
}

/// `-like` matching with `*` and `?`, case-insensitively.
pub fn wildcard(pattern: &str, text: &str) -> bool {
    let pattern: Vec<char> = pattern.to_lowercase().chars().collect();
    let text: Vec<char> = text.to_lowercase().chars().collect();
    fn matches(pattern: &[char], text: &[char]) -> bool {
        match pattern.split_first() {
            None => text.is_empty(),
            Some(('*', rest)) => (0..=text.len()).any(|skip| matches(rest, &text[skip..])),
            Some(('?', rest)) => !text.is_empty() && matches(rest, &text[1..]),
            Some((c, rest)) => text.first() == Some(c) && matches(rest, &text[1..]),
        }
    }
    matches(&pattern, &text)
}

fn index_value(target: &Value, index: &Value) -> Result<Value, Flow> {
    let position = index.as_int();
    Ok(match target {
        Value::Null => {
            return Err(Flow::Error {
                error: Box::new(PsError::runtime("Cannot index into a null array.", "InvalidOperation", "NullArray")),
                script: false,
            });
        }
        Value::Array(items) => {
            let position = position.unwrap_or(0);
            let resolved = if position < 0 { items.len() as i64 + position } else { position };
            usize::try_from(resolved).ok().and_then(|i| items.get(i)).cloned().unwrap_or(Value::Null)
        }
        Value::Str(text) => {
            let chars: Vec<char> = text.chars().collect();
            usize::try_from(position.unwrap_or(0))
                .ok()
                .and_then(|i| chars.get(i))
                .map_or(Value::Null, |c| Value::Str(c.to_string()))
        }
        Value::Object(object) if matches!(object.kind, ObjectKind::Hashtable | ObjectKind::Ordered) => {
            object.get(&index.to_text()).cloned().unwrap_or(Value::Null)
        }
        other if position == Some(0) => other.clone(),
        _ => Value::Null,
    })
}

fn method(target: Value, name: &str, arguments: &[Value]) -> Result<Value, Flow> {
    let text = |index: usize| arguments.get(index).map(Value::to_text).unwrap_or_default();
    if target == Value::Null {
        return Err(Flow::Error {
            error: Box::new(PsError::runtime(
                "You cannot call a method on a null-valued expression.",
                "InvalidOperation",
                "InvokeMethodOnNull",
            )),
            script: false,
        });
    }
    let lowered = name.to_ascii_lowercase();
    if let (Value::Object(object), "setaccessruleprotection") = (&target, lowered.as_str()) {
        let mut object = object.clone();
        let protect = arguments.first().is_some_and(Value::truthy);
        let keep = arguments.get(1).is_some_and(Value::truthy);
        if protect && let Some(Value::Array(entries)) = object.get("Access").cloned() {
            // Protection drops the inherited entries, or (keep) makes them explicit.
            let kept: Vec<Value> = entries
                .into_iter()
                .filter_map(|entry| match entry.to_text().strip_suffix("(I)") {
                    Some(explicit) => keep.then(|| Value::Str(explicit.to_owned())),
                    None => Some(entry),
                })
                .collect();
            object.properties.retain(|(key, _)| key != "Access" && key != "AreAccessRulesProtected");
            object.properties.push(("Access".to_owned(), Value::Array(kept)));
            object.properties.push(("AreAccessRulesProtected".to_owned(), Value::Bool(true)));
        }
        return Ok(Value::Object(object));
    }
    let subject = target.to_text();
    Ok(match lowered.as_str() {
        "tostring" => Value::Str(subject),
        "trim" => Value::Str(subject.trim().to_owned()),
        "tolower" => Value::Str(subject.to_lowercase()),
        "toupper" => Value::Str(subject.to_uppercase()),
        "contains" => Value::Bool(subject.contains(&text(0))),
        "startswith" => Value::Bool(subject.starts_with(&text(0))),
        "endswith" => Value::Bool(subject.ends_with(&text(0))),
        "replace" => Value::Str(subject.replace(&text(0), &text(1))),
        "split" => Value::Array(subject.split(&text(0)).map(|part| Value::Str(part.to_owned())).collect()),
        _ => {
            let type_name = match &target {
                Value::Object(object) => match &object.kind {
                    ObjectKind::Typed(type_name) => type_name.clone(),
                    ObjectKind::ErrorRecord => "System.Management.Automation.ErrorRecord".to_owned(),
                    _ => "System.Management.Automation.PSCustomObject".to_owned(),
                },
                Value::Str(_) => "System.String".to_owned(),
                Value::Int(_) => "System.Int32".to_owned(),
                Value::DateTime(_) => "System.DateTime".to_owned(),
                _ => "System.Object".to_owned(),
            };
            return Err(Flow::Error {
                error: Box::new(PsError::runtime(
                    format!("Method invocation failed because [{type_name}] does not contain a method named '{name}'."),
                    "InvalidOperation",
                    "MethodNotFound",
                )),
                script: false,
            });
        }
    })
}
