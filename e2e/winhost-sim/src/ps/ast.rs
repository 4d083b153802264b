//! The syntax tree of the closed PowerShell subset (windows-commands.md §8).

use std::rc::Rc;

/// A sequence of statements with its source text (a script block's `ToString()`).
#[derive(Debug, PartialEq)]
pub struct Block {
    /// The statements.
    pub statements: Vec<Statement>,
    /// The source text between the braces.
    pub source: String,
}

/// A statement.
#[derive(Debug, PartialEq)]
pub enum Statement {
    /// `$name = <pipeline>`.
    Assign {
        /// Variable name (without `$`).
        variable: String,
        /// The value.
        value: Pipeline,
    },
    /// A pipeline whose output goes to the enclosing output.
    Pipeline(Pipeline),
    /// `if (...) { } elseif (...) { } else { }`.
    If {
        /// Conditions and their blocks.
        branches: Vec<(Pipeline, Rc<Block>)>,
        /// The `else` block.
        otherwise: Option<Rc<Block>>,
    },
    /// `foreach ($x in <pipeline>) { }`.
    Foreach {
        /// Loop variable.
        variable: String,
        /// The collection.
        collection: Pipeline,
        /// The body.
        body: Rc<Block>,
    },
    /// `try { } catch { }`.
    Try {
        /// Protected block.
        body: Rc<Block>,
        /// Handler (`$_` is the error).
        handler: Rc<Block>,
    },
    /// `exit [expr]`.
    Exit(Option<Expr>),
    /// `throw [expr]`.
    Throw(Option<Expr>),
}

/// `element | element | ...`.
#[derive(Debug, PartialEq)]
pub struct Pipeline {
    /// The elements.
    pub elements: Vec<Element>,
}

/// One pipeline element.
#[derive(Debug, PartialEq)]
pub enum Element {
    /// An expression (only first in a pipeline).
    Expr(Expr),
    /// A cmdlet or native program call.
    Command(Command),
}

/// `Name -Param value positional ...`.
#[derive(Debug, PartialEq)]
pub struct Command {
    /// The command name as written.
    pub name: String,
    /// Its arguments.
    pub arguments: Vec<Argument>,
}

/// One command argument.
#[derive(Debug, PartialEq)]
pub enum Argument {
    /// `-Name` (with `-Name:value` the value).
    Parameter(String, Option<Expr>),
    /// A value.
    Value(Expr),
}

/// Binary operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinaryOp {
    /// `-eq`
    Eq,
    /// `-ne`
    Ne,
    /// `-lt`
    Lt,
    /// `-gt`
    Gt,
    /// `-le`
    Le,
    /// `-ge`
    Ge,
    /// `-like`
    Like,
    /// `-notlike`
    NotLike,
    /// `-and`
    And,
    /// `-or`
    Or,
}

/// An expression.
#[derive(Debug, PartialEq)]
pub enum Expr {
    /// A string literal.
    Str(String),
    /// An integer literal.
    Int(i64),
    /// A bareword command argument.
    Bare(String),
    /// `$name` (`true`, `false`, `null` are variables too).
    Variable(String),
    /// `$env:NAME`.
    Env(String),
    /// `@( statements )`.
    ArraySub(Vec<Statement>),
    /// `( pipeline )` or `$( statements )`.
    Sub(Vec<Statement>),
    /// `a, b, c`.
    List(Vec<Expr>),
    /// `@{ k = v; ... }`, possibly cast.
    Hash {
        /// `[ordered]`.
        ordered: bool,
        /// `[pscustomobject]`.
        custom: bool,
        /// Keys and values.
        entries: Vec<(String, Pipeline)>,
    },
    /// `[Type]::Member` or `[Type]::Method(args)`.
    Static {
        /// The type name.
        type_name: String,
        /// The member.
        member: String,
        /// Arguments when called.
        arguments: Option<Vec<Expr>>,
    },
    /// `expr.Name`.
    Member(Box<Expr>, String),
    /// `expr.Method(args)`.
    Method(Box<Expr>, String, Vec<Expr>),
    /// `expr[index]`.
    Index(Box<Expr>, Box<Expr>),
    /// `-not expr` / `!expr`.
    Not(Box<Expr>),
    /// `-expr` on a number.
    Negate(Box<Expr>),
    /// A binary operation.
    Binary(BinaryOp, Box<Expr>, Box<Expr>),
    /// `{ ... }`.
    ScriptBlock(Rc<Block>),
}
