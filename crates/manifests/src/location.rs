//! Where a document of the input stands, as every error and every object names it.

use std::fmt;
use std::sync::Arc;

/// Where a document came from: the source name given by the caller (usually a file name), the
/// 0-based index of the document among the non-empty documents of that source, and the 1-based
/// line where it starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocLocation {
    pub source: Arc<str>,
    pub index: usize,
    pub line: usize,
}

impl DocLocation {
    /// A location for objects that do not come from a parsed input (e.g. generated ones).
    pub fn generated(what: &str) -> Self {
        DocLocation {
            source: Arc::from(what),
            index: 0,
            line: 0,
        }
    }
}

impl fmt::Display for DocLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}", self.source)
        } else {
            write!(
                f,
                "{}: document {} (line {})",
                self.source, self.index, self.line
            )
        }
    }
}
