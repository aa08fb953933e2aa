//! A text file read one bounded page of lines at a time (issue 49): what a host answered, without
//! the words it adds for an agent. sandboxd's `/workspaces/{id}/read` (pydantic-ai-backend 0.2.37,
//! `remote/_workspace.py` `read_workspace`) splits the decoded text into lines, joins
//! `lines[offset:offset+limit]` by `\n`, and when lines remain appends
//! `\n\n[... {remaining} more lines. Use offset={offset+limit} to read more.]`; an offset at or
//! past the last line answers `[End of file]`. The hint is told from a file's own lines by count:
//! without it an answer holds at most `limit` lines (`limit - 1` newlines), with it exactly
//! `limit + 1` newlines, and its offset must be the one asked plus `limit`.

/// One page of a text's lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextPage {
    /// The lines shown, joined by `\n` (at most [`PAGE_CHARS`] characters).
    pub text: String,
    /// The first line's index (0 for the file's first line).
    pub offset: u64,
    /// Lines on this page.
    pub lines: u64,
    /// The file's lines, when the read said.
    pub total: Option<u64>,
    /// Lines follow this page.
    pub more: bool,
    /// The page was longer than [`PAGE_CHARS`] and is cut there.
    pub cut: bool,
}

/// The most characters a page shows (a file of a few very long lines stays a bounded page).
pub const PAGE_CHARS: usize = 256 * 1024;

/// The answer sandboxd gives past a file's last line.
pub const END_OF_FILE: &str = "[End of file]";

impl TextPage {
    /// A page with nothing on it at `offset` (past the end).
    pub fn past_end(offset: u64) -> TextPage {
        TextPage { text: String::new(), offset, lines: 0, total: None, more: false, cut: false }
    }

    /// Lines `offset..offset+limit` of a text known whole: the total is exact.
    pub fn of_whole(text: &str, offset: u64, limit: u64) -> TextPage {
        let all: Vec<&str> = text.lines().collect();
        let total = all.len() as u64;
        let shown: Vec<&str> = all.iter().skip(offset as usize).take(limit as usize).copied().collect();
        let lines = shown.len() as u64;
        TextPage::new(shown.join("\n"), offset, lines, Some(total), offset + lines < total)
    }

    /// Lines from the first bytes of a file that goes on past them (the last, partial line is
    /// dropped): the total is unknown and more follows.
    pub fn of_head(head: &[u8], limit: u64) -> TextPage {
        let text = String::from_utf8_lossy(head);
        let complete = text.rsplit_once('\n').map_or("", |(kept, _)| kept);
        let shown: Vec<&str> = complete.lines().take(limit as usize).collect();
        let lines = shown.len() as u64;
        TextPage::new(shown.join("\n"), 0, lines, None, true)
    }

    /// sandboxd's answer to a read of `limit` lines from `offset`, its hint taken off. `None` for
    /// [`END_OF_FILE`], which a file's only remaining line could also say (the caller asks again).
    pub fn of_sandboxd(answer: String, offset: u64, limit: u64) -> Option<TextPage> {
        if answer == END_OF_FILE {
            return None;
        }
        let newlines = answer.matches('\n').count() as u64;
        if limit > 0 && newlines == limit + 1 {
            if let Some(remaining) = hint(&answer, offset + limit) {
                let chunk = answer.rsplit_once("\n\n").map_or("", |(chunk, _)| chunk);
                return Some(TextPage::new(chunk.to_string(), offset, limit, Some(offset + limit + remaining), true));
            }
        }
        // No hint: the read reached the end, so the total is exact.
        let lines = newlines + 1;
        Some(TextPage::new(answer, offset, lines, Some(offset + lines), false))
    }

    fn new(mut text: String, offset: u64, lines: u64, total: Option<u64>, more: bool) -> TextPage {
        let cut = text.len() > PAGE_CHARS;
        if cut {
            let mut at = PAGE_CHARS;
            while !text.is_char_boundary(at) {
                at -= 1;
            }
            text.truncate(at);
        }
        TextPage { text, offset, lines, total, more, cut }
    }

    /// The offset of the page after this one.
    pub fn next(&self) -> u64 {
        self.offset + self.lines
    }

    /// The file's lines estimated from its size, by this page's bytes per line, when the read
    /// did not say (a head read).
    pub fn estimate(&self, size: u64) -> Option<u64> {
        if self.total.is_some() || self.lines == 0 || self.cut {
            return None;
        }
        // The page's lines with their newlines.
        let bytes = self.text.len() as u64 + 1;
        Some((size.saturating_mul(self.lines) / bytes.max(1)).max(self.offset + self.lines))
    }
}

/// The remaining lines the library's hint at the end of `answer` names, when it is that hint for
/// a read ending at `end`.
fn hint(answer: &str, end: u64) -> Option<u64> {
    let (_, tail) = answer.rsplit_once("\n\n")?;
    let rest = tail.strip_prefix("[... ")?.strip_suffix(" to read more.]")?;
    let (remaining, offset) = rest.split_once(" more lines. Use offset=")?;
    let remaining: u64 = remaining.parse().ok()?;
    (offset.parse::<u64>().ok()? == end && remaining > 0).then_some(remaining)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hosts_hint_is_taken_off_and_gives_the_total() {
        let page = TextPage::of_sandboxd("a\nb\n\n[... 7 more lines. Use offset=3 to read more.]".into(), 1, 2)
            .expect("a page");
        assert_eq!(
            (page.text.as_str(), page.lines, page.total, page.more, page.next()),
            ("a\nb", 2, Some(10), true, 3)
        );
    }

    #[test]
    fn a_line_that_looks_like_the_hint_is_the_files_own() {
        // Three lines asked, three came back (the last only looks like the hint): no hint.
        let own = "x\n\n[... 7 more lines. Use offset=3 to read more.]";
        let page = TextPage::of_sandboxd(own.into(), 0, 3).expect("a page");
        assert_eq!((page.text.as_str(), page.total, page.more), (own, Some(3), false));
        // The right count but another offset: the file's own.
        let odd = "a\nb\n\n[... 7 more lines. Use offset=9 to read more.]";
        let page = TextPage::of_sandboxd(odd.into(), 0, 2).expect("a page");
        assert_eq!((page.text.as_str(), page.more), (odd, false));
        assert!(TextPage::of_sandboxd(END_OF_FILE.into(), 5, 2).is_none());
    }

    #[test]
    fn a_whole_text_pages_exactly_and_a_head_estimates() {
        let text: String = (1..=10).map(|i| format!("line {i}\n")).collect();
        let page = TextPage::of_whole(&text, 8, 5);
        assert_eq!((page.text.as_str(), page.total, page.more), ("line 9\nline 10", Some(10), false));
        let head = TextPage::of_head(b"ab\ncd\nef", 10);
        assert_eq!((head.text.as_str(), head.lines, head.total, head.more), ("ab\ncd", 2, None, true));
        assert_eq!(head.estimate(3_000), Some(1_000));
        let long = "é".repeat(PAGE_CHARS);
        let page = TextPage::of_whole(&long, 0, 1);
        assert!(page.cut && page.text.len() <= PAGE_CHARS);
    }
}
