//! The tables of `capi-installer status`: for people with a title and aligned columns, for scripts as
//! lists of objects keyed by the columns.

use std::fmt::Write as _;

use serde_json::Value;

/// One table of the status: printed with its title for people, or as a list of objects keyed by its
/// columns (`LAST ERROR` → `lastError`) for scripts.
pub struct Table {
    /// The line above the table (none when empty).
    pub title: &'static str,
    /// What the title line says instead of a table without rows (a table without it prints its header).
    pub empty: &'static str,
    pub header: &'static [&'static str],
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// The title line and the table.
    pub fn text(&self) -> String {
        match (self.title, self.rows.is_empty() && !self.empty.is_empty()) {
            ("", _) => self.table(),
            (title, true) => format!("{title}: {}\n", self.empty),
            (title, false) => format!("{title}:\n{}", self.table()),
        }
    }

    /// The header and the rows in columns.
    pub fn table(&self) -> String {
        table(self.header, self.rows.clone())
    }

    /// The rows as objects keyed by the columns in lowerCamelCase.
    pub fn json(&self) -> Value {
        let keys: Vec<String> = self.header.iter().map(|h| camel(h)).collect();
        Value::Array(
            self.rows
                .iter()
                .map(|row| {
                    Value::Object(
                        keys.iter()
                            .cloned()
                            .zip(row.iter().map(|c| Value::String(c.clone())))
                            .collect(),
                    )
                })
                .collect(),
        )
    }
}

/// `LAST ERROR` → `lastError`.
fn camel(header: &str) -> String {
    let mut out = String::new();
    for (i, word) in header.split(' ').enumerate() {
        let lower = word.to_lowercase();
        if i == 0 {
            out.push_str(&lower);
        } else {
            let mut chars = lower.chars();
            out.extend(chars.next().map(|c| c.to_ascii_uppercase()));
            out.push_str(chars.as_str());
        }
    }
    out
}

/// Left-aligned columns; the last column is not padded.
pub fn table(header: &[&str], rows: Vec<Vec<String>>) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for row in &rows {
        for (i, cell) in row.iter().enumerate() {
            widths[i] = widths[i].max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let all = std::iter::once(header.iter().map(|h| h.to_string()).collect::<Vec<_>>()).chain(rows);
    for row in all {
        let last = row.len() - 1;
        for (i, cell) in row.iter().enumerate() {
            if i == last {
                out.push_str(cell);
            } else {
                let _ = write!(out, "{cell:<w$}  ", w = widths[i]);
            }
        }
        let trimmed = out.trim_end_matches(' ').len();
        out.truncate(trimmed);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_as_json_are_keyed_by_their_columns() {
        let t = Table {
            title: "T",
            empty: "none",
            header: &["PROVIDER", "LAST ERROR"],
            rows: vec![vec!["aws".into(), "-".into()]],
        };
        assert_eq!(
            t.json(),
            serde_json::json!([{"provider": "aws", "lastError": "-"}])
        );
        assert_eq!(t.text(), "T:\nPROVIDER  LAST ERROR\naws       -\n");
        let empty = Table { rows: vec![], ..t };
        assert_eq!(empty.text(), "T: none\n");
    }

    #[test]
    fn table_pads_all_but_the_last_column() {
        let out = table(
            &["A", "LONGER", "LAST"],
            vec![
                vec!["xyz".into(), "1".into(), "".into()],
                vec!["x".into(), "22".into(), "msg".into()],
            ],
        );
        assert_eq!(out, "A    LONGER  LAST\nxyz  1\nx    22      msg\n");
    }
}
