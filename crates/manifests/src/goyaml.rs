//! The reference generator's YAML writer, reproduced byte for byte: `sigs.k8s.io/yaml.Marshal`.
//!
//! The reference (Go) writes every object with `sigs.k8s.io/yaml.Marshal`, which encodes the value
//! to JSON, decodes that JSON with go-yaml v2 into generic maps, and encodes those with go-yaml v2.
//! So whatever the Go type was, what comes out is go-yaml v2's rendering of a JSON value:
//!
//! - map keys in go-yaml v2's order (`sorter.go`): rune by rune, letters before other characters,
//!   runs of digits compared as numbers (`a2` before `a10`);
//! - block style, sequences inside a mapping not indented (`key:\n- item`), two-space indentation,
//!   empty maps and lists in flow style (`{}`, `[]`);
//! - a string plain when go-yaml would read it back as a string, else double-quoted; a string with a
//!   line break as a literal block scalar; then libyaml's emitter rules (ported to Go as
//!   `emitterc.go`) may demote that style: to single quotes (an indicator, a leading or trailing
//!   space), to double quotes (a tab, a space before a line break, ...);
//! - plain, single- and double-quoted scalars folded at spaces once the line passes 80 columns;
//! - a long or multi-line map key as an explicit `? key`.
//!
//! No maintained Rust crate writes this: serde_yaml and serde-saphyr choose their own quoting and
//! never fold, and libyaml's C emitter (`unsafe-libyaml`) differs from the Go port in details and
//! would still need go-yaml's style choice and key order in front of it. So this module is our own
//! small emitter over `serde_json::Value`, a port of the parts of `emitterc.go` (go-yaml v2.4, as
//! vendored by the reference) that a JSON value can reach: no anchors, tags, flow collections with
//! content or folded scalars. The names of the emitter's state follow the Go source so that the two
//! can be read side by side.

use serde_json::{Map, Value};

/// go-yaml v2's default line width: scalars are folded at the first space past it.
const BEST_WIDTH: usize = 80;
/// go-yaml v2's indentation step.
const BEST_INDENT: i64 = 2;
/// A map key longer than this is written as an explicit `? key` (emitterc.go, `check_simple_key`).
const MAX_SIMPLE_KEY: usize = 128;

/// `sigs.k8s.io/yaml.Marshal(value)`: one document, ending in a line break.
pub fn marshal(value: &Value) -> String {
    let mut e = Emitter::default();
    e.node(value, Context::ROOT);
    e.document_end();
    e.out
}

/// Documents as the newer generation writes `manifests.yaml`: each marshalled, joined by a line
/// `---`.
pub fn join_documents<'a>(values: impl IntoIterator<Item = &'a Value>) -> String {
    let mut out = String::new();
    for (i, v) in values.into_iter().enumerate() {
        if i > 0 {
            out.push_str("---\n");
        }
        out.push_str(&marshal(v));
    }
    out
}

/// Documents as cluster-api's `util/yaml.FromUnstructured` joins them (the first generation's
/// components): each marshalled, joined by `---`, each on its own lines, and no line break at the
/// very end.
pub fn from_unstructured<'a>(values: impl IntoIterator<Item = &'a Value>) -> String {
    let docs: Vec<String> = values
        .into_iter()
        .map(|v| {
            let mut d = marshal(v);
            d.insert(0, '\n');
            d
        })
        .collect();
    let joined = docs.join("---");
    let joined = joined.strip_prefix('\n').unwrap_or(&joined);
    joined.strip_suffix('\n').unwrap_or(joined).to_owned()
}

/// go-yaml v2's order of map keys (`keyList.Less` in sorter.go), for string keys.
pub fn key_less(a: &str, b: &str) -> bool {
    let ar: Vec<char> = a.chars().collect();
    let br: Vec<char> = b.chars().collect();
    let digit = |c: char| c.is_ascii_digit();
    for i in 0..ar.len().min(br.len()) {
        if ar[i] == br[i] {
            continue;
        }
        let al = ar[i].is_alphabetic();
        let bl = br[i].is_alphabetic();
        if al && bl {
            return ar[i] < br[i];
        }
        if al || bl {
            return bl;
        }
        let (mut an, mut bn) = (0i64, 0i64);
        if ar[i] == '0' || br[i] == '0' {
            // A zero after other digits is part of a number; leading zeros are not.
            let mut j = i;
            while j > 0 && digit(ar[j - 1]) {
                j -= 1;
                if ar[j] != '0' {
                    an = 1;
                    bn = 1;
                    break;
                }
            }
        }
        let mut ai = i;
        while ai < ar.len() && digit(ar[ai]) {
            an = an
                .wrapping_mul(10)
                .wrapping_add(i64::from(ar[ai] as u8 - b'0'));
            ai += 1;
        }
        let mut bi = i;
        while bi < br.len() && digit(br[bi]) {
            bn = bn
                .wrapping_mul(10)
                .wrapping_add(i64::from(br[bi] as u8 - b'0'));
            bi += 1;
        }
        if an != bn {
            return an < bn;
        }
        if ai != bi {
            return ai < bi;
        }
        return ar[i] < br[i];
    }
    ar.len() < br.len()
}

fn sorted_keys(map: &Map<String, Value>) -> Vec<&String> {
    let mut keys: Vec<&String> = map.keys().collect();
    keys.sort_by(|a, b| {
        if key_less(a, b) {
            std::cmp::Ordering::Less
        } else if key_less(b, a) {
            std::cmp::Ordering::Greater
        } else {
            std::cmp::Ordering::Equal
        }
    });
    keys
}

/// The text of a scalar and the style go-yaml's encoder asks for (encode.go).
fn scalar_text(v: &Value) -> (String, Style) {
    match v {
        Value::Null => ("null".into(), Style::Plain),
        Value::Bool(b) => (b.to_string(), Style::Plain),
        Value::Number(n) => (number(n), Style::Plain),
        Value::String(s) => {
            let style = if s.contains('\n') {
                Style::Literal
            } else if resolves_to_string(s) && !is_base60_float(s) {
                Style::Plain
            } else {
                Style::DoubleQuoted
            };
            (s.clone(), style)
        }
        Value::Array(_) | Value::Object(_) => unreachable!("not a scalar"),
    }
}

/// A JSON number as go-yaml writes what it decoded from the JSON text Go's encoder wrote: an
/// integral value is an int; anything else a float in `strconv.FormatFloat(f, 'g', -1, 64)`.
fn number(n: &serde_json::Number) -> String {
    if let Some(i) = n.as_i64() {
        return i.to_string();
    }
    if let Some(u) = n.as_u64() {
        return u.to_string();
    }
    let f = n.as_f64().unwrap_or(0.0);
    // encoding/json writes integral floats below 1e21 without a fraction: go-yaml then reads an int.
    if f.fract() == 0.0 && f.abs() < 1e21 {
        return format!("{f:.0}");
    }
    go_format_g(f)
}

/// `strconv.FormatFloat(f, 'g', -1, 64)`.
fn go_format_g(f: f64) -> String {
    if f.is_nan() {
        return ".nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { ".inf" } else { "-.inf" }.into();
    }
    // Rust's `{:e}` gives the shortest digits that read back exactly, as Go's -1 precision does.
    let e = format!("{f:e}");
    let (mantissa, exp) = e.split_once('e').expect("{:e} has an exponent");
    let exp: i32 = exp.parse().expect("{:e} exponent");
    let negative = mantissa.starts_with('-');
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let sign = if negative { "-" } else { "" };
    if !(-4..21).contains(&exp) {
        let (first, rest) = digits.split_at(1);
        let frac = if rest.is_empty() {
            String::new()
        } else {
            format!(".{rest}")
        };
        let esign = if exp < 0 { '-' } else { '+' };
        return format!("{sign}{first}{frac}e{esign}{:02}", exp.abs());
    }
    // %f with as many digits as needed.
    let point = exp + 1;
    if point <= 0 {
        format!("{sign}0.{}{digits}", "0".repeat((-point) as usize))
    } else if point as usize >= digits.len() {
        format!(
            "{sign}{digits}{}",
            "0".repeat(point as usize - digits.len())
        )
    } else {
        let (int, frac) = digits.split_at(point as usize);
        format!("{sign}{int}.{frac}")
    }
}

/// Whether go-yaml v2 reads `s`, unquoted, back as a string (resolve.go with no tag).
fn resolves_to_string(s: &str) -> bool {
    const SPECIAL: &[&str] = &[
        "y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON", "n", "N", "no",
        "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF", "", "~", "null", "Null",
        "NULL", ".nan", ".NaN", ".NAN", ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf",
        "-.Inf", "-.INF", "<<",
    ];
    let Some(&first) = s.as_bytes().first() else {
        return false;
    };
    let hint = match first {
        b'+' | b'-' => b'S',
        b'0'..=b'9' => b'D',
        b'y' | b'Y' | b'n' | b'N' | b't' | b'T' | b'f' | b'F' | b'o' | b'O' | b'~' => b'M',
        b'.' => b'.',
        b'<' => b'M',
        _ => return true,
    };
    if SPECIAL.contains(&s) {
        return false;
    }
    match hint {
        b'.' => go_parse_float(s).is_none(),
        b'D' | b'S' => {
            if is_timestamp(s) {
                return false;
            }
            let plain = s.replace('_', "");
            if go_parse_int(&plain).is_some() || is_yaml_style_float(&plain) {
                return false;
            }
            let binary = plain
                .strip_prefix("0b")
                .or_else(|| plain.strip_prefix("-0b"));
            if let Some(b) = binary {
                return !(!b.is_empty()
                    && b.bytes().all(|c| c == b'0' || c == b'1')
                    && b.len() <= 64);
            }
            true
        }
        _ => true,
    }
}

/// `strconv.ParseInt(s, 0, 64)` or `ParseUint(s, 0, 64)` succeeds: optional sign, then decimal,
/// `0x`, `0o`, `0b` or a leading-`0` octal, with `_` only between digits after a base prefix
/// (the caller removed every `_` already).
fn go_parse_int(s: &str) -> Option<()> {
    let body = s.strip_prefix(['+', '-']).unwrap_or(s);
    let (digits, radix) = if let Some(h) = body.strip_prefix("0x").or(body.strip_prefix("0X")) {
        (h, 16)
    } else if let Some(o) = body.strip_prefix("0o").or(body.strip_prefix("0O")) {
        (o, 8)
    } else if let Some(b) = body.strip_prefix("0b").or(body.strip_prefix("0B")) {
        (b, 2)
    } else if body.len() > 1 && body.starts_with('0') {
        (&body[1..], 8)
    } else {
        (body, 10)
    };
    if digits.is_empty() {
        return None;
    }
    let v = u128::from_str_radix(digits, radix).ok()?;
    let negative = s.starts_with('-');
    let fits = if negative {
        v <= 1u128 << 63
    } else {
        v <= u128::from(u64::MAX)
    };
    fits.then_some(())
}

/// `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$` (resolve.go's yamlStyleFloat); the
/// value then parses as a float (an overflow is still a float to Go: ±Inf with an error... which
/// resolve treats as not a float; such literals do not occur in manifests).
fn is_yaml_style_float(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    if i < b.len() && (b[i] == b'-' || b[i] == b'+') {
        i += 1;
    }
    let digits = |i: &mut usize| {
        let start = *i;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
        *i - start
    };
    if i < b.len() && b[i] == b'.' {
        i += 1;
        if digits(&mut i) == 0 {
            return false;
        }
    } else {
        if digits(&mut i) == 0 {
            return false;
        }
        if i < b.len() && b[i] == b'.' {
            i += 1;
            digits(&mut i);
        }
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        i += 1;
        if i < b.len() && (b[i] == b'-' || b[i] == b'+') {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

/// `strconv.ParseFloat(s, 64)` for a string starting with `.` (what resolve tries on them).
fn go_parse_float(s: &str) -> Option<f64> {
    if is_yaml_style_float(s) {
        s.parse().ok()
    } else {
        None
    }
}

/// resolve.go's `parseTimestamp`: `YYYY-M-D`, optionally with a time (`T`/`t`/space).
fn is_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() < 5 || !b[..4].iter().all(u8::is_ascii_digit) || b[4] != b'-' {
        return false;
    }
    let num = |i: &mut usize, min: usize, max: usize| {
        let start = *i;
        while *i < b.len() && b[*i].is_ascii_digit() && *i - start < max {
            *i += 1;
        }
        *i - start >= min
    };
    let mut i = 5;
    if !num(&mut i, 1, 2) || i >= b.len() || b[i] != b'-' {
        return false;
    }
    i += 1;
    if !num(&mut i, 1, 2) {
        return false;
    }
    if i == b.len() {
        return true;
    }
    let zone = b[i] != b' ';
    if !matches!(b[i], b'T' | b't' | b' ') {
        return false;
    }
    i += 1;
    for sep in [b':', b':'] {
        if !num(&mut i, 1, 2) || i >= b.len() || b[i] != sep {
            return false;
        }
        i += 1;
    }
    if !num(&mut i, 1, 2) {
        return false;
    }
    if i < b.len() && b[i] == b'.' {
        i += 1;
        if !num(&mut i, 1, 9) {
            return false;
        }
    }
    if !zone {
        return i == b.len();
    }
    if i < b.len() && b[i] == b'Z' {
        return i + 1 == b.len();
    }
    if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
        i += 1;
        let ok = num(&mut i, 2, 2) && i < b.len() && b[i] == b':' && {
            i += 1;
            num(&mut i, 2, 2)
        };
        return ok && i == b.len();
    }
    false
}

/// `^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$` (encode.go): quoted for YAML 1.1 readers.
fn is_base60_float(s: &str) -> bool {
    let b = s.as_bytes();
    if b.is_empty() || !s.contains(':') {
        return false;
    }
    let mut i = 0;
    if b[0] == b'+' || b[0] == b'-' {
        i = 1;
    }
    if i >= b.len() || !b[i].is_ascii_digit() {
        return false;
    }
    while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'_') {
        i += 1;
    }
    let mut groups = 0;
    while i < b.len() && b[i] == b':' {
        i += 1;
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() && i - start < 2 {
            i += 1;
        }
        let n = &s[start..i];
        let ok = match n.len() {
            1 => true,
            2 => n.as_bytes()[0] <= b'5',
            _ => false,
        };
        if !ok {
            return false;
        }
        groups += 1;
    }
    if groups == 0 {
        return false;
    }
    if i < b.len() && b[i] == b'.' {
        i += 1;
        while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'_') {
            i += 1;
        }
    }
    i == b.len()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Style {
    Plain,
    SingleQuoted,
    DoubleQuoted,
    Literal,
}

/// Where a node is written (`yaml_emitter_emit_node`'s flags).
#[derive(Debug, Clone, Copy)]
struct Context {
    root: bool,
    mapping: bool,
    simple_key: bool,
}

impl Context {
    const ROOT: Context = Context {
        root: true,
        mapping: false,
        simple_key: false,
    };
    const SEQUENCE_ITEM: Context = Context {
        root: false,
        mapping: false,
        simple_key: false,
    };
    const MAPPING_VALUE: Context = Context {
        root: false,
        mapping: true,
        simple_key: false,
    };
    const SIMPLE_KEY: Context = Context {
        root: false,
        mapping: true,
        simple_key: true,
    };
}

/// What `yaml_emitter_analyze_scalar` finds out about a scalar.
#[derive(Debug, Clone, Copy)]
struct Analysis {
    multiline: bool,
    block_plain_allowed: bool,
    single_quoted_allowed: bool,
    block_allowed: bool,
}

/// The byte at `i`, or NUL past the end (libyaml's strings end in NUL; the Go port reads what
/// follows in the buffer, which the checks below never reach past the end for valid input).
fn at(b: &[u8], i: usize) -> u8 {
    b.get(i).copied().unwrap_or(0)
}

fn width(c: u8) -> usize {
    if c & 0x80 == 0 {
        1
    } else if c & 0xE0 == 0xC0 {
        2
    } else if c & 0xF0 == 0xE0 {
        3
    } else if c & 0xF8 == 0xF0 {
        4
    } else {
        0
    }
}

fn is_printable(b: &[u8], i: usize) -> bool {
    let c = at(b, i);
    c == 0x0A
        || (0x20..=0x7E).contains(&c)
        || (c == 0xC2 && at(b, i + 1) >= 0xA0)
        || (c > 0xC2 && c < 0xED)
        || (c == 0xED && at(b, i + 1) < 0xA0)
        || c == 0xEE
        || (c == 0xEF
            && !(at(b, i + 1) == 0xBB && at(b, i + 2) == 0xBF)
            && !(at(b, i + 1) == 0xBF && (at(b, i + 2) == 0xBE || at(b, i + 2) == 0xBF)))
}

fn is_space(b: &[u8], i: usize) -> bool {
    at(b, i) == b' '
}

fn is_blank(b: &[u8], i: usize) -> bool {
    matches!(at(b, i), b' ' | b'\t')
}

fn is_break(b: &[u8], i: usize) -> bool {
    let c = at(b, i);
    c == b'\r'
        || c == b'\n'
        || (c == 0xC2 && at(b, i + 1) == 0x85)
        || (c == 0xE2 && at(b, i + 1) == 0x80 && (at(b, i + 2) == 0xA8 || at(b, i + 2) == 0xA9))
}

fn is_blankz(b: &[u8], i: usize) -> bool {
    is_blank(b, i) || is_break(b, i) || at(b, i) == 0
}

/// `is_bom` of emitterc.go looks at the start of the value whatever the position.
fn is_bom(b: &[u8]) -> bool {
    at(b, 0) == 0xEF && at(b, 1) == 0xBB && at(b, 2) == 0xBF
}

fn analyze(value: &[u8]) -> Analysis {
    if value.is_empty() {
        return Analysis {
            multiline: false,
            block_plain_allowed: true,
            single_quoted_allowed: true,
            block_allowed: false,
        };
    }
    let mut block_indicators = value.starts_with(b"---") || value.starts_with(b"...");
    let (mut line_breaks, mut special_characters) = (false, false);
    let (mut leading_space, mut leading_break, mut trailing_space, mut trailing_break) =
        (false, false, false, false);
    let (mut break_space, mut space_break) = (false, false);
    let (mut previous_space, mut previous_break) = (false, false);
    let mut preceded_by_whitespace = true;
    let mut i = 0;
    while i < value.len() {
        let w = width(value[i]).max(1);
        let followed_by_whitespace = i + w >= value.len() || is_blank(value, i + w);
        let c = value[i];
        if i == 0 {
            match c {
                b'#' | b',' | b'[' | b']' | b'{' | b'}' | b'&' | b'*' | b'!' | b'|' | b'>'
                | b'\'' | b'"' | b'%' | b'@' | b'`' => block_indicators = true,
                b'?' | b':' if followed_by_whitespace => block_indicators = true,
                b'-' if followed_by_whitespace => block_indicators = true,
                _ => {}
            }
        } else {
            match c {
                b':' if followed_by_whitespace => block_indicators = true,
                b'#' if preceded_by_whitespace => block_indicators = true,
                _ => {}
            }
        }
        if !is_printable(value, i) {
            special_characters = true;
        }
        if is_space(value, i) {
            if i == 0 {
                leading_space = true;
            }
            if i + w == value.len() {
                trailing_space = true;
            }
            if previous_break {
                break_space = true;
            }
            previous_space = true;
            previous_break = false;
        } else if is_break(value, i) {
            line_breaks = true;
            if i == 0 {
                leading_break = true;
            }
            if i + w == value.len() {
                trailing_break = true;
            }
            if previous_space {
                space_break = true;
            }
            previous_space = false;
            previous_break = true;
        } else {
            previous_space = false;
            previous_break = false;
        }
        preceded_by_whitespace = is_blankz(value, i);
        i += w;
    }
    let mut a = Analysis {
        multiline: line_breaks,
        block_plain_allowed: true,
        single_quoted_allowed: true,
        block_allowed: true,
    };
    if leading_space || leading_break || trailing_space || trailing_break {
        a.block_plain_allowed = false;
    }
    if trailing_space {
        a.block_allowed = false;
    }
    if break_space {
        a.block_plain_allowed = false;
        a.single_quoted_allowed = false;
    }
    if space_break || special_characters {
        a.block_plain_allowed = false;
        a.single_quoted_allowed = false;
        a.block_allowed = false;
    }
    if line_breaks || block_indicators {
        a.block_plain_allowed = false;
    }
    a
}

/// The emitter's state (`yaml_emitter_t`), block context only: flow collections are only ever
/// empty here.
struct Emitter {
    out: String,
    /// Characters since the last line break.
    column: usize,
    indent: i64,
    indents: Vec<i64>,
    whitespace: bool,
    indention: bool,
    open_ended: bool,
}

impl Default for Emitter {
    fn default() -> Self {
        Emitter {
            out: String::new(),
            column: 0,
            indent: -1,
            indents: Vec::new(),
            whitespace: true,
            indention: true,
            open_ended: false,
        }
    }
}

impl Emitter {
    fn increase_indent(&mut self, flow: bool, indentless: bool) {
        self.indents.push(self.indent);
        if self.indent < 0 {
            self.indent = if flow { BEST_INDENT } else { 0 };
        } else if !indentless {
            self.indent += BEST_INDENT;
        }
    }

    fn pop_indent(&mut self) {
        self.indent = self.indents.pop().expect("indent pushed");
    }

    fn put(&mut self, c: char) {
        self.out.push(c);
        self.column += 1;
    }

    fn put_break(&mut self) {
        self.out.push('\n');
        self.column = 0;
    }

    /// Copies the character of `s` at byte `*i`.
    fn write(&mut self, s: &[u8], i: &mut usize) {
        let w = width(s[*i]).max(1);
        self.out
            .push_str(std::str::from_utf8(&s[*i..*i + w]).expect("UTF-8 from a String"));
        self.column += 1;
        *i += w;
    }

    fn write_break(&mut self, s: &[u8], i: &mut usize) {
        if s[*i] == b'\n' {
            self.put_break();
            *i += 1;
        } else {
            self.write(s, i);
            self.column = 0;
        }
    }

    fn write_indent(&mut self) {
        let indent = self.indent.max(0) as usize;
        if !self.indention || self.column > indent || (self.column == indent && !self.whitespace) {
            self.put_break();
        }
        while self.column < indent {
            self.put(' ');
        }
        self.whitespace = true;
        self.indention = true;
    }

    fn write_indicator(
        &mut self,
        indicator: &str,
        need_whitespace: bool,
        is_whitespace: bool,
        is_indention: bool,
    ) {
        if need_whitespace && !self.whitespace {
            self.put(' ');
        }
        for c in indicator.chars() {
            self.put(c);
        }
        self.whitespace = is_whitespace;
        self.indention = self.indention && is_indention;
        self.open_ended = false;
    }

    fn document_end(&mut self) {
        self.write_indent();
        // Stream end: a document that ended open (a `|+` scalar) is closed with `...`.
        if self.open_ended {
            self.write_indicator("...", true, false, false);
            self.write_indent();
        }
    }

    fn node(&mut self, v: &Value, ctx: Context) {
        match v {
            Value::Array(items) if items.is_empty() => self.empty_flow("[", "]"),
            Value::Object(map) if map.is_empty() => self.empty_flow("{", "}"),
            Value::Array(items) => self.block_sequence(items, ctx),
            Value::Object(map) => self.block_mapping(map),
            scalar => {
                let (text, style) = scalar_text(scalar);
                self.scalar(&text, style, ctx);
            }
        }
    }

    fn empty_flow(&mut self, open: &str, close: &str) {
        self.write_indicator(open, true, true, false);
        self.increase_indent(true, false);
        self.pop_indent();
        self.write_indicator(close, false, false, false);
    }

    fn block_sequence(&mut self, items: &[Value], ctx: Context) {
        self.increase_indent(false, ctx.mapping && !self.indention);
        for item in items {
            self.write_indent();
            self.write_indicator("-", true, false, true);
            self.node(item, Context::SEQUENCE_ITEM);
        }
        self.pop_indent();
    }

    fn block_mapping(&mut self, map: &Map<String, Value>) {
        self.increase_indent(false, false);
        for key in sorted_keys(map) {
            self.write_indent();
            let a = analyze(key.as_bytes());
            if !a.multiline && key.len() <= MAX_SIMPLE_KEY {
                self.node(&Value::String(key.clone()), Context::SIMPLE_KEY);
                self.write_indicator(":", false, false, false);
            } else {
                self.write_indicator("?", true, false, true);
                self.node(&Value::String(key.clone()), Context::MAPPING_VALUE);
                self.write_indent();
                self.write_indicator(":", true, false, true);
            }
            self.node(&map[key], Context::MAPPING_VALUE);
        }
        self.pop_indent();
    }

    /// `yaml_emitter_emit_scalar`: the style is settled, then the scalar written one indentation
    /// step further in (for continuation lines).
    fn scalar(&mut self, text: &str, requested: Style, ctx: Context) {
        let value = text.as_bytes();
        let a = analyze(value);
        let mut style = requested;
        if ctx.simple_key && a.multiline {
            style = Style::DoubleQuoted;
        }
        if style == Style::Plain && (!a.block_plain_allowed || (value.is_empty() && ctx.simple_key))
        {
            style = Style::SingleQuoted;
        }
        if style == Style::SingleQuoted && !a.single_quoted_allowed {
            style = Style::DoubleQuoted;
        }
        if style == Style::Literal && (!a.block_allowed || ctx.simple_key) {
            style = Style::DoubleQuoted;
        }
        self.increase_indent(true, false);
        let allow_breaks = !ctx.simple_key;
        match style {
            Style::Plain => self.plain(value, allow_breaks, ctx.root),
            Style::SingleQuoted => self.single_quoted(value, allow_breaks),
            Style::DoubleQuoted => self.double_quoted(value, allow_breaks),
            Style::Literal => self.literal(value),
        }
        self.pop_indent();
    }

    fn plain(&mut self, value: &[u8], allow_breaks: bool, root: bool) {
        if !self.whitespace {
            self.put(' ');
        }
        let (mut spaces, mut breaks) = (false, false);
        let mut i = 0;
        while i < value.len() {
            if is_space(value, i) {
                if allow_breaks && !spaces && self.column > BEST_WIDTH && !is_space(value, i + 1) {
                    self.write_indent();
                    i += 1;
                } else {
                    self.write(value, &mut i);
                }
                spaces = true;
            } else if is_break(value, i) {
                if !breaks && value[i] == b'\n' {
                    self.put_break();
                }
                self.write_break(value, &mut i);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                self.write(value, &mut i);
                self.indention = false;
                spaces = false;
                breaks = false;
            }
        }
        self.whitespace = false;
        self.indention = false;
        if root {
            self.open_ended = true;
        }
    }

    fn single_quoted(&mut self, value: &[u8], allow_breaks: bool) {
        self.write_indicator("'", true, false, false);
        let (mut spaces, mut breaks) = (false, false);
        let mut i = 0;
        while i < value.len() {
            if is_space(value, i) {
                if allow_breaks
                    && !spaces
                    && self.column > BEST_WIDTH
                    && i > 0
                    && i < value.len() - 1
                    && !is_space(value, i + 1)
                {
                    self.write_indent();
                    i += 1;
                } else {
                    self.write(value, &mut i);
                }
                spaces = true;
            } else if is_break(value, i) {
                if !breaks && value[i] == b'\n' {
                    self.put_break();
                }
                self.write_break(value, &mut i);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                if value[i] == b'\'' {
                    self.put('\'');
                }
                self.write(value, &mut i);
                self.indention = false;
                spaces = false;
                breaks = false;
            }
        }
        self.write_indicator("'", false, false, false);
        self.whitespace = false;
        self.indention = false;
    }

    fn double_quoted(&mut self, value: &[u8], allow_breaks: bool) {
        let mut spaces = false;
        self.write_indicator("\"", true, false, false);
        let mut i = 0;
        while i < value.len() {
            let c = value[i];
            if !is_printable(value, i)
                || is_bom(value)
                || is_break(value, i)
                || c == b'"'
                || c == b'\\'
            {
                let w = width(c).max(1);
                let ch = std::str::from_utf8(&value[i..i + w])
                    .ok()
                    .and_then(|s| s.chars().next())
                    .unwrap_or('\u{FFFD}');
                i += w;
                self.put('\\');
                let v = ch as u32;
                match v {
                    0x00 => self.put('0'),
                    0x07 => self.put('a'),
                    0x08 => self.put('b'),
                    0x09 => self.put('t'),
                    0x0A => self.put('n'),
                    0x0B => self.put('v'),
                    0x0C => self.put('f'),
                    0x0D => self.put('r'),
                    0x1B => self.put('e'),
                    0x22 => self.put('"'),
                    0x5C => self.put('\\'),
                    0x85 => self.put('N'),
                    0xA0 => self.put('_'),
                    0x2028 => self.put('L'),
                    0x2029 => self.put('P'),
                    _ => {
                        let (letter, digits) = if v <= 0xFF {
                            ('x', 2)
                        } else if v <= 0xFFFF {
                            ('u', 4)
                        } else {
                            ('U', 8)
                        };
                        self.put(letter);
                        for k in (0..digits).rev() {
                            let d = (v >> (k * 4)) & 0xF;
                            self.put(char::from_digit(d, 16).unwrap().to_ascii_uppercase());
                        }
                    }
                }
                spaces = false;
            } else if is_space(value, i) {
                if allow_breaks
                    && !spaces
                    && self.column > BEST_WIDTH
                    && i > 0
                    && i < value.len() - 1
                {
                    self.write_indent();
                    if is_space(value, i + 1) {
                        self.put('\\');
                    }
                    i += 1;
                } else {
                    self.write(value, &mut i);
                }
                spaces = true;
            } else {
                self.write(value, &mut i);
                spaces = false;
            }
        }
        self.write_indicator("\"", false, false, false);
        self.whitespace = false;
        self.indention = false;
    }

    fn literal(&mut self, value: &[u8]) {
        self.write_indicator("|", true, false, false);
        // Block scalar hints: an indentation indicator when the text starts with a space or a
        // break, and the chomping indicator.
        if is_space(value, 0) || is_break(value, 0) {
            self.write_indicator(&BEST_INDENT.to_string(), false, false, false);
        }
        self.open_ended = false;
        let chomp = if value.is_empty() {
            Some("-")
        } else {
            let mut i = value.len() - 1;
            while value[i] & 0xC0 == 0x80 {
                i -= 1;
            }
            if !is_break(value, i) {
                Some("-")
            } else if i == 0 {
                self.open_ended = true;
                Some("+")
            } else {
                i -= 1;
                while value[i] & 0xC0 == 0x80 {
                    i -= 1;
                }
                if is_break(value, i) {
                    self.open_ended = true;
                    Some("+")
                } else {
                    None
                }
            }
        };
        if let Some(c) = chomp {
            self.write_indicator(c, false, false, false);
        }
        self.put_break();
        self.indention = true;
        self.whitespace = true;
        let mut breaks = true;
        let mut i = 0;
        while i < value.len() {
            if is_break(value, i) {
                self.write_break(value, &mut i);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                self.write(value, &mut i);
                self.indention = false;
                breaks = false;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_in_go_yaml_order() {
        let mut keys = vec![
            "b", "a10", "a2", "A", "a", "_x", "a-b", "ab", "1", "10", "9",
        ];
        keys.sort_by(|a, b| {
            if key_less(a, b) {
                std::cmp::Ordering::Less
            } else if key_less(b, a) {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        });
        // Letters compare as characters and before anything else at the same position; anything
        // else compares as the number its digit run makes (none: 0), so `_` and `-` come before
        // digits and `a2` before `a10`.
        assert_eq!(
            keys,
            [
                "_x", "1", "9", "10", "A", "a", "a-b", "a2", "a10", "ab", "b"
            ]
        );
    }

    #[test]
    fn scalars_styled_as_go_yaml_writes_them() {
        let v = json!({
            "empty": "",
            "bool": "true",
            "int": "10",
            "octal": "0755",
            "float": "1.5",
            "date": "2024-01-02",
            "star": "*",
            "colon": "a: b",
            "ref": "${X:=\"\"}",
            "json": "{\"effect\": \"x\"}",
            "tab": "a\tb",
            "lines": "a\nb\n",
            "lines_trailing_space": "a \nb",
            "n": 3,
            "f": 0.5,
            "null": null,
            "list": [],
            "map": {},
        });
        assert_eq!(
            marshal(&v),
            "bool: \"true\"\ncolon: 'a: b'\ndate: \"2024-01-02\"\nempty: \"\"\nf: 0.5\nfloat: \"1.5\"\nint: \"10\"\n\
             json: '{\"effect\": \"x\"}'\nlines: |\n  a\n  b\nlines_trailing_space: \"a \\nb\"\nlist: []\nmap: {}\n\
             \"n\": 3\n\"null\": null\noctal: \"0755\"\nref: ${X:=\"\"}\nstar: '*'\ntab: \"a\\tb\"\n"
        );
    }

    #[test]
    fn long_strings_fold_at_80_columns_and_sequences_are_not_indented() {
        let long = "word ".repeat(30).trim_end().to_owned();
        let v = json!({"spec": {"description": long, "items": [{"a": 1, "b": [1, 2]}]}});
        let out = marshal(&v);
        let mut lines = out.lines();
        assert_eq!(lines.next(), Some("spec:"));
        let first = lines.next().unwrap();
        assert!(
            first.starts_with("  description: word") && first.len() <= 86,
            "{out}"
        );
        assert!(lines.next().unwrap().starts_with("    word"), "{out}");
        assert!(
            out.ends_with("  items:\n  - a: 1\n    b:\n    - 1\n    - 2\n"),
            "{out}"
        );
    }

    #[test]
    fn documents_joined_as_the_reference_joins_them() {
        let a = json!({"a": 1});
        let b = json!({"b": "x\ny"});
        assert_eq!(join_documents([&a, &b]), "a: 1\n---\nb: |-\n  x\n  y\n");
        assert_eq!(from_unstructured([&a, &b]), "a: 1\n---\nb: |-\n  x\n  y");
    }

    #[test]
    fn floats_as_go_formats_them() {
        assert_eq!(go_format_g(0.5), "0.5");
        assert_eq!(go_format_g(1e-7), "1e-07");
        assert_eq!(go_format_g(1.5e21), "1.5e+21");
        assert_eq!(go_format_g(0.0001), "0.0001");
        assert_eq!(number(&serde_json::Number::from_f64(2.0).unwrap()), "2");
    }
}
