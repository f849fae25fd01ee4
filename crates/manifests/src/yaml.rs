//! Multi-document YAML in and out.
//!
//! Parsing splits the stream on document markers itself, so every document keeps its position
//! (index and first line) for error messages, then parses each document with `serde-saphyr`
//! into a `serde_json::Value`.
//!
//! Serialization is deterministic: map keys sorted (explicitly, so that a `preserve_order`
//! feature of `serde_json` switched on elsewhere in the build cannot change the output), block
//! style, documents joined by a line `---`, exactly one trailing newline.

use std::sync::Arc;

use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::Value;

use crate::budget::{Budget, Meter, MeterError};
use crate::error::Error;
pub use crate::location::DocLocation;
use capi_object::ObjectKey;

/// One parsed, non-empty YAML document.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    pub location: DocLocation,
    pub value: Value,
}

/// Every `kind: List` document (`apiVersion: v1`, what `kubectl get -o yaml` and `oc get -o yaml` write
/// for more than one object) replaced by its items, as kubectl reads such a file; other documents stay
/// as they are. An item is located as `<source>: document N (line L), item I`.
pub fn unwrap_lists(documents: Vec<Document>) -> Vec<Document> {
    let mut out = Vec::with_capacity(documents.len());
    for doc in documents {
        let is_list = doc.value.get("apiVersion").and_then(Value::as_str) == Some("v1")
            && doc.value.get("kind").and_then(Value::as_str) == Some("List");
        let items = match doc.value {
            Value::Object(mut map) if is_list => match map.remove("items") {
                Some(Value::Array(items)) => items,
                Some(Value::Null) | None => Vec::new(),
                Some(other) => {
                    // Not a list of items: leave the document for the reader to refuse.
                    map.insert("items".into(), other);
                    out.push(Document {
                        location: doc.location,
                        value: Value::Object(map),
                    });
                    continue;
                }
            },
            value => {
                out.push(Document {
                    location: doc.location,
                    value,
                });
                continue;
            }
        };
        for (i, value) in items.into_iter().enumerate() {
            out.push(Document {
                location: DocLocation {
                    source: Arc::from(format!("{}, item {i}", doc.location)),
                    index: doc.location.index,
                    line: 0,
                },
                value,
            });
        }
    }
    out
}

/// A document that is a Kubernetes object: a map with `apiVersion`, `kind` and `metadata.name`.
#[derive(Debug, Clone, PartialEq)]
pub struct Object {
    pub location: DocLocation,
    pub id: ObjectKey,
    pub value: Value,
}

/// A document marker line: `---` alone or followed by whitespace (and then possibly content of
/// the next document), or the document end marker `...`.
fn marker(line: &str) -> Option<&str> {
    let line = line.trim_end_matches(['\r', '\n']);
    if line == "..." {
        return Some("");
    }
    let rest = line.strip_prefix("---")?;
    if rest.is_empty() {
        Some("")
    } else if rest.starts_with([' ', '\t']) {
        Some(rest.trim_start())
    } else {
        None
    }
}

/// Splits `text` into documents and parses each; empty, whitespace-only and comment-only
/// documents are skipped. `source` names the input in errors. The whole text is held to the default
/// [`Budget`].
pub fn parse_documents(source: &str, text: &str) -> Result<Vec<Document>, Error> {
    parse_documents_with_budget(source, text, &Budget::default())
}

/// [`parse_documents`] with an explicit budget for the whole text, all documents together: its size,
/// its nodes, what its aliases expand to and its depth are metered before a document is deserialized
/// (see [`crate::budget`]), so an input over budget costs an error, not the memory it asks for.
pub fn parse_documents_with_budget(
    source: &str,
    text: &str,
    budget: &Budget,
) -> Result<Vec<Document>, Error> {
    let source: Arc<str> = Arc::from(source);
    budget
        .check_bytes(text.len())
        .map_err(|exceeded| Error::Budget {
            location: source.to_string(),
            exceeded,
        })?;
    let mut meter = Meter::new(*budget);
    let options = budget.deserializer_options();
    let mut out = Vec::new();
    let mut chunk = String::new();
    let mut chunk_line = 1usize;
    let mut index = 0usize;
    let mut flush =
        |chunk: &mut String,
         chunk_line: usize,
         index: &mut usize,
         out: &mut Vec<Document>|
         -> Result<(), Error> {
            if chunk.trim().is_empty() {
                chunk.clear();
                return Ok(());
            }
            let location = DocLocation {
                source: source.clone(),
                index: *index,
                line: chunk_line,
            };
            let metered = meter.document(chunk);
            if let Err(MeterError::Exceeded(exceeded)) = metered {
                return Err(Error::Budget {
                    location: location.to_string(),
                    exceeded,
                });
            }
            let value: Value = serde_saphyr::from_str_with_options(chunk, options.clone())
                .map_err(|e| Error::Yaml {
                    location: location.clone(),
                    message: render_error(&e, chunk_line),
                })?;
            // The deserializer reads what the meter could not: never let such a document through
            // unmetered.
            if let Err(MeterError::Syntax(message)) = metered {
                return Err(Error::Yaml { location, message });
            }
            chunk.clear();
            if value.is_null() {
                return Ok(());
            }
            *index += 1;
            out.push(Document { location, value });
            Ok(())
        };
    for (lineno, line) in text.split_inclusive('\n').enumerate() {
        if let Some(rest) = marker(line) {
            flush(&mut chunk, chunk_line, &mut index, &mut out)?;
            chunk_line = lineno + 2;
            if !rest.is_empty() {
                chunk_line = lineno + 1;
                chunk.push_str(rest);
                chunk.push('\n');
            }
        } else {
            chunk.push_str(line);
        }
    }
    flush(&mut chunk, chunk_line, &mut index, &mut out)?;
    Ok(out)
}

fn render_error(e: &serde_saphyr::Error, chunk_line: usize) -> String {
    let msg = e.to_string();
    match e.location() {
        Some(loc) if loc.line() > 0 => {
            let abs = chunk_line as u64 + loc.line() - 1;
            format!("{msg} (line {abs} of the file)")
        }
        _ => msg,
    }
}

/// Parses `text` and checks that every document is a Kubernetes object.
pub fn parse_objects(source: &str, text: &str) -> Result<Vec<Object>, Error> {
    parse_documents(source, text)?
        .into_iter()
        .map(Object::try_from)
        .collect()
}

impl TryFrom<Document> for Object {
    type Error = Error;

    fn try_from(doc: Document) -> Result<Self, Error> {
        let Document { location, value } = doc;
        let Some(map) = value.as_object() else {
            return Err(Error::InvalidObject {
                location,
                identity: String::new(),
                message: format!("document is a {}, not a map", type_name(&value)),
            });
        };
        let kind = map.get("kind").and_then(Value::as_str);
        let name = map
            .get("metadata")
            .and_then(|m| m.get("name"))
            .and_then(Value::as_str);
        let identity = match (kind, name) {
            (Some(k), Some(n)) => format!("{k} {n}"),
            (Some(k), None) => k.to_owned(),
            (None, Some(n)) => format!("name {n}"),
            (None, None) => String::new(),
        };
        let missing = if map.get("apiVersion").and_then(Value::as_str).is_none() {
            Some("apiVersion")
        } else if kind.is_none() {
            Some("kind")
        } else if name.is_none() {
            Some("metadata.name")
        } else {
            None
        };
        if let Some(field) = missing {
            return Err(Error::InvalidObject {
                location,
                identity,
                message: format!("object has no string field {field}"),
            });
        }
        let id = ObjectKey::from_value(&value).expect("checked above");
        Ok(Object {
            location,
            id,
            value,
        })
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "list",
        Value::Object(_) => "map",
    }
}

/// Serializes `value` with map keys in sorted order, whatever the `Map` implementation.
struct Sorted<'a>(&'a Value);

impl Serialize for Sorted<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                let mut m = s.serialize_map(Some(keys.len()))?;
                for k in keys {
                    m.serialize_entry(k, &Sorted(&map[k]))?;
                }
                m.end()
            }
            Value::Array(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(&Sorted(item))?;
                }
                seq.end()
            }
            other => other.serialize(s),
        }
    }
}

fn ser_options() -> serde_saphyr::SerializerOptions {
    // Literal block scalars for multi-line strings keep the review copy and `data.components`
    // readable. Long single-line strings stay on one line (no folding at any width), as
    // sigs.k8s.io/yaml writes a base64 payload or a CRD description: folding would buy nothing
    // and make the output depend on a wrap column. YAML-1.1 quoting (`yaml_12: false`) keeps
    // strings like "yes"/"on" strings for Go readers (sigs.k8s.io/yaml follows YAML 1.1).
    serde_saphyr::ser_options! {
        indent_step: 2,
        compact_list_indent: true,
        prefer_block_scalars: true,
        folded_wrap_chars: usize::MAX,
        yaml_12: false,
    }
}

/// One document, keys sorted, ending in exactly one newline. `what` names the value in errors.
pub fn to_yaml(what: &str, value: &Value) -> Result<String, Error> {
    let mut s =
        serde_saphyr::to_string_with_options(&Sorted(value), ser_options()).map_err(|e| {
            Error::Serialize {
                object: what.to_owned(),
                message: e.to_string(),
            }
        })?;
    let trimmed = s.trim_end_matches('\n').len();
    s.truncate(trimmed);
    s.push('\n');
    Ok(s)
}

/// Documents joined by a line `---`, exactly one trailing newline; empty input gives "".
pub fn to_multi_yaml<'a>(values: impl IntoIterator<Item = &'a Value>) -> Result<String, Error> {
    let mut out = String::new();
    for (i, v) in values.into_iter().enumerate() {
        if i > 0 {
            out.push_str("---\n");
        }
        let what =
            ObjectKey::from_value(v).map_or_else(|| format!("document {i}"), |r| r.to_string());
        out.push_str(&to_yaml(&what, v)?);
    }
    Ok(out)
}

/// Where a scalar value starts in its source (see [`scalar_position`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ScalarPosition {
    /// 1-based line of the value's first line in a literal block scalar (`|`), else of the
    /// scalar's first character.
    pub line: usize,
    /// A literal block scalar: line `i` of the value is source line `line + i`. Other styles fold
    /// or escape line breaks, so only their first line is known.
    pub literal: bool,
}

impl ScalarPosition {
    /// The source line of line `index` (0-based) of the value: exact for a literal block scalar,
    /// else the line where the value starts.
    pub(crate) fn line_of(&self, index: usize) -> usize {
        if self.literal {
            self.line + index
        } else {
            self.line
        }
    }
}

/// The position of the scalar at `path` (map keys from the root) in the document of `text` that
/// starts at 1-based line `first_line` (a [`DocLocation::line`]); `None` when there is no scalar
/// there. For error messages that point into a value (a line of a ConfigMap's data), which the
/// parsed [`Document`] no longer knows.
pub(crate) fn scalar_position(
    text: &str,
    first_line: usize,
    path: &[&str],
) -> Option<ScalarPosition> {
    use serde_saphyr::granit_parser::{Event, Parser, ScalarStyle};
    let offset: usize = text
        .split_inclusive('\n')
        .take(first_line.saturating_sub(1))
        .map(str::len)
        .sum();
    // A map's key while its value is being read; `None` while the next key is awaited.
    enum Frame {
        Map(Option<String>),
        Seq,
    }
    fn value_done(stack: &mut [Frame]) {
        if let Some(Frame::Map(key)) = stack.last_mut() {
            *key = None;
        }
    }
    let at_path = |stack: &[Frame]| {
        stack.len() == path.len()
            && stack
                .iter()
                .zip(path)
                .all(|(f, p)| matches!(f, Frame::Map(Some(k)) if k == p))
    };
    let mut stack: Vec<Frame> = Vec::new();
    for item in Parser::new_from_str(text.get(offset..)?) {
        let (event, span) = item.ok()?;
        match event {
            Event::DocumentEnd => return None,
            Event::MappingStart(..) => stack.push(Frame::Map(None)),
            Event::SequenceStart(..) => stack.push(Frame::Seq),
            Event::MappingEnd | Event::SequenceEnd => {
                stack.pop();
                value_done(&mut stack);
            }
            Event::Scalar(value, style, ..) => match stack.last_mut() {
                Some(Frame::Map(key @ None)) => *key = Some(value.into_owned()),
                _ => {
                    if at_path(&stack) {
                        let literal = style == ScalarStyle::Literal;
                        // A literal block's span starts at its first line with content; the
                        // empty lines before it are the value's leading line breaks.
                        let leading = if literal {
                            value.bytes().take_while(|b| *b == b'\n').count()
                        } else {
                            0
                        };
                        return Some(ScalarPosition {
                            line: (span.start.line() + first_line - 1).saturating_sub(leading),
                            literal,
                        });
                    }
                    value_done(&mut stack);
                }
            },
            Event::Alias(_) => value_done(&mut stack),
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod list_tests {
    use super::*;

    #[test]
    fn lists_are_read_item_by_item() {
        let text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\napiVersion: v1\nkind: List\nmetadata: {resourceVersion: \"\"}\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: b}}\n- {apiVersion: v1, kind: Secret, metadata: {name: c}}\n---\napiVersion: v1\nkind: List\nitems: []\n";
        let docs = unwrap_lists(parse_documents("x.yaml", text).unwrap());
        let names: Vec<(&str, String)> = docs
            .iter()
            .map(|d| {
                (
                    d.value["metadata"]["name"].as_str().unwrap(),
                    d.location.to_string(),
                )
            })
            .collect();
        assert_eq!(
            names,
            [
                ("a", "x.yaml: document 0 (line 1)".to_string()),
                ("b", "x.yaml: document 1 (line 5), item 0".to_string()),
                ("c", "x.yaml: document 1 (line 5), item 1".to_string()),
            ]
        );
        // A List of another group, or one whose items are not a list, is left as it is.
        let text = "apiVersion: example.com/v1\nkind: List\nitems: []\n---\napiVersion: v1\nkind: List\nitems: {a: 1}\n";
        let docs = unwrap_lists(parse_documents("y.yaml", text).unwrap());
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[1].value["items"]["a"], 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn splits_documents_and_skips_empty_ones() {
        let text = "---\n# only a comment\n---\napiVersion: v1\nkind: A\nmetadata:\n  name: a\n---\n\n---\napiVersion: v1\nkind: B\nmetadata: {name: b}\n...\n";
        let docs = parse_documents("in.yaml", text).unwrap();
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[0].location.index, 0);
        assert_eq!(docs[0].location.line, 4);
        assert_eq!(docs[0].value["kind"], "A");
        assert_eq!(docs[1].location.index, 1);
        assert_eq!(docs[1].location.line, 11);
        assert_eq!(docs[1].value["metadata"]["name"], "b");
    }

    #[test]
    fn indented_marker_inside_block_scalar_is_content() {
        let text = "a: |\n  x\n  ---\n  y\n";
        let docs = parse_documents("in.yaml", text).unwrap();
        assert_eq!(docs.len(), 1);
        assert_eq!(docs[0].value["a"], "x\n---\ny\n");
    }

    #[test]
    fn invalid_yaml_names_source_index_and_line() {
        let text =
            "apiVersion: v1\nkind: A\nmetadata: {name: a}\n---\napiVersion: v1\nkind: [unclosed\n";
        let err = parse_documents("comp.yaml", text).unwrap_err().to_string();
        assert!(err.contains("comp.yaml: document 1 (line 5)"), "{err}");
        assert!(err.contains("invalid YAML"), "{err}");
    }

    #[test]
    fn object_checks_name_what_is_missing() {
        let cases = [
            ("- a\n- b\n", "document is a list, not a map", ""),
            (
                "kind: Service\nmetadata: {name: s}\n",
                "no string field apiVersion",
                "(Service s)",
            ),
            (
                "apiVersion: v1\nmetadata: {name: s}\n",
                "no string field kind",
                "(name s)",
            ),
            (
                "apiVersion: v1\nkind: Service\n",
                "no string field metadata.name",
                "(Service)",
            ),
        ];
        for (text, want, identity) in cases {
            let err = parse_objects("x.yaml", text).unwrap_err().to_string();
            assert!(err.contains(want), "{err}");
            assert!(err.contains(identity), "{err}");
            assert!(err.starts_with("x.yaml: document 0 (line 1)"), "{err}");
        }
    }

    #[test]
    fn serialization_is_sorted_block_style_and_round_trips_tricky_scalars() {
        let v = json!({
            "z": "true", "a": "1.0", "e": "", "n": "null", "y": "yes", "o": "0755",
            "multi": "line one\nline two\n", "multi_no_nl": "a\n b", "x-kubernetes-preserve-unknown-fields": true,
            "list": [1, 2.5, {"b": 1, "a": [] }], "empty": {}, "colon": "a: b", "hash": "# c", "star": "*x",
            "lead": " space", "trail": "space ", "num": 12345678901234i64, "neg": -1, "tilde": "~",
            "long": format!("{}end", "word ".repeat(40)),
        });
        let s = to_yaml("t", &v).unwrap();
        assert!(s.ends_with('\n') && !s.ends_with("\n\n"), "{s}");
        assert!(s.starts_with("a: "), "{s}");
        let back: Value = serde_saphyr::from_str(&s).unwrap();
        assert_eq!(back, v, "{s}");
        assert!(
            s.contains("\nlong: word word"),
            "long strings are not folded: {s}"
        );
        assert!(
            s.contains("\nmulti: |\n  line one\n  line two\n"),
            "literal block: {s}"
        );
        assert!(s.contains("\nz: \"true\"\n"), "{s}");
    }

    #[test]
    fn the_budget_covers_all_documents_and_names_where_it_ran_out() {
        use crate::budget::{BudgetExceeded, Limit};
        let budget = Budget {
            max_nodes: 30,
            ..Budget::default()
        };
        // 7 nodes per document: mapping, apiVersion, v1, kind, A, metadata, {name: x} (3).
        let doc = |n: usize| format!("apiVersion: v1\nkind: A\nmetadata: {{name: a{n}}}\n");
        let text = (0..5).map(doc).collect::<Vec<_>>().join("---\n");
        let err = parse_documents_with_budget("cm", &text, &budget).unwrap_err();
        match err {
            Error::Budget { location, exceeded } => {
                assert_eq!(location, "cm: document 3 (line 13)");
                assert_eq!(
                    exceeded,
                    BudgetExceeded {
                        limit: Limit::Nodes,
                        max: 30
                    }
                );
            }
            other => panic!("{other}"),
        }
        assert_eq!(
            parse_documents_with_budget("cm", &text, &Budget::default())
                .unwrap()
                .len(),
            5
        );
        // The whole text's size is checked before anything is parsed.
        let small = Budget {
            max_bytes: 10,
            ..Budget::default()
        };
        let err = parse_documents_with_budget("cm", &text, &small)
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "cm: over budget: more than 10 bytes (components text, aliases expanded) in all documents together"
        );
    }

    #[test]
    fn an_alias_bomb_costs_an_error() {
        let mut bomb =
            String::from("apiVersion: v1\nkind: A\nmetadata: {name: a}\nl0: &l0 [x, x]\n");
        for i in 1..=40 {
            bomb.push_str(&format!("l{i}: &l{i} [*l{}, *l{}]\n", i - 1, i - 1));
        }
        let err = parse_documents("cm", &bomb).unwrap_err().to_string();
        assert!(err.contains("YAML nodes added by aliases"), "{err}");
        // A few aliases are fine.
        let docs = parse_documents("cm", "a: &x {k: v}\nb: *x\n").unwrap();
        assert_eq!(docs[0].value["b"]["k"], "v");
    }

    #[test]
    fn scalar_positions_point_into_the_source() {
        let text = "# a comment\napiVersion: v1\nkind: ConfigMap\ndata:\n  list: |\n    a\n\n    b\n  other: [x]\n  plain: one\n  blank: |\n\n\n    c\n---\nkind: Second\ndata:\n  list: \"q\\nr\"\n";
        let docs = parse_documents("f", text).unwrap();
        let first = docs[0].location.line;
        let list = scalar_position(text, first, &["data", "list"]).unwrap();
        assert_eq!(
            list,
            ScalarPosition {
                line: 6,
                literal: true
            }
        );
        // Value line 2 ("b") is file line 8: literal lines are source lines, blank ones too.
        assert_eq!(docs[0].value["data"]["list"], "a\n\nb\n");
        assert_eq!(list.line_of(2), 8);
        // Leading empty lines of a literal block are lines of the value too.
        let blank = scalar_position(text, first, &["data", "blank"]).unwrap();
        assert_eq!((blank.line_of(0), blank.line_of(2)), (12, 14));
        assert_eq!(
            scalar_position(text, first, &["data", "plain"]),
            Some(ScalarPosition {
                line: 10,
                literal: false
            })
        );
        // Not a scalar, absent, or in another document: none.
        assert_eq!(scalar_position(text, first, &["data", "other"]), None);
        assert_eq!(scalar_position(text, first, &["data"]), None);
        assert_eq!(scalar_position(text, first, &["kind", "x"]), None);
        // The second document starts after its marker; its quoted value has one known line.
        let second = scalar_position(text, docs[1].location.line, &["data", "list"]).unwrap();
        assert_eq!(
            second,
            ScalarPosition {
                line: 18,
                literal: false
            }
        );
        assert_eq!(second.line_of(1), 18);
    }

    #[test]
    fn multi_yaml_joins_with_marker_lines() {
        let a = json!({"k": 1});
        let b = json!({"k": 2});
        let s = to_multi_yaml([&a, &b]).unwrap();
        assert_eq!(s, "k: 1\n---\nk: 2\n");
        let docs = parse_documents("s", &s).unwrap();
        assert_eq!(
            docs.iter().map(|d| d.value.clone()).collect::<Vec<_>>(),
            vec![a, b]
        );
        assert_eq!(to_multi_yaml([]).unwrap(), "");
    }
}
