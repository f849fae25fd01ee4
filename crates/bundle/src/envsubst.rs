//! The `${...}` language of drone/envsubst (v2, the version both of the reference's generations pin),
//! with its exact semantics: what it parses, what each operator gives, and what it refuses. Pure.
//!
//! Hand-written, because the meaning is the Go library's and no Rust crate has it: bash-like operators
//! that differ from bash (`${VAR:?word}`, `${VAR:+word}` and `${VAR=word}` all give `word` when `VAR`
//! is empty, like `${VAR:-word}`; `${VAR-word}` is a syntax error), a scanner whose escapes depend on
//! where it is (`$$` is one `$` in text and in a replacement's arguments, `\/` and `\\` only in the
//! latter), and glob matching with its own rule for a trailing `*`. The parser follows the library's
//! scanner step by step (a token ends where the next `${` begins; an escape removes its first character
//! and keeps the second as text), so that a provider's manifests render here as under the reference.
//!
//! | expression | value |
//! |---|---|
//! | `${VAR}` | the value (empty when unset) |
//! | `${VAR:=w}` `${VAR:-w}` `${VAR:?w}` `${VAR:+w}` `${VAR=w}` | the value, or `w` when it is empty |
//! | `${#VAR}` | its length in bytes |
//! | `${VAR^}` `${VAR^^}` `${VAR,}` `${VAR,,}` | first character / all upper case; lower case |
//! | `${VAR:pos}` `${VAR:pos:len}` | the bytes from `pos` (negative: from the end), `len` of them |
//! | `${VAR#glob}` `${VAR##glob}` `${VAR%glob}` `${VAR%%glob}` | shortest / longest matching prefix, suffix removed |
//! | `${VAR/old/new}` `${VAR//old/new}` `${VAR/#old/new}` `${VAR/%old/new}` | first, every, prefix, suffix occurrence replaced |
//!
//! A word (`w`, `glob`, `old`, `new`, `pos`) may hold other `${...}` expressions, evaluated first.
//! Where the Go library would panic (a negative `len` reaching before `pos`), this is an error. One
//! difference remains: a byte slice that ends inside a multi-byte character (`${V:1:2}` of `é*x`) gives
//! U+FFFD where Go keeps the broken bytes. Checked against the library itself on 50,000 random
//! expressions (`envsubst_tests.rs` keeps its own test vectors).

/// A `${...}` expression the library refuses (its own message), or one it would panic on.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
#[error("line {line}: {reason} in `{expression}`")]
pub struct SubstitutionError {
    /// The 1-based line of the `${` of the top-level expression.
    pub line: usize,
    /// The expression's first characters.
    pub expression: String,
    pub reason: String,
}

/// The library's parse errors.
const BAD_SUBSTITUTION: &str = "bad substitution";
const MISSING_CLOSING_BRACE: &str = "missing closing brace";
const VARIABLE_NAME: &str = "unable to parse variable name";
const FUNCTION_ARGUMENT: &str = "unable to parse substitution within function";
const DEFAULT_FUNCTION: &str = "unable to parse default function";

/// A parsed text: text runs and expressions, each top-level one with its line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Template(Vec<(usize, Node)>);

#[derive(Clone, Debug, PartialEq, Eq)]
enum Node {
    Text(String),
    /// `${<param><operator><args>}`; a plain `${VAR}` has no operator.
    Expression {
        param: String,
        operator: String,
        args: Vec<Node>,
    },
}

impl Template {
    pub fn parse(text: &str) -> Result<Template, SubstitutionError> {
        Scanner::new(text).template()
    }

    /// Every variable an expression reads, nested ones included, in order of appearance.
    pub fn variables(&self) -> Vec<&str> {
        let mut out = Vec::new();
        collect(self.0.iter().map(|(_, node)| node), &mut out);
        out
    }

    /// The text with every expression replaced; `value` gives a variable's value (`None`: unset,
    /// which reads as empty). `Err` only where the library would panic.
    pub fn expand(
        &self,
        value: &dyn Fn(&str) -> Option<String>,
    ) -> Result<String, SubstitutionError> {
        let mut out = String::new();
        for (line, node) in &self.0 {
            let text = evaluate(node, value).map_err(|(expression, reason)| SubstitutionError {
                line: *line,
                expression,
                reason,
            })?;
            out.push_str(&text);
        }
        Ok(out)
    }
}

fn collect<'a>(nodes: impl IntoIterator<Item = &'a Node>, out: &mut Vec<&'a str>) {
    for node in nodes {
        if let Node::Expression { param, args, .. } = node {
            out.push(param);
            collect(args, out);
        }
    }
}

/// A node's text; `Err((expression, why))` where the library would panic.
fn evaluate(
    node: &Node,
    value: &dyn Fn(&str) -> Option<String>,
) -> Result<String, (String, String)> {
    let (param, operator, args) = match node {
        Node::Text(text) => return Ok(text.clone()),
        Node::Expression {
            param,
            operator,
            args,
        } => (param, operator, args),
    };
    let args = args
        .iter()
        .map(|a| evaluate(a, value))
        .collect::<Result<Vec<_>, _>>()?;
    let v = value(param).unwrap_or_default();
    let arg = |i: usize| args.get(i).map(String::as_str);
    Ok(match (operator.as_str(), args.len()) {
        (",", _) => first_char(&v, char::to_lowercase),
        (",,", _) => v.to_lowercase(),
        ("^", _) => first_char(&v, char::to_uppercase),
        ("^^", _) => v.to_uppercase(),
        ("#", 0) => v.len().to_string(),
        ("#", _) => trim_prefix(&v, arg(0), Shortest),
        ("##", _) => trim_prefix(&v, arg(0), Longest),
        ("%", _) => trim_suffix(&v, arg(0), Shortest),
        ("%%", _) => trim_suffix(&v, arg(0), Longest),
        (":", _) => {
            substring(&v, &args).map_err(|e| (format!("${{{param}:{}}}", args.join(":")), e))?
        }
        ("/#", 2) => match v.strip_prefix(args[0].as_str()) {
            Some(rest) => format!("{}{rest}", args[1]),
            None => v,
        },
        ("/%", 2) => match v.strip_suffix(args[0].as_str()) {
            Some(rest) => format!("{rest}{}", args[1]),
            None => v,
        },
        ("/" | "//", 0) | ("/#" | "/%", _) => v,
        ("/", _) => v.replacen(&args[0], arg(1).unwrap_or(""), 1),
        ("//", _) => v.replace(&args[0], arg(1).unwrap_or("")),
        // `${VAR}`, every default operator, and any other operator the scanner lets through
        // (`${VAR,^}`): the value, else the arguments.
        _ if v.is_empty() => args.concat(),
        _ => v,
    })
}

fn first_char<I: Iterator<Item = char>>(s: &str, map: impl Fn(char) -> I) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(c) => map(c).chain(chars).collect(),
        None => String::new(),
    }
}

/// `${VAR:pos[:len]}` over bytes, as the library slices Go strings. A position or length that is not
/// an integer leaves the value as it is.
fn substring(s: &str, args: &[String]) -> Result<String, String> {
    let bytes = s.as_bytes();
    let n = bytes.len() as i64;
    let Some(Ok(mut pos)) = args.first().map(|a| go_atoi(a)) else {
        return Ok(s.to_string());
    };
    if pos < 0 {
        pos = (n + pos).max(0);
    }
    let cut = |from: i64, to: i64| {
        String::from_utf8_lossy(&bytes[from as usize..to as usize]).into_owned()
    };
    let Some(length) = args.get(1) else {
        return Ok(if pos < n { cut(pos, n) } else { String::new() });
    };
    let Ok(length) = go_atoi(length) else {
        return Ok(s.to_string());
    };
    if pos + length >= n {
        return Ok(if pos < n { cut(pos, n) } else { String::new() });
    }
    if length < 0 {
        return Err(format!(
            "length {length} before position {pos}: the reference's envsubst panics"
        ));
    }
    Ok(cut(pos, pos + length))
}

/// Go's `strconv.Atoi`: an optional sign and decimal digits, within 64 bits.
fn go_atoi(s: &str) -> Result<i64, ()> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(());
    }
    s.parse().map_err(|_| ())
}

#[derive(Clone, Copy)]
enum Match {
    Shortest,
    Longest,
}
use Match::{Longest, Shortest};

fn trim_prefix(s: &str, pattern: Option<&str>, which: Match) -> String {
    match pattern {
        Some(p) => String::from_utf8_lossy(trim(s.as_bytes(), p.as_bytes(), which)).into_owned(),
        None => s.to_string(),
    }
}

/// A suffix is trimmed as a prefix of the reversed value, with the pattern reversed too (the library
/// reverses characters, so `%[ab]c` and `%c[ab]` are not what bash makes of them).
fn trim_suffix(s: &str, pattern: Option<&str>, which: Match) -> String {
    let Some(p) = pattern else {
        return s.to_string();
    };
    let reversed: String = s.chars().rev().collect();
    let pattern: String = p.chars().rev().collect();
    let trimmed =
        String::from_utf8_lossy(trim(reversed.as_bytes(), pattern.as_bytes(), which)).into_owned();
    trimmed.chars().rev().collect()
}

/// `s` without its shortest or longest non-empty prefix that `pattern` matches; `s` when none does or
/// the pattern is malformed.
fn trim<'a>(s: &'a [u8], pattern: &[u8], which: Match) -> &'a [u8] {
    let mut found = None;
    for end in (1..=s.len()).rev() {
        match glob(pattern, &s[..end]) {
            Err(()) => return s,
            Ok(true) => {
                found = Some(end);
                if let Longest = which {
                    break;
                }
            }
            Ok(false) => {}
        }
    }
    found.map_or(s, |end| &s[end..])
}

/// The library's glob: Go's `path.Match` but that a trailing `*` matches everything left, `/` included.
fn glob(mut pattern: &[u8], mut name: &[u8]) -> Result<bool, ()> {
    'chunks: while !pattern.is_empty() {
        let (star, chunk, rest) = scan_chunk(pattern);
        pattern = rest;
        if star && chunk.is_empty() {
            return Ok(true);
        }
        let (after, matched) = match_chunk(chunk, name)?;
        if matched && (after.is_empty() || !pattern.is_empty()) {
            name = after;
            continue;
        }
        if star {
            for i in 0..name.len() {
                let (after, matched) = match_chunk(chunk, &name[i + 1..])?;
                if matched {
                    if pattern.is_empty() && !after.is_empty() {
                        continue;
                    }
                    name = after;
                    continue 'chunks;
                }
            }
        }
        return Ok(false);
    }
    Ok(name.is_empty())
}

fn scan_chunk(mut pattern: &[u8]) -> (bool, &[u8], &[u8]) {
    let mut star = false;
    while let [b'*', rest @ ..] = pattern {
        pattern = rest;
        star = true;
    }
    let mut in_range = false;
    let mut i = 0;
    while i < pattern.len() {
        match pattern[i] {
            b'\\' if i + 1 < pattern.len() => i += 1,
            b'[' => in_range = true,
            b']' => in_range = false,
            b'*' if !in_range => break,
            _ => {}
        }
        i += 1;
    }
    (star, &pattern[..i], &pattern[i..])
}

/// Whether `chunk` (no `*`) matches the beginning of `s`, and what follows the match. `Err` for a
/// malformed pattern, found only as far as matching goes (as in Go).
fn match_chunk<'a>(mut chunk: &[u8], mut s: &'a [u8]) -> Result<(&'a [u8], bool), ()> {
    while !chunk.is_empty() {
        if s.is_empty() {
            return Ok((s, false));
        }
        match chunk[0] {
            b'[' => {
                let (r, n) = decode(s);
                let r = u32::from(r);
                s = &s[n..];
                chunk = &chunk[1..];
                let negated = chunk.first() == Some(&b'^');
                if negated {
                    chunk = &chunk[1..];
                }
                let mut matched = false;
                let mut ranges = 0;
                loop {
                    if chunk.first() == Some(&b']') && ranges > 0 {
                        chunk = &chunk[1..];
                        break;
                    }
                    let (lo, rest) = class_char(chunk)?;
                    chunk = rest;
                    let mut hi = lo;
                    if chunk[0] == b'-' {
                        (hi, chunk) = class_char(&chunk[1..])?;
                    }
                    if lo <= r && r <= hi {
                        matched = true;
                    }
                    ranges += 1;
                }
                if matched == negated {
                    return Ok((s, false));
                }
            }
            b'?' => {
                s = &s[decode(s).1..];
                chunk = &chunk[1..];
            }
            c => {
                let literal = if c == b'\\' {
                    chunk = &chunk[1..];
                    *chunk.first().ok_or(())?
                } else {
                    c
                };
                if literal != s[0] {
                    return Ok((s, false));
                }
                s = &s[1..];
                chunk = &chunk[1..];
            }
        }
    }
    Ok((s, true))
}

/// A possibly escaped character of a class, and what follows it (never nothing: a class must close).
fn class_char(chunk: &[u8]) -> Result<(u32, &[u8]), ()> {
    let chunk = match chunk {
        [] | [b'-' | b']', ..] => return Err(()),
        [b'\\'] => return Err(()),
        [b'\\', rest @ ..] => rest,
        _ => chunk,
    };
    let (r, n) = decode(chunk);
    if (r == char::REPLACEMENT_CHARACTER && n == 1) || chunk.len() == n {
        return Err(());
    }
    Ok((u32::from(r), &chunk[n..]))
}

/// The first UTF-8 character of `s` (non-empty) and its length; an invalid byte is U+FFFD of length 1
/// (Go's `utf8.DecodeRune`).
fn decode(s: &[u8]) -> (char, usize) {
    for n in 1..=s.len().min(4) {
        if let Ok(text) = std::str::from_utf8(&s[..n])
            && let Some(c) = text.chars().next()
        {
            return (c, n);
        }
    }
    (char::REPLACEMENT_CHARACTER, 1)
}

/// What the scanner recognizes in its current mode.
const IDENT: u8 = 1;
const LBRACK: u8 = 2;
const RBRACK: u8 = 4;
const ESCAPE: u8 = 8;
/// Which escapes are on: `$$` (always), `\/` and `\\` (inside expressions).
const DOLLAR: u8 = 1;
const BACKSLASH: u8 = 2;

#[derive(PartialEq, Eq)]
enum Token {
    Illegal,
    Eof,
    Ident,
    Lbrack,
    Rbrack,
}

/// Accepts a character at 1-based position `i` of the token.
type Accept = fn(char, usize) -> bool;

/// The library's scanner: a position in the text, and the start of the current token. Positions are in
/// bytes, as in Go: a character's width decides how far an unread moves back, also where the library
/// unreads after a peek of a wider character (`${V:é}`). The library shortens its buffer at each
/// escape; here the text stays as it is and the token leaves the escape's first byte out (the same
/// result, without copying the rest of a large text at every `$$` a hostile bundle may hold).
struct Scanner<'a> {
    buf: &'a [u8],
    pos: usize,
    start: usize,
    /// The escapes' first bytes within the current token: not part of its text.
    skipped: Vec<usize>,
    /// How far the last read moved (0 at the end): what an unread moves back.
    width: usize,
    mode: u8,
    escapes: u8,
    accept: Accept,
    /// Where the current top-level `${` begins.
    expression: usize,
    /// The line at `counted`: newlines are counted once, as the scan goes.
    line: usize,
    counted: usize,
}

impl<'a> Scanner<'a> {
    fn new(text: &'a str) -> Self {
        Scanner {
            buf: text.as_bytes(),
            pos: 0,
            start: 0,
            skipped: Vec::new(),
            width: 0,
            mode: 0,
            escapes: 0,
            accept: |_, _| true,
            expression: 0,
            line: 1,
            counted: 0,
        }
    }

    /// The line of `index`, at or after every index asked before.
    fn line_at(&mut self, index: usize) -> usize {
        let index = index.clamp(self.counted, self.buf.len());
        self.line += self.buf[self.counted..index]
            .iter()
            .filter(|c| **c == b'\n')
            .count();
        self.counted = index;
        self.line
    }

    fn template(mut self) -> Result<Template, SubstitutionError> {
        let mut nodes = Vec::new();
        loop {
            self.accept = |_, _| true;
            self.mode = IDENT | LBRACK | ESCAPE;
            self.escapes = DOLLAR;
            match self.scan() {
                Token::Ident => nodes.push((0, Node::Text(self.token()))),
                Token::Eof => return Ok(Template(nodes)),
                Token::Lbrack => {
                    self.expression = self.start;
                    let line = self.line_at(self.start);
                    match self.function() {
                        Ok(node) => nodes.push((line, node)),
                        Err(reason) => return Err(self.error(reason)),
                    }
                }
                _ => return Err(self.error(BAD_SUBSTITUTION)),
            }
        }
    }

    fn error(&mut self, reason: &str) -> SubstitutionError {
        let start = self.expression.min(self.buf.len());
        SubstitutionError {
            line: self.line_at(start),
            expression: String::from_utf8_lossy(&self.buf[start..])
                .chars()
                .take(40)
                .collect(),
            reason: reason.to_string(),
        }
    }

    fn read(&mut self) -> Option<char> {
        if self.pos >= self.buf.len() {
            self.width = 0;
            return None;
        }
        let (c, width) = decode(&self.buf[self.pos..]);
        self.width = width;
        self.pos += width;
        Some(c)
    }

    fn unread(&mut self) {
        self.pos -= self.width;
    }

    /// Drops the byte before the position (an escape's first character, `$` or `\`) from the token;
    /// the one after it (ASCII: `$`, `/` or `\`, as the escape requires) is part of the token, read.
    fn skip(&mut self) {
        self.skipped.push(self.pos - 1);
        self.pos += 1;
    }

    fn peek(&mut self) -> Option<char> {
        let c = self.read();
        self.unread();
        c
    }

    fn token(&self) -> String {
        // `skipped` ascends: one pass.
        let mut skipped = self.skipped.iter().peekable();
        let mut bytes = Vec::with_capacity(self.pos - self.start);
        for i in self.start..self.pos {
            if skipped.next_if_eq(&&i).is_none() {
                bytes.push(self.buf[i]);
            }
        }
        String::from_utf8_lossy(&bytes).into_owned()
    }

    fn scan(&mut self) -> Token {
        self.start = self.pos;
        self.skipped.clear();
        let Some(c) = self.read() else {
            return Token::Eof;
        };
        if self.lbrack(c) {
            Token::Lbrack
        } else if self.mode & RBRACK != 0 && c == '}' {
            Token::Rbrack
        } else if self.ident(c) {
            Token::Ident
        } else {
            Token::Illegal
        }
    }

    fn lbrack(&mut self, c: char) -> bool {
        if self.mode & LBRACK == 0 || c != '$' {
            return false;
        }
        if self.read() == Some('{') {
            return true;
        }
        self.unread();
        false
    }

    fn ident(&mut self, c: char) -> bool {
        if self.mode & IDENT == 0 {
            return false;
        }
        if self.escaped(c) {
            self.skip();
        } else if !(self.accept)(c, self.pos - self.start) {
            return false;
        }
        loop {
            let Some(c) = self.read() else {
                self.unread();
                break;
            };
            if self.lbrack(c) {
                self.unread();
                self.unread();
                break;
            }
            if self.escaped(c) {
                self.skip();
                continue;
            }
            if !(self.accept)(c, self.pos - self.start) {
                self.unread();
                break;
            }
        }
        true
    }

    fn escaped(&mut self, c: char) -> bool {
        if self.mode & ESCAPE == 0 {
            return false;
        }
        match c {
            '$' if self.escapes & DOLLAR != 0 => self.peek() == Some('$'),
            '\\' if self.escapes & BACKSLASH != 0 => matches!(self.peek(), Some('/' | '\\')),
            _ => false,
        }
    }

    /// Scans one token with `accept` in `mode`; its text if it is an identifier run.
    fn word(&mut self, accept: Accept, mode: u8) -> Option<String> {
        self.accept = accept;
        self.mode = mode;
        (self.scan() == Token::Ident).then(|| self.token())
    }

    /// After `${`: an expression up to its `}`.
    fn function(&mut self) -> Result<Node, &'static str> {
        self.escapes = DOLLAR | BACKSLASH;
        if self.peek() == Some('#') {
            return self.length();
        }
        let name = self
            .word(|c, _| c.is_alphanumeric() || c == '_', IDENT)
            .ok_or(VARIABLE_NAME)?;
        match self.peek() {
            Some(':') => {
                self.read();
                let next = self.peek();
                self.unread();
                match next {
                    Some('=' | '-' | '?' | '+') => self.default(name),
                    _ => self.substring(name),
                }
            }
            Some('=') => self.default(name),
            Some(',' | '^') => {
                let operator = self
                    .word(|c, i| (c == ',' || c == '^') && i < 3, IDENT)
                    .ok_or(BAD_SUBSTITUTION)?;
                self.close(name, operator, Vec::new())
            }
            Some('/') => self.replace(name),
            Some(c @ ('#' | '%')) => {
                let accept: Accept = if c == '#' {
                    |c, i| c == '#' && i < 3
                } else {
                    |c, i| c == '%' && i < 3
                };
                let operator = self.word(accept, IDENT).ok_or(BAD_SUBSTITUTION)?;
                let pattern = self.argument(|c, _| c != '}', IDENT)?;
                self.close(name, operator, vec![pattern])
            }
            _ => {
                self.accept = |c, _| c.is_alphanumeric() || c == '_';
                self.mode = RBRACK;
                match self.scan() {
                    Token::Rbrack => Ok(expression(name, String::new(), Vec::new())),
                    _ => Err(MISSING_CLOSING_BRACE),
                }
            }
        }
    }

    /// One argument: a nested expression, or a run of characters `accept` takes.
    fn argument(&mut self, accept: Accept, mode: u8) -> Result<Node, &'static str> {
        self.accept = accept;
        self.mode = mode | LBRACK;
        match self.scan() {
            Token::Lbrack => self.function(),
            Token::Ident | Token::Rbrack => Ok(Node::Text(self.token())),
            _ => Err(FUNCTION_ARGUMENT),
        }
    }

    /// Expects the closing `}` of an expression.
    fn close(
        &mut self,
        param: String,
        operator: String,
        args: Vec<Node>,
    ) -> Result<Node, &'static str> {
        self.mode = RBRACK;
        match self.scan() {
            Token::Rbrack => Ok(expression(param, operator, args)),
            _ => Err(BAD_SUBSTITUTION),
        }
    }

    fn length(&mut self) -> Result<Node, &'static str> {
        let operator = self
            .word(|c, i| c == '#' && i == 1, IDENT)
            .ok_or(BAD_SUBSTITUTION)?;
        let param = self
            .word(|c, _| c.is_alphanumeric() || c == '_', IDENT)
            .ok_or(BAD_SUBSTITUTION)?;
        self.close(param, operator, Vec::new())
    }

    fn substring(&mut self, param: String) -> Result<Node, &'static str> {
        let operator = self
            .word(|c, i| i == 1 && c == ':', IDENT)
            .ok_or(BAD_SUBSTITUTION)?;
        let mut args = vec![self.argument(|c, _| c != ':' && c != '}', IDENT)?];
        self.accept = |c, _| c == ':';
        self.mode = IDENT | RBRACK;
        match self.scan() {
            Token::Rbrack => return Ok(expression(param, operator, args)),
            Token::Ident => {}
            _ => return Err(BAD_SUBSTITUTION),
        }
        args.push(self.argument(|c, _| c != '}', IDENT)?);
        self.close(param, operator, args)
    }

    fn replace(&mut self, param: String) -> Result<Node, &'static str> {
        let operator = self
            .word(
                |c, i| (i == 1 && c == '/') || (i == 2 && matches!(c, '/' | '#' | '%')),
                IDENT,
            )
            .ok_or(BAD_SUBSTITUTION)?;
        let mut args = vec![self.argument(|c, _| c != '/', IDENT | ESCAPE)?];
        self.word(|c, _| c == '/', IDENT).ok_or(BAD_SUBSTITUTION)?;
        if self.peek() != Some('}') {
            args.push(self.argument(|c, _| c != '}', IDENT | ESCAPE)?);
        }
        self.close(param, operator, args)
    }

    fn default(&mut self, param: String) -> Result<Node, &'static str> {
        let accept: Accept = if self.peek() == Some('=') {
            |c, i| i == 1 && c == '='
        } else {
            |c, i| (i == 1 && c == ':') || (i == 2 && matches!(c, '=' | '-' | '?' | '+'))
        };
        let operator = self.word(accept, IDENT).ok_or(DEFAULT_FUNCTION)?;
        let mut args = Vec::new();
        while self.peek() != Some('}') {
            args.push(self.argument(|c, _| c != '}', IDENT)?);
        }
        self.close(param, operator, args)
    }
}

fn expression(param: String, operator: String, args: Vec<Node>) -> Node {
    Node::Expression {
        param,
        operator,
        args,
    }
}

#[cfg(test)]
#[path = "envsubst_tests.rs"]
mod tests;
