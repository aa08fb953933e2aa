//! Previews drawn the way people know them from a drive: Markdown rendered (raw HTML shown as
//! text, images as their words, links only to web and mail addresses, each `rel="noopener"`),
//! CSV and TSV as a table, JSON indented. Nothing here runs a file's content.

use pulldown_cmark::{html, CowStr, Event, LinkType, Options, Parser, Tag, TagEnd};

use super::thumbnails::extension;

/// A file's preview drawn from its text.
pub enum Rendered {
    /// Sanitised HTML.
    Markdown(String),
    Table(Table),
    Json(String),
}

/// A page of a CSV or TSV: the file's first row as the header, and the page's rows.
pub struct Table {
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

/// Whether a path is previewed as a table (its first line the header).
pub fn is_table(path: &str) -> bool {
    matches!(extension(path).as_str(), "csv" | "tsv")
}

/// Whether a path is previewed as indented JSON.
pub fn is_json(path: &str) -> bool {
    extension(path) == "json"
}

/// The rendered preview of a page of text (a table's header line first), by the path's
/// extension; JSON only when `whole` (the page is the whole file) and it parses, else it shows
/// as text.
pub fn render(path: &str, text: &str, whole: bool) -> Option<Rendered> {
    match extension(path).as_str() {
        "md" | "markdown" => Some(Rendered::Markdown(markdown(text))),
        "csv" => Some(Rendered::Table(table(text, b','))),
        "tsv" => Some(Rendered::Table(table(text, b'\t'))),
        "json" if whole => json(text).map(Rendered::Json),
        _ => None,
    }
}

/// Markdown as HTML that is safe to put in our page.
pub fn markdown(text: &str) -> String {
    let options = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    let events = Parser::new_ext(text, options).filter_map(|event| match event {
        // Raw HTML is shown as what it is: text.
        Event::Html(raw) | Event::InlineHtml(raw) => Some(Event::Text(raw)),
        Event::Start(Tag::Link { link_type, dest_url, .. }) => {
            let mail = if link_type == LinkType::Email { "mailto:" } else { "" };
            Some(Event::InlineHtml(CowStr::from(format!(
                "<a href=\"{mail}{}\" rel=\"noopener noreferrer\" target=\"_blank\">",
                attribute(safe_url(&dest_url))
            ))))
        }
        Event::End(TagEnd::Link) => Some(Event::InlineHtml(CowStr::Borrowed("</a>"))),
        // An image would be fetched from wherever it names: its words stay, the fetch does not.
        Event::Start(Tag::Image { .. }) | Event::End(TagEnd::Image) => None,
        other => Some(other),
    });
    let mut out = String::new();
    html::push_html(&mut out, events);
    out
}

/// A link's address when it leads to the web or a mail address (or within the page); `#`
/// otherwise (`javascript:`, `data:` and the like).
fn safe_url(url: &str) -> &str {
    let scheme = url.split_once(':').map(|(s, _)| s).filter(|s| !s.contains(['/', '?', '#']));
    match scheme {
        None => url,
        Some(s) if ["http", "https", "mailto"].iter().any(|k| s.eq_ignore_ascii_case(k)) => url,
        Some(_) => "#",
    }
}

/// Text made safe for a double-quoted attribute.
fn attribute(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Rows of a delimited text (RFC 4180 quoting: `"a,b"`, `""` for a quote, newlines inside quotes).
pub fn rows(text: &str, sep: u8) -> Vec<Vec<String>> {
    let sep = sep as char;
    let mut rows = Vec::new();
    let mut row = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            '"' if quoted => quoted = false,
            '"' if field.is_empty() => quoted = true,
            c if quoted => field.push(c),
            c if c == sep => row.push(std::mem::take(&mut field)),
            '\r' if chars.peek() == Some(&'\n') => {}
            '\n' => {
                row.push(std::mem::take(&mut field));
                rows.push(std::mem::take(&mut row));
            }
            c => field.push(c),
        }
    }
    if !field.is_empty() || !row.is_empty() {
        row.push(field);
        rows.push(row);
    }
    rows
}

fn table(text: &str, sep: u8) -> Table {
    let mut rows = rows(text, sep).into_iter();
    let header = rows.next().unwrap_or_default();
    Table { header, rows: rows.collect() }
}

/// JSON indented by two spaces, keys in the file's order and numbers as written; none when it
/// does not parse.
pub fn json(text: &str) -> Option<String> {
    serde_json::from_str::<serde::de::IgnoredAny>(text).ok()?;
    let mut out = String::with_capacity(text.len() * 2);
    let mut depth = 0usize;
    let (mut in_string, mut escaped) = (false, false);
    let newline = |out: &mut String, depth: usize| {
        out.push('\n');
        out.push_str(&"  ".repeat(depth));
    };
    let mut chars = text.trim().chars().peekable();
    while let Some(c) = chars.next() {
        if in_string {
            out.push(c);
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => {
                in_string = true;
                out.push(c);
            }
            '{' | '[' => {
                out.push(c);
                while chars.peek().is_some_and(|n| n.is_whitespace()) {
                    chars.next();
                }
                if matches!(chars.peek(), Some('}' | ']')) {
                    out.push(chars.next().unwrap_or_default());
                } else {
                    depth += 1;
                    newline(&mut out, depth);
                }
            }
            '}' | ']' => {
                depth = depth.saturating_sub(1);
                newline(&mut out, depth);
                out.push(c);
            }
            ',' => {
                out.push(c);
                newline(&mut out, depth);
            }
            ':' => out.push_str(": "),
            c if c.is_whitespace() => {}
            c => out.push(c),
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_shows_raw_html_as_text_and_links_only_to_the_web() {
        let html = markdown(
            "# Title\n\n<script>alert(1)</script>\n\nHi <b onclick=\"x()\">there</b> [site](https://example.org) \
             [bad](javascript:alert(1)) ![pic](https://tracker.example/p.png)",
        );
        assert!(html.contains("<h1>Title</h1>"), "{html}");
        assert!(!html.contains("<script") && html.contains("&lt;script&gt;"), "{html}");
        assert!(!html.contains("<b ") && html.contains("&lt;b onclick"), "{html}");
        assert!(html.contains("<a href=\"https://example.org\" rel=\"noopener noreferrer\""), "{html}");
        assert!(html.contains("<a href=\"#\" rel=\"noopener noreferrer\" target=\"_blank\">bad</a>"), "{html}");
        assert!(!html.contains("<img") && html.contains("pic"), "{html}");
    }

    #[test]
    fn delimited_rows_follow_rfc_4180_quoting() {
        let r = rows("a,b\r\n\"x, y\",\"say \"\"hi\"\"\"\n\"two\nlines\",3", b',');
        assert_eq!(r, vec![vec!["a", "b"], vec!["x, y", "say \"hi\""], vec!["two\nlines", "3"]]);
        assert_eq!(rows("a\tb\n1\t2\n", b'\t'), vec![vec!["a", "b"], vec!["1", "2"]]);
    }

    #[test]
    fn a_tables_first_line_is_its_header() {
        let t = table("n,sq\n1,1\n2,4", b',');
        assert_eq!(
            (t.header, t.rows),
            (vec!["n".to_string(), "sq".into()], vec![vec!["1".to_string(), "1".into()], vec!["2".into(), "4".into()]])
        );
    }

    #[test]
    fn json_is_indented_in_the_files_order() {
        let pretty = json(r#"{"b":[1,2.50,{}],"a":{"s":"x,{\"y\":1}"},"e":[]}"#).expect("json");
        assert_eq!(
            pretty,
            "{\n  \"b\": [\n    1,\n    2.50,\n    {}\n  ],\n  \"a\": {\n    \"s\": \"x,{\\\"y\\\":1}\"\n  },\n  \"e\": []\n}"
        );
        assert!(json("{not json").is_none());
    }
}
