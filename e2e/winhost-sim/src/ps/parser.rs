//! A recursive-descent parser from script text to the [`super::ast`] tree. PowerShell's two parsing modes are
//! kept: a statement starting with a name is a command (arguments are parameters, barewords and expressions),
//! anything else is an expression. Constructs outside the subset are parse errors, reported like PowerShell's
//! ParseException.

use std::rc::Rc;

use super::ast::{Argument, BinaryOp, Block, Command, Element, Expr, Pipeline, Statement};

/// Why a script does not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("At line:{line} char:{column}\r\n{message}")]
pub struct ParseError {
    /// What is wrong.
    pub message: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub column: usize,
}

/// Parses a whole script.
///
/// # Errors
/// [`ParseError`] for text outside the subset.
pub fn parse(script: &str) -> Result<Vec<Statement>, ParseError> {
    let mut parser = Parser { chars: script.chars().collect(), position: 0 };
    let statements = parser.statements(None)?;
    if parser.position < parser.chars.len() {
        return Err(parser.error("Unexpected token in expression or statement."));
    }
    Ok(statements)
}

struct Parser {
    chars: Vec<char>,
    position: usize,
}

const KEYWORDS: [&str; 9] = ["if", "elseif", "else", "foreach", "try", "catch", "finally", "exit", "throw"];

fn is_name_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

impl Parser {
    fn error(&self, message: &str) -> ParseError {
        let before: String = self.chars[..self.position.min(self.chars.len())].iter().collect();
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().map_or(0, |tail| tail.chars().count()) + 1;
        ParseError { message: message.to_owned(), line, column }
    }

    fn peek(&self) -> Option<char> {
        self.chars.get(self.position).copied()
    }

    fn peek_at(&self, offset: usize) -> Option<char> {
        self.chars.get(self.position + offset).copied()
    }

    fn eat(&mut self, expected: char) -> bool {
        if self.peek() == Some(expected) {
            self.position += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, expected: char) -> Result<(), ParseError> {
        if self.eat(expected) { Ok(()) } else { Err(self.error(&format!("Missing '{expected}'."))) }
    }

    /// Skips spaces, tabs, comments and `\r` (and newlines when `newlines`).
    fn skip(&mut self, newlines: bool) {
        while let Some(c) = self.peek() {
            match c {
                ' ' | '\t' | '\r' => self.position += 1,
                '\n' if newlines => self.position += 1,
                '#' => {
                    while self.peek().is_some_and(|c| c != '\n') {
                        self.position += 1;
                    }
                }
                _ => break,
            }
        }
    }

    /// The identifier at the cursor (not consumed).
    fn word_at(&self, offset: usize) -> String {
        self.chars[self.position + offset..].iter().take_while(|c| is_name_char(**c) || **c == '-').collect()
    }

    fn keyword(&mut self, keyword: &str) -> bool {
        let word: String = self.chars[self.position..].iter().take_while(|c| is_name_char(**c)).collect();
        if word.eq_ignore_ascii_case(keyword) {
            self.position += word.chars().count();
            true
        } else {
            false
        }
    }

    fn statements(&mut self, terminator: Option<char>) -> Result<Vec<Statement>, ParseError> {
        let mut statements = Vec::new();
        loop {
            self.skip(true);
            while self.eat(';') {
                self.skip(true);
            }
            match self.peek() {
                None => break,
                Some(c) if Some(c) == terminator => break,
                Some(_) => statements.push(self.statement()?),
            }
            self.skip(false);
            match self.peek() {
                None | Some('\n' | ';') => {}
                Some(c) if Some(c) == terminator => {}
                Some(_) => return Err(self.error("Unexpected token in expression or statement.")),
            }
        }
        Ok(statements)
    }

    fn block(&mut self) -> Result<Rc<Block>, ParseError> {
        self.skip(true);
        self.expect('{')?;
        let start = self.position;
        let statements = self.statements(Some('}'))?;
        let source: String = self.chars[start..self.position].iter().collect();
        self.expect('}')?;
        Ok(Rc::new(Block { statements, source }))
    }

    fn statement(&mut self) -> Result<Statement, ParseError> {
        let word = self.word_at(0).to_ascii_lowercase();
        match word.as_str() {
            "if" => {
                self.position += 2;
                return self.if_statement();
            }
            "foreach" => {
                self.position += 7;
                self.skip(false);
                self.expect('(')?;
                self.skip(false);
                self.expect('$')?;
                let variable: String = self.chars[self.position..].iter().take_while(|c| is_name_char(**c)).collect();
                self.position += variable.chars().count();
                self.skip(false);
                if !self.keyword("in") {
                    return Err(self.error("Missing 'in' after variable in foreach loop."));
                }
                let collection = self.pipeline()?;
                self.skip(true);
                self.expect(')')?;
                let body = self.block()?;
                return Ok(Statement::Foreach { variable, collection, body });
            }
            "try" => {
                self.position += 3;
                let body = self.block()?;
                self.skip(true);
                if !self.keyword("catch") {
                    return Err(self.error("The Try statement is missing its Catch or Finally block."));
                }
                self.skip(false);
                if self.peek() == Some('[') {
                    while self.peek().is_some_and(|c| c != ']') {
                        self.position += 1;
                    }
                    self.expect(']')?;
                }
                let handler = self.block()?;
                return Ok(Statement::Try { body, handler });
            }
            "exit" | "throw" => {
                self.position += word.len();
                self.skip(false);
                let value = match self.peek() {
                    None | Some('\n' | ';' | '}') => None,
                    Some(_) => Some(self.expression()?),
                };
                return Ok(if word == "exit" { Statement::Exit(value) } else { Statement::Throw(value) });
            }
            _ => {}
        }
        if self.peek() == Some('$') {
            let name: String = self.chars[self.position + 1..].iter().take_while(|c| is_name_char(**c)).collect();
            let save = self.position;
            self.position += 1 + name.chars().count();
            self.skip(false);
            if !name.is_empty() && self.peek() == Some('=') && self.peek_at(1) != Some('=') {
                self.position += 1;
                self.skip(true);
                let value = self.pipeline()?;
                return Ok(Statement::Assign { variable: name, value });
            }
            self.position = save;
        }
        Ok(Statement::Pipeline(self.pipeline()?))
    }

    fn if_statement(&mut self) -> Result<Statement, ParseError> {
        let mut branches = Vec::new();
        let mut otherwise = None;
        loop {
            self.skip(false);
            self.expect('(')?;
            self.skip(true);
            let condition = self.pipeline()?;
            self.skip(true);
            self.expect(')')?;
            branches.push((condition, self.block()?));
            let save = self.position;
            self.skip(true);
            if self.keyword("elseif") {
                continue;
            }
            if self.keyword("else") {
                otherwise = Some(self.block()?);
            } else {
                self.position = save;
            }
            break;
        }
        Ok(Statement::If { branches, otherwise })
    }

    fn pipeline(&mut self) -> Result<Pipeline, ParseError> {
        let mut elements = vec![self.element(true)?];
        loop {
            self.skip(false);
            if self.peek() == Some('|') && self.peek_at(1) != Some('|') {
                self.position += 1;
                self.skip(true);
                elements.push(self.element(false)?);
            } else {
                break;
            }
        }
        Ok(Pipeline { elements })
    }

    fn starts_command(&self) -> bool {
        match self.peek() {
            Some(c) if c.is_alphabetic() => {
                let word = self.word_at(0).to_ascii_lowercase();
                !KEYWORDS.contains(&word.as_str())
            }
            Some('?' | '%') => true,
            _ => false,
        }
    }

    fn element(&mut self, first: bool) -> Result<Element, ParseError> {
        self.skip(false);
        if self.peek() == Some('&') && self.peek_at(1) != Some('&') {
            return Ok(Element::Command(self.call_operator()?));
        }
        if self.starts_command() {
            return Ok(Element::Command(self.command()?));
        }
        if !first {
            return Err(self.error("Expressions are only allowed as the first element of a pipeline."));
        }
        Ok(Element::Expr(self.expression()?))
    }

    fn command(&mut self) -> Result<Command, ParseError> {
        let name = self.bare_token();
        let arguments = self.command_arguments()?;
        Ok(Command { name, arguments })
    }

    /// `& 'C:\path\program.exe' arguments`: the call operator, in the subset with a single-quoted program path
    /// (a path with spaces cannot be a bare command name).
    fn call_operator(&mut self) -> Result<Command, ParseError> {
        self.position += 1;
        self.skip(false);
        if self.peek() != Some('\'') {
            return Err(self.error("The call operator takes a single-quoted program path in the subset."));
        }
        let name = self.quoted('\'')?;
        let arguments = self.command_arguments()?;
        Ok(Command { name, arguments })
    }

    /// A command's arguments, up to the end of its pipeline element.
    fn command_arguments(&mut self) -> Result<Vec<Argument>, ParseError> {
        let mut arguments = Vec::new();
        loop {
            self.skip(false);
            match self.peek() {
                None | Some('\n' | ';' | '|' | ')' | '}') => break,
                // The stop-parsing token: the rest of the line up to a newline or `|` goes to the program as it is
                // written (windows-commands.md §2), as one argument.
                Some('-')
                    if self.peek_at(1) == Some('-')
                        && self.peek_at(2) == Some('%')
                        && self.peek_at(3).is_none_or(char::is_whitespace) =>
                {
                    self.position += 3;
                    self.skip(false);
                    let verbatim: String =
                        self.chars[self.position..].iter().take_while(|c| !"\r\n|".contains(**c)).collect();
                    self.position += verbatim.chars().count();
                    arguments.push(Argument::Value(Expr::Str(verbatim.trim_end().to_owned())));
                    break;
                }
                Some('-') if self.peek_at(1).is_some_and(char::is_alphabetic) => {
                    self.position += 1;
                    let parameter: String =
                        self.chars[self.position..].iter().take_while(|c| is_name_char(**c)).collect();
                    self.position += parameter.chars().count();
                    let value = if self.eat(':') { Some(self.argument_value()?) } else { None };
                    arguments.push(Argument::Parameter(parameter, value));
                }
                Some(_) => {
                    let value = self.argument_value()?;
                    arguments.push(Argument::Value(value));
                }
            }
        }
        Ok(arguments)
    }

    /// A run of characters up to whitespace or a command-mode delimiter.
    fn bare_token(&mut self) -> String {
        let token: String =
            self.chars[self.position..].iter().take_while(|c| !" \t\r\n;|(){},".contains(**c)).collect();
        self.position += token.chars().count();
        token
    }

    fn argument_value(&mut self) -> Result<Expr, ParseError> {
        let first = self.single_argument()?;
        if self.peek() != Some(',') {
            return Ok(first);
        }
        let mut items = vec![first];
        while self.eat(',') {
            self.skip(true);
            items.push(self.single_argument()?);
        }
        Ok(Expr::List(items))
    }

    fn single_argument(&mut self) -> Result<Expr, ParseError> {
        match self.peek() {
            Some('\'' | '"' | '$' | '(' | '@' | '{' | '[') => self.postfix(),
            _ => {
                let token = self.bare_token();
                if token.is_empty() {
                    return Err(self.error("Missing argument."));
                }
                Ok(token.parse::<i64>().map_or(Expr::Bare(token), Expr::Int))
            }
        }
    }

    fn expression(&mut self) -> Result<Expr, ParseError> {
        let mut left = self.comparison()?;
        loop {
            let save = self.position;
            self.skip(false);
            let op = if self.operator("and") {
                BinaryOp::And
            } else if self.operator("or") {
                BinaryOp::Or
            } else {
                self.position = save;
                return Ok(left);
            };
            self.skip(true);
            let right = self.comparison()?;
            left = Expr::Binary(op, Box::new(left), Box::new(right));
        }
    }

    /// `-name` as an operator (followed by a non-name character).
    fn operator(&mut self, name: &str) -> bool {
        if self.peek() != Some('-') {
            return false;
        }
        let word: String = self.chars[self.position + 1..].iter().take_while(|c| is_name_char(**c)).collect();
        if word.eq_ignore_ascii_case(name) {
            self.position += 1 + word.chars().count();
            true
        } else {
            false
        }
    }

    fn comparison(&mut self) -> Result<Expr, ParseError> {
        let mut left = self.list()?;
        loop {
            let save = self.position;
            self.skip(false);
            let operators = [
                ("eq", BinaryOp::Eq),
                ("ne", BinaryOp::Ne),
                ("lt", BinaryOp::Lt),
                ("gt", BinaryOp::Gt),
                ("le", BinaryOp::Le),
                ("ge", BinaryOp::Ge),
                ("like", BinaryOp::Like),
                ("notlike", BinaryOp::NotLike),
            ];
            let Some(op) = operators.iter().find_map(|(name, op)| self.operator(name).then_some(*op)) else {
                self.position = save;
                return Ok(left);
            };
            self.skip(true);
            let right = self.list()?;
            left = Expr::Binary(op, Box::new(left), Box::new(right));
        }
    }

    fn list(&mut self) -> Result<Expr, ParseError> {
        let first = self.unary()?;
        let save = self.position;
        self.skip(false);
        if self.peek() != Some(',') {
            self.position = save;
            return Ok(first);
        }
        let mut items = vec![first];
        while self.eat(',') {
            self.skip(true);
            items.push(self.unary()?);
            let save = self.position;
            self.skip(false);
            if self.peek() != Some(',') {
                self.position = save;
                break;
            }
        }
        Ok(Expr::List(items))
    }

    fn unary(&mut self) -> Result<Expr, ParseError> {
        self.skip(false);
        if self.eat('!') {
            return Ok(Expr::Not(Box::new(self.unary()?)));
        }
        if self.operator("not") {
            self.skip(false);
            return Ok(Expr::Not(Box::new(self.unary()?)));
        }
        if self.peek() == Some('-') && self.peek_at(1).is_some_and(|c| c.is_ascii_digit()) {
            self.position += 1;
            return Ok(Expr::Negate(Box::new(self.postfix()?)));
        }
        self.postfix()
    }

    fn postfix(&mut self) -> Result<Expr, ParseError> {
        let mut expr = self.primary()?;
        loop {
            if self.peek() == Some('.') && self.peek_at(1).is_some_and(is_name_char) {
                self.position += 1;
                let name: String = self.chars[self.position..].iter().take_while(|c| is_name_char(**c)).collect();
                self.position += name.chars().count();
                if self.eat('(') {
                    let arguments = self.call_arguments()?;
                    expr = Expr::Method(Box::new(expr), name, arguments);
                } else {
                    expr = Expr::Member(Box::new(expr), name);
                }
            } else if self.peek() == Some('[') {
                self.position += 1;
                self.skip(true);
                let index = self.expression()?;
                self.skip(true);
                self.expect(']')?;
                expr = Expr::Index(Box::new(expr), Box::new(index));
            } else {
                return Ok(expr);
            }
        }
    }

    /// Arguments after `(` up to `)`.
    fn call_arguments(&mut self) -> Result<Vec<Expr>, ParseError> {
        let mut arguments = Vec::new();
        self.skip(true);
        if self.eat(')') {
            return Ok(arguments);
        }
        loop {
            self.skip(true);
            arguments.push(self.comparison_no_list()?);
            self.skip(true);
            if self.eat(')') {
                return Ok(arguments);
            }
            self.expect(',')?;
        }
    }

    /// An expression without the comma operator (method arguments).
    fn comparison_no_list(&mut self) -> Result<Expr, ParseError> {
        let left = self.unary()?;
        let save = self.position;
        self.skip(false);
        for (name, op) in [("eq", BinaryOp::Eq), ("ne", BinaryOp::Ne)] {
            if self.operator(name) {
                self.skip(true);
                let right = self.unary()?;
                return Ok(Expr::Binary(op, Box::new(left), Box::new(right)));
            }
        }
        self.position = save;
        Ok(left)
    }

    fn quoted(&mut self, quote: char) -> Result<String, ParseError> {
        self.position += 1;
        let mut text = String::new();
        loop {
            match self.peek() {
                None => return Err(self.error("The string is missing the terminator.")),
                Some(c) if c == quote => {
                    self.position += 1;
                    if self.peek() == Some(quote) {
                        text.push(quote);
                        self.position += 1;
                    } else {
                        return Ok(text);
                    }
                }
                Some(c) => {
                    if quote == '"' && (c == '$' || c == '`') {
                        return Err(self
                            .error("Variable expansion and escapes in double-quoted strings are outside the subset."));
                    }
                    text.push(c);
                    self.position += 1;
                }
            }
        }
    }

    fn primary(&mut self) -> Result<Expr, ParseError> {
        match self.peek() {
            Some('\'') => Ok(Expr::Str(self.quoted('\'')?)),
            Some('"') => Ok(Expr::Str(self.quoted('"')?)),
            Some(c) if c.is_ascii_digit() => {
                let digits: String = self.chars[self.position..].iter().take_while(|c| c.is_ascii_digit()).collect();
                self.position += digits.len();
                digits.parse().map(Expr::Int).map_err(|_| self.error("The number is too large."))
            }
            Some('$') => {
                self.position += 1;
                if self.eat('(') {
                    let statements = self.statements(Some(')'))?;
                    self.expect(')')?;
                    return Ok(Expr::Sub(statements));
                }
                let name: String = self.chars[self.position..].iter().take_while(|c| is_name_char(**c)).collect();
                self.position += name.chars().count();
                if name.eq_ignore_ascii_case("env") && self.eat(':') {
                    let variable: String =
                        self.chars[self.position..].iter().take_while(|c| is_name_char(**c)).collect();
                    self.position += variable.chars().count();
                    return Ok(Expr::Env(variable));
                }
                if name.is_empty() {
                    return Err(self.error("Invalid variable reference."));
                }
                Ok(Expr::Variable(name))
            }
            Some('(') => {
                self.position += 1;
                self.skip(true);
                let statement = self.statement()?;
                self.skip(true);
                self.expect(')')?;
                Ok(Expr::Sub(vec![statement]))
            }
            Some('@') => {
                self.position += 1;
                if self.eat('(') {
                    let statements = self.statements(Some(')'))?;
                    self.expect(')')?;
                    Ok(Expr::ArraySub(statements))
                } else if self.peek() == Some('{') {
                    self.hash(false, false)
                } else {
                    Err(self.error("Unrecognized token in source text."))
                }
            }
            Some('{') => Ok(Expr::ScriptBlock(self.block()?)),
            Some('[') => self.type_expression(),
            _ => Err(self.error("You must provide a value expression following this operator.")),
        }
    }

    fn hash(&mut self, ordered: bool, custom: bool) -> Result<Expr, ParseError> {
        self.expect('{')?;
        let mut entries = Vec::new();
        loop {
            self.skip(true);
            while self.eat(';') {
                self.skip(true);
            }
            if self.eat('}') {
                return Ok(Expr::Hash { ordered, custom, entries });
            }
            let key = match self.peek() {
                Some(quote @ ('\'' | '"')) => self.quoted(quote)?,
                _ => {
                    let key: String = self.chars[self.position..].iter().take_while(|c| is_name_char(**c)).collect();
                    if key.is_empty() {
                        return Err(self.error("Missing key before '=' in hash literal."));
                    }
                    self.position += key.chars().count();
                    key
                }
            };
            self.skip(false);
            self.expect('=')?;
            self.skip(true);
            let value = self.pipeline()?;
            entries.push((key, value));
            self.skip(false);
            match self.peek() {
                Some(';' | '\n' | '}') => {}
                _ => return Err(self.error("Missing statement after '=' in hash literal.")),
            }
        }
    }

    /// `[Type]::Member...`, `[ordered]@{}`, `[pscustomobject]@{}`.
    fn type_expression(&mut self) -> Result<Expr, ParseError> {
        self.expect('[')?;
        let type_name: String = self.chars[self.position..].iter().take_while(|c| **c != ']').collect();
        self.position += type_name.chars().count();
        self.expect(']')?;
        if self.peek() == Some(':') && self.peek_at(1) == Some(':') {
            self.position += 2;
            let member: String = self.chars[self.position..].iter().take_while(|c| is_name_char(**c)).collect();
            self.position += member.chars().count();
            let arguments = if self.eat('(') { Some(self.call_arguments()?) } else { None };
            return Ok(Expr::Static { type_name, member, arguments });
        }
        let lowered = type_name.to_ascii_lowercase();
        if (lowered == "ordered" || lowered == "pscustomobject") && self.eat('@') {
            return self.hash(lowered == "ordered", lowered == "pscustomobject");
        }
        Err(self.error(&format!("Unable to find type [{type_name}].")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(script: &str) -> Statement {
        let mut statements = parse(script).unwrap();
        assert_eq!(statements.len(), 1, "{statements:?}");
        statements.remove(0)
    }

    #[test]
    fn commands_take_parameters_barewords_and_expressions() {
        let Statement::Pipeline(pipeline) = one("New-Item -ItemType Directory -Force -Path 'C:\\k' | Out-Null") else {
            panic!()
        };
        assert_eq!(pipeline.elements.len(), 2);
        let Element::Command(command) = &pipeline.elements[0] else { panic!() };
        assert_eq!(command.name, "New-Item");
        assert_eq!(
            command.arguments,
            vec![
                Argument::Parameter("ItemType".into(), None),
                Argument::Value(Expr::Bare("Directory".into())),
                Argument::Parameter("Force".into(), None),
                Argument::Parameter("Path".into(), None),
                Argument::Value(Expr::Str(r"C:\k".into())),
            ]
        );
        let Statement::Pipeline(pipeline) =
            one("Get-NetRoute -DestinationPrefix 0.0.0.0/0 -ErrorAction:SilentlyContinue")
        else {
            panic!()
        };
        let Element::Command(command) = &pipeline.elements[0] else { panic!() };
        assert_eq!(command.arguments[1], Argument::Value(Expr::Bare("0.0.0.0/0".into())));
        assert_eq!(
            command.arguments[2],
            Argument::Parameter("ErrorAction".into(), Some(Expr::Bare("SilentlyContinue".into())))
        );
    }

    #[test]
    fn the_stop_parsing_token_passes_the_rest_of_the_line_as_written() {
        let statements =
            parse("cmd.exe /c --% sc.exe create a binPath= \"C:\\a.exe --x\" && echo $x; y\nexit 0").unwrap();
        assert!(matches!(statements[1], Statement::Exit(_)), "the next line is a statement again");
        let Statement::Pipeline(pipeline) = &statements[0] else { panic!("not a pipeline") };
        let Element::Command(command) = &pipeline.elements[0] else { panic!("not a command") };
        assert_eq!(
            command.arguments,
            [
                Argument::Value(Expr::Bare("/c".into())),
                Argument::Value(Expr::Str("sc.exe create a binPath= \"C:\\a.exe --x\" && echo $x; y".into())),
            ]
        );
    }

    #[test]
    fn the_call_operator_runs_a_quoted_program_path_with_arguments() {
        let Statement::Assign { value, .. } =
            one(r"$v = [System.Version]::Parse((& 'C:\Program Files\A\a.exe' version --x))")
        else {
            panic!("not an assignment")
        };
        let Element::Expr(Expr::Static { arguments: Some(arguments), .. }) = &value.elements[0] else {
            panic!("not a static call: {value:?}")
        };
        let Expr::Sub(statements) = &arguments[0] else { panic!("not a subexpression: {arguments:?}") };
        let Statement::Pipeline(inner) = &statements[0] else { panic!("not a pipeline: {statements:?}") };
        let Element::Command(command) = &inner.elements[0] else { panic!("not a command: {inner:?}") };
        assert_eq!(command.name, r"C:\Program Files\A\a.exe");
        assert_eq!(
            command.arguments,
            [Argument::Value(Expr::Bare("version".into())), Argument::Value(Expr::Bare("--x".into()))]
        );
        assert!(parse("& $program").is_err(), "only a quoted path is in the subset");
    }

    #[test]
    fn expressions_statements_and_errors() {
        let statement = one("$x = $null -ne $s0 -and -not $y");
        let Statement::Assign { variable, value } = statement else { panic!() };
        assert_eq!(variable, "x");
        assert!(matches!(&value.elements[0], Element::Expr(Expr::Binary(BinaryOp::And, _, _))));
        assert!(matches!(one("$c[0].State.ToString()"), Statement::Pipeline(_)));
        assert!(
            matches!(one("if ($a) { 1 } elseif ($b) { 2 }\nelse { 3 }"), Statement::If { branches, otherwise: Some(_) } if branches.len() == 2)
        );
        assert!(matches!(one("foreach ($n in @('a', 'b')) { $n }"), Statement::Foreach { .. }));
        assert!(matches!(one("try { throw 'x' } catch { $_ }"), Statement::Try { .. }));
        assert!(matches!(one("exit $LASTEXITCODE"), Statement::Exit(Some(Expr::Variable(_)))));
        assert!(matches!(
            one("[ordered]@{ a = 1; 'b c' = @(1, 2)\n d = [Environment]::GetEnvironmentVariable('X', 'Machine') }"),
            Statement::Pipeline(_)
        ));
        assert_eq!(
            parse("'it''s'").unwrap(),
            vec![Statement::Pipeline(Pipeline { elements: vec![Element::Expr(Expr::Str("it's".into()))] })]
        );
        assert!(parse("\"a $b\"").is_err());
        assert!(parse("[Foo]@{}").is_err());
        assert!(parse("1 +").is_err());
        let error = parse("$a = 1\n$b = @(").unwrap_err();
        assert_eq!(error.line, 2);
    }
}
