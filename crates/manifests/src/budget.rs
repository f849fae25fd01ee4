//! The resource budget of one provider's components: what reading a transport ConfigMap may cost,
//! whatever its content.
//!
//! A transport ConfigMap is untrusted input to the most privileged process of the cluster, and a
//! megabyte of it can ask for gigabytes: a zstd frame that inflates without end, a YAML alias bomb
//! (`a: &a [x, x]`, `b: &b [*a, *a]`, … doubles at every line), a schema nested thousands deep.
//! Limits per document do not help against a payload that spreads over many documents, so every
//! limit here but one is for **all documents of one input together**; the one per document bounds
//! what a single object costs in the steps that copy it (apply, compare, the watch cache):
//!
//! | limit | what it bounds | enforced in |
//! |---|---|---|
//! | [`Budget::max_bytes`] | decompressed components; scalar text after alias expansion | [`crate::transport`] decoder, [`crate::yaml`] reader |
//! | [`Budget::max_nodes`] | YAML nodes (scalars, sequences, mappings) as written | [`crate::yaml`] reader |
//! | [`Budget::max_object_nodes`] | YAML nodes of one document (one object), aliases expanded | [`crate::yaml`] reader |
//! | [`Budget::max_alias_nodes`] | nodes that aliases add when expanded | [`crate::yaml`] reader |
//! | [`Budget::max_depth`] | nesting of sequences and mappings, aliases expanded | [`crate::yaml`] reader |
//!
//! The YAML limits are checked by [`Meter`], a streaming pass over the parser's events that keeps
//! no document tree: the cost of every anchor (its nodes, bytes and depth, with the aliases inside
//! it already expanded) is recorded when the anchor closes, and an alias adds that cost. The input
//! is refused the moment a limit is passed, before anything of the size it asks for is allocated;
//! only input that fits is then deserialized.

use std::collections::HashMap;
use std::fmt;

use serde_saphyr::granit_parser::{self, Event, Parser};

/// Limits for one input (one provider's components), all documents together. The defaults fit the
/// largest real provider with room to spare; see [`Budget::default`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// Bytes of the components text (after decompression), plus the scalar bytes that aliases add.
    pub max_bytes: usize,
    /// YAML nodes as written: every scalar (keys included), sequence and mapping.
    pub max_nodes: usize,
    /// YAML nodes of one document, aliases expanded. The apply steps hold a few copies of one object
    /// at a time (the object sent, the server's answer, the watch cache's copy): without this limit,
    /// all of [`Budget::max_nodes`] in one object would be copied each time (~26 MiB per copy for the
    /// costliest shape).
    pub max_object_nodes: usize,
    /// Nodes added by expanding aliases.
    pub max_alias_nodes: usize,
    /// Nesting depth of sequences and mappings, aliases expanded.
    pub max_depth: usize,
}

impl Budget {
    /// [`Budget::max_bytes`] of the default budget, for readers that refuse larger inputs before
    /// reading them.
    pub const DEFAULT_MAX_BYTES: usize = 4 * 1024 * 1024;
}

impl Default for Budget {
    /// The largest real provider, core (cluster-api v1.11, `../shared/fixtures`), has 1.37 MB of
    /// components, 31,914 nodes, depth 25 and no alias at all (kustomize and manifests-gen never
    /// write one). The defaults are three times that (core grew by about half in the last releases),
    /// 2.5 times the depth (schemas grow wider, not much deeper), and a small allowance of aliases for
    /// hand-written bundles. The largest real object, AWS's `awsmanagedcontrolplanes` CRD, has 6,415
    /// nodes (core's `clusterclasses` 6,155); one object may have three times that.
    /// [`Budget::memory_bound`] of the defaults is 66 MiB.
    fn default() -> Self {
        Budget {
            max_bytes: Self::DEFAULT_MAX_BYTES,
            max_nodes: 100_000,
            max_object_nodes: 20_000,
            max_alias_nodes: 10_000,
            max_depth: 64,
        }
    }
}

/// Which limit of a [`Budget`] an input passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    Bytes,
    Nodes,
    ObjectNodes,
    AliasNodes,
    Depth,
}

impl Limit {
    fn describe(self) -> &'static str {
        match self {
            Limit::Bytes => "bytes (components text, aliases expanded) in all documents together",
            Limit::Nodes => "YAML nodes in all documents together",
            Limit::ObjectNodes => "YAML nodes (aliases expanded) in one document",
            Limit::AliasNodes => "YAML nodes added by aliases in all documents together",
            Limit::Depth => "levels of nesting in all documents together",
        }
    }
}

/// An input that does not fit its budget.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("over budget: more than {max} {}", .limit.describe())]
pub struct BudgetExceeded {
    pub limit: Limit,
    pub max: usize,
}

impl Budget {
    /// The most heap that decoding and parsing one input under this budget takes at its peak: a few
    /// copies of the text (compressed payload, the decompressed text's buffer, the document being
    /// parsed, the parsed scalars) and at most 320 bytes per node of the parsed documents (the worst
    /// measured is 281, for deeply nested one-entry maps; a list of numbers is 59). The fuzz targets
    /// (`crates/manifests/tests/fuzz.rs`) fail when any input takes more. A zstd frame's window is not
    /// part of it: the decoder never allocates one (see [`crate::transport::decompress_zstd`]); its
    /// context (about 100 KiB, libzstd's own) is in the fixed part.
    pub fn memory_bound(&self) -> usize {
        self.max_bytes
            .saturating_mul(6)
            .saturating_add(
                self.max_nodes
                    .saturating_add(self.max_alias_nodes)
                    .saturating_mul(320),
            )
            .saturating_add(256 * 1024)
    }

    /// Checks the size of a whole input (before any parsing).
    pub(crate) fn check_bytes(&self, len: usize) -> Result<(), BudgetExceeded> {
        if len > self.max_bytes {
            return Err(BudgetExceeded {
                limit: Limit::Bytes,
                max: self.max_bytes,
            });
        }
        Ok(())
    }

    /// serde-saphyr options that never refuse what [`Meter`] admitted (the meter is the authority;
    /// these limits are a backstop that keeps the deserializer's own state bounded too).
    pub(crate) fn deserializer_options(&self) -> serde_saphyr::Options {
        let nodes = self.max_nodes.saturating_add(self.max_alias_nodes);
        serde_saphyr::options! {
            budget: serde_saphyr::budget! {
                max_depth: self.max_depth,
                max_nodes: self.max_nodes,
                // Every node is at most two events (start and end), plus the stream and document events.
                max_events: nodes.saturating_mul(2).saturating_add(16),
                max_aliases: self.max_alias_nodes,
                max_anchors: self.max_nodes,
                max_documents: self.max_nodes,
                max_total_scalar_bytes: self.max_bytes,
                // The meter accounts for aliases exactly; the ratio heuristic would only add noise.
                enforce_alias_anchor_ratio: false,
            },
            alias_limits: serde_saphyr::alias_limits! {
                max_total_replayed_events: self.max_alias_nodes.saturating_mul(2).saturating_add(2),
                max_replay_stack_depth: self.max_depth,
            },
            with_snippet: false,
        }
    }
}

/// What an input has used of its budget so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub bytes: usize,
    pub nodes: usize,
    pub(crate) alias_nodes: usize,
    /// The deepest nesting seen.
    pub depth: usize,
}

/// The cost of a node with everything below it, aliases expanded.
#[derive(Debug, Clone, Copy, Default)]
struct Cost {
    nodes: usize,
    bytes: usize,
    /// Levels of sequences/mappings at and below the node (0 for a scalar).
    depth: usize,
}

/// An open sequence or mapping: its anchor (0 when none) and its cost so far.
struct Open {
    anchor: usize,
    cost: Cost,
}

/// Why [`Meter::document`] stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MeterError {
    Exceeded(BudgetExceeded),
    /// The YAML does not scan or parse (the deserializer would say the same, with more detail).
    Syntax(String),
}

/// Meters YAML documents against one [`Budget`], all documents of an input together.
#[derive(Debug)]
pub struct Meter {
    budget: Budget,
    used: Usage,
    /// Nodes of the document being metered, aliases expanded.
    document_nodes: usize,
}

impl Meter {
    pub fn new(budget: Budget) -> Self {
        Meter {
            budget,
            used: Usage::default(),
            document_nodes: 0,
        }
    }

    #[cfg(test)]
    pub(crate) fn used(&self) -> Usage {
        self.used
    }

    /// Meters one more document (or stream of documents) of the same input. Nothing is allocated in
    /// proportion to what aliases would expand to.
    pub fn document(&mut self, text: &str) -> Result<(), MeterError> {
        self.add_bytes(text.len())?;
        self.document_nodes = 0;
        let options = granit_parser::options! {
            // The parser's own nesting limits are the depth budget: its scanner reads ahead of the
            // events (a flow collection can be scanned whole before its first event), so the
            // parser, not the event loop below, is the first to see a collection too deep.
            block_nesting_limit: self.budget.max_depth,
            flow_nesting_limit: self.budget.max_depth,
            emit_comments: false,
        };
        let mut anchors: HashMap<usize, Cost> = HashMap::new();
        let mut open: Vec<Open> = Vec::new();
        // What lies outside any collection (document roots): only its depth matters.
        let mut top = Cost::default();
        for item in Parser::new_from_str_with_options(text, options) {
            let (event, _span) = item.map_err(|e| match e.kind() {
                granit_parser::ErrorKind::RecursionLimitExceeded => {
                    MeterError::Exceeded(BudgetExceeded {
                        limit: Limit::Depth,
                        max: self.budget.max_depth,
                    })
                }
                _ => MeterError::Syntax(e.to_string()),
            })?;
            match event {
                Event::Scalar(value, _, anchor, _) => {
                    self.add_nodes(1)?;
                    let cost = Cost {
                        nodes: 1,
                        bytes: value.len(),
                        depth: 0,
                    };
                    if anchor != 0 {
                        anchors.insert(anchor, cost);
                    }
                    add_to(open.last_mut().map_or(&mut top, |o| &mut o.cost), cost);
                }
                Event::SequenceStart(_, anchor, _) | Event::MappingStart(_, anchor, _) => {
                    self.add_nodes(1)?;
                    self.reach_depth(open.len() + 1)?;
                    open.push(Open {
                        anchor,
                        cost: Cost {
                            nodes: 1,
                            bytes: 0,
                            depth: 1,
                        },
                    });
                }
                Event::SequenceEnd | Event::MappingEnd => {
                    let Some(closed) = open.pop() else {
                        return Err(MeterError::Syntax("unbalanced collection end".into()));
                    };
                    if closed.anchor != 0 {
                        anchors.insert(closed.anchor, closed.cost);
                    }
                    add_to(
                        open.last_mut().map_or(&mut top, |o| &mut o.cost),
                        closed.cost,
                    );
                }
                Event::Alias(id) => {
                    // The parser only emits aliases that refer to an anchor defined before them.
                    let cost = anchors.get(&id).copied().unwrap_or_default();
                    self.add_alias(cost)?;
                    self.reach_depth(open.len() + cost.depth)?;
                    add_to(open.last_mut().map_or(&mut top, |o| &mut o.cost), cost);
                }
                _ => {}
            }
        }
        Ok(())
    }

    fn add_bytes(&mut self, n: usize) -> Result<(), MeterError> {
        self.used.bytes = self.used.bytes.saturating_add(n);
        self.check(self.used.bytes, self.budget.max_bytes, Limit::Bytes)
    }

    fn add_nodes(&mut self, n: usize) -> Result<(), MeterError> {
        self.used.nodes = self.used.nodes.saturating_add(n);
        self.check(self.used.nodes, self.budget.max_nodes, Limit::Nodes)?;
        self.add_document_nodes(n)
    }

    fn add_document_nodes(&mut self, n: usize) -> Result<(), MeterError> {
        self.document_nodes = self.document_nodes.saturating_add(n);
        self.check(
            self.document_nodes,
            self.budget.max_object_nodes,
            Limit::ObjectNodes,
        )
    }

    fn add_alias(&mut self, cost: Cost) -> Result<(), MeterError> {
        self.used.alias_nodes = self.used.alias_nodes.saturating_add(cost.nodes);
        self.check(
            self.used.alias_nodes,
            self.budget.max_alias_nodes,
            Limit::AliasNodes,
        )?;
        self.add_document_nodes(cost.nodes)?;
        self.add_bytes(cost.bytes)
    }

    fn reach_depth(&mut self, depth: usize) -> Result<(), MeterError> {
        self.used.depth = self.used.depth.max(depth);
        self.check(depth, self.budget.max_depth, Limit::Depth)
    }

    fn check(&self, used: usize, max: usize, limit: Limit) -> Result<(), MeterError> {
        if used > max {
            return Err(MeterError::Exceeded(BudgetExceeded { limit, max }));
        }
        Ok(())
    }
}

/// Adds a child's cost to its parent's: nodes and bytes add up, depth is one level more than the
/// deepest child's.
fn add_to(parent: &mut Cost, child: Cost) {
    parent.nodes = parent.nodes.saturating_add(child.nodes);
    parent.bytes = parent.bytes.saturating_add(child.bytes);
    parent.depth = parent.depth.max(child.depth.saturating_add(1));
}

impl fmt::Display for Usage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} bytes, {} nodes, {} alias nodes, depth {}",
            self.bytes, self.nodes, self.alias_nodes, self.depth
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> Budget {
        Budget {
            max_bytes: 10_000,
            max_nodes: 100,
            max_object_nodes: 100,
            max_alias_nodes: 20,
            max_depth: 5,
        }
    }

    fn meter(budget: Budget, docs: &[&str]) -> Result<Usage, MeterError> {
        let mut m = Meter::new(budget);
        for d in docs {
            m.document(d)?;
        }
        Ok(m.used())
    }

    fn exceeded(limit: Limit, max: usize) -> Result<Usage, MeterError> {
        Err(MeterError::Exceeded(BudgetExceeded { limit, max }))
    }

    #[test]
    fn counts_nodes_depth_and_alias_expansion() {
        // a: {b: [1, 2]} → mapping, a, mapping, b, sequence, 1, 2 = 7 nodes, depth 3.
        let used = meter(small(), &["a: {b: [1, 2]}\n"]).unwrap();
        assert_eq!((used.nodes, used.alias_nodes, used.depth), (7, 0, 3));

        // The anchored sequence is 3 nodes of depth 1; two aliases add 6 nodes and reach depth 2.
        let used = meter(small(), &["x: &s [1, 2]\ny: *s\nz: *s\n"]).unwrap();
        assert_eq!((used.nodes, used.alias_nodes, used.depth), (7, 6, 2));
        assert_eq!(used.bytes, "x: &s [1, 2]\ny: *s\nz: *s\n".len() + 4);

        // A scalar anchor adds its bytes once per alias.
        let used = meter(small(), &["a: &v hello\nb: *v\n"]).unwrap();
        assert_eq!(used.alias_nodes, 1);
        assert_eq!(used.bytes, "a: &v hello\nb: *v\n".len() + 5);
    }

    #[test]
    fn every_limit_is_for_all_documents_together() {
        let doc = "k: [1, 2, 3, 4, 5, 6, 7, 8]\n"; // 11 nodes
        assert!(meter(small(), &[doc; 9]).is_ok());
        assert_eq!(meter(small(), &[doc; 10]), exceeded(Limit::Nodes, 100));

        let aliased = "a: &s [1, 2, 3]\nb: *s\n"; // 4 alias nodes each
        assert!(meter(small(), &[aliased; 5]).is_ok());
        assert_eq!(
            meter(small(), &[aliased; 6]),
            exceeded(Limit::AliasNodes, 20)
        );

        let text = "k: v\n".repeat(300); // 1500 bytes, 601 nodes
        let budget = Budget {
            max_nodes: 10_000,
            max_object_nodes: 10_000,
            ..small()
        };
        assert!(meter(budget, &[text.as_str(); 6]).is_ok());
        assert_eq!(
            meter(budget, &[text.as_str(); 7]),
            exceeded(Limit::Bytes, 10_000)
        );
    }

    #[test]
    fn one_document_has_a_limit_of_its_own() {
        let budget = Budget {
            max_object_nodes: 12,
            ..small()
        };
        let doc = "k: [1, 2, 3, 4, 5, 6, 7, 8]\n"; // 11 nodes
        // Nine such documents are 99 nodes in all: each fits on its own.
        assert!(meter(budget, &[doc; 9]).is_ok());
        assert_eq!(
            meter(budget, &[doc, "k: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\n"]),
            exceeded(Limit::ObjectNodes, 12)
        );
        // Nodes that aliases add count for the document that uses them.
        let aliased = "a: &s [1, 2, 3]\nb: *s\nc: *s\n"; // 7 written + 8 added
        assert_eq!(meter(budget, &[aliased]), exceeded(Limit::ObjectNodes, 12));
        assert_eq!(
            BudgetExceeded {
                limit: Limit::ObjectNodes,
                max: 12
            }
            .to_string(),
            "over budget: more than 12 YAML nodes (aliases expanded) in one document"
        );
    }

    #[test]
    fn an_alias_bomb_is_refused_before_it_expands() {
        // Each level doubles the one before: level 30 would be 2^30 nodes.
        let mut bomb = String::from("l0: &l0 [x, x]\n");
        for i in 1..=30 {
            bomb.push_str(&format!("l{i}: &l{i} [*l{}, *l{}]\n", i - 1, i - 1));
        }
        let budget = Budget::default();
        assert_eq!(
            meter(budget, &[&bomb]),
            exceeded(Limit::AliasNodes, budget.max_alias_nodes)
        );
        // The same with long scalars: bytes run out as well as nodes.
        let mut bytes_bomb = format!("s: &s {}\n", "y".repeat(1000));
        bytes_bomb.push_str("l0: &l0 [*s, *s]\n");
        for i in 1..=30 {
            bytes_bomb.push_str(&format!("l{i}: &l{i} [*l{}, *l{}]\n", i - 1, i - 1));
        }
        assert_eq!(
            meter(
                Budget {
                    max_alias_nodes: usize::MAX,
                    ..budget
                },
                &[&bytes_bomb]
            ),
            exceeded(Limit::Bytes, budget.max_bytes)
        );
    }

    #[test]
    fn depth_counts_expanded_aliases() {
        let deep = "a: [[[[1]]]]\n"; // mapping + 4 sequences = depth 5
        assert_eq!(meter(small(), &[deep]).unwrap().depth, 5);
        let block = "a:\n  b:\n    c:\n      d:\n      - 1\n"; // 4 mappings + 1 sequence
        assert_eq!(meter(small(), &[block]).unwrap().depth, 5);
        assert_eq!(
            meter(small(), &["a:\n  b:\n    c:\n      d:\n        e: [1]\n"]),
            exceeded(Limit::Depth, 5)
        );
        assert_eq!(
            meter(small(), &["a: [[[[[1]]]]]\n"]),
            exceeded(Limit::Depth, 5)
        );
        // An anchor of depth 3 used at depth 3 reaches 6.
        assert_eq!(
            meter(small(), &["a: &d [[[1]]]\nb: [[*d]]\n"]),
            exceeded(Limit::Depth, 5)
        );
        // Far deeper than the parser's own limits: still a budget error, not a crash.
        let very_deep = format!("{}{}\n", "[".repeat(100_000), "]".repeat(100_000));
        assert_eq!(
            meter(Budget::default(), &[&very_deep]),
            exceeded(Limit::Depth, 64)
        );
    }

    #[test]
    fn syntax_errors_are_reported_not_metered() {
        assert!(matches!(
            meter(small(), &["a: [unclosed\n"]),
            Err(MeterError::Syntax(_))
        ));
        assert!(matches!(
            meter(small(), &["a: *undefined\n"]),
            Err(MeterError::Syntax(_))
        ));
    }
}
