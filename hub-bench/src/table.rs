//! Plain text tables for the terminal: the first column left-aligned, the
//! others right-aligned, columns separated by two spaces, a dashed rule under
//! the header.

/// A table being built row by row.
#[derive(Debug, Clone, Default)]
pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column titles.
    pub fn new<S: Into<String>>(header: impl IntoIterator<Item = S>) -> Self {
        Table {
            header: header.into_iter().map(Into::into).collect(),
            rows: Vec::new(),
        }
    }

    /// Adds a row. Missing cells render empty; extra cells are kept and widen
    /// the table.
    pub fn row<S: Into<String>>(&mut self, cells: impl IntoIterator<Item = S>) -> &mut Self {
        self.rows.push(cells.into_iter().map(Into::into).collect());
        self
    }

    /// Renders the table; every line ends with a newline.
    pub fn render(&self) -> String {
        let columns = self
            .rows
            .iter()
            .map(Vec::len)
            .chain([self.header.len()])
            .max()
            .unwrap_or(0);
        let mut widths = vec![0usize; columns];
        for row in std::iter::once(&self.header).chain(&self.rows) {
            for (i, cell) in row.iter().enumerate() {
                widths[i] = widths[i].max(cell.chars().count());
            }
        }
        let mut out = String::new();
        let mut line = |row: &[String]| {
            let mut text = String::new();
            for (i, width) in widths.iter().enumerate() {
                let cell = row.get(i).map_or("", String::as_str);
                let pad = width - cell.chars().count();
                if i > 0 {
                    text.push_str("  ");
                }
                if i == 0 {
                    text.push_str(cell);
                    text.extend(std::iter::repeat_n(' ', pad));
                } else {
                    text.extend(std::iter::repeat_n(' ', pad));
                    text.push_str(cell);
                }
            }
            out.push_str(text.trim_end());
            out.push('\n');
        };
        line(&self.header);
        let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
        line(&rule);
        for row in &self.rows {
            line(row);
        }
        out
    }
}

/// One column of a table with a row per item: its title and its cell.
pub type Column<'a, T> = (&'a str, &'a dyn Fn(&T) -> String);

/// Renders a table with one row per item of `items`, a cell per column.
pub fn rows<'t, T: 't>(
    items: impl IntoIterator<Item = &'t T>,
    columns: &[Column<'_, T>],
) -> String {
    let mut t = Table::new(columns.iter().map(|(title, _)| *title));
    for item in items {
        t.row(columns.iter().map(|(_, cell)| cell(item)));
    }
    t.render()
}

/// Formats an optional millisecond figure with two decimals, `-` when absent.
pub fn ms(value: Option<f64>) -> String {
    value.map_or_else(|| "-".to_owned(), |v| format!("{v:.2}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_aligned_columns() {
        let mut t = Table::new(["scenario", "ok", "median ms"]);
        t.row(["project-agents-list", "5/5", "12.30"]);
        t.row(["global", "4/5"]);
        let expected = "\
scenario              ok  median ms
-------------------  ---  ---------
project-agents-list  5/5      12.30
global               4/5
";
        assert_eq!(t.render(), expected);
    }

    #[test]
    fn renders_a_row_per_item() {
        let items = [("a", 1), ("bb", 22)];
        let columns: [Column<'_, (&str, i32)>; 2] = [
            ("name", &|item| item.0.to_owned()),
            ("n", &|item| item.1.to_string()),
        ];
        assert_eq!(
            rows(&items, &columns),
            "name   n\n----  --\na      1\nbb    22\n"
        );
    }

    #[test]
    fn formats_ms() {
        assert_eq!(ms(Some(1.005)), "1.00");
        assert_eq!(ms(Some(12.3456)), "12.35");
        assert_eq!(ms(None), "-");
    }
}
