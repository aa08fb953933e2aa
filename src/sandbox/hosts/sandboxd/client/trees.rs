//! Decoding a `trees` answer. A hundred workspaces of 2,000 entries are tens of megabytes of
//! JSON, and decoding them is most of what a Documents page costs us. So the answer's results are
//! found by a scan that follows only strings and nesting, and decoded on several threads of the
//! blocking pool, never on an async worker. An answer of another shape is decoded whole, as before.

use std::ops::Range;

use serde::de::DeserializeOwned;

use super::wire::{TreeResult, TreesResponse};

/// Smaller answers are decoded at once, where they arrived.
const PARALLEL_FROM: usize = 1 << 20;
/// Most threads one answer is decoded on.
const MAX_THREADS: usize = 4;

/// The results of a `trees` answer, in order; `None` when it is not one.
pub(super) async fn decode<E, B>(body: B) -> Option<Vec<TreeResult<E>>>
where
    E: DeserializeOwned + Send + 'static,
    B: AsRef<[u8]> + Send + 'static,
{
    if body.as_ref().len() < PARALLEL_FROM {
        return whole(body.as_ref());
    }
    tokio::task::spawn_blocking(move || {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(MAX_THREADS);
        in_parallel(body.as_ref(), threads)
    })
    .await
    .ok()
    .flatten()
}

fn whole<E: DeserializeOwned>(body: &[u8]) -> Option<Vec<TreeResult<E>>> {
    serde_json::from_slice::<TreesResponse<E>>(body).ok().map(|answer| answer.results)
}

/// Decodes the results in `threads` runs of about equal bytes (this thread takes the first).
fn in_parallel<E: DeserializeOwned + Send>(body: &[u8], threads: usize) -> Option<Vec<TreeResult<E>>> {
    let spans = match result_spans(body) {
        Some(spans) if threads > 1 && spans.len() > 1 => spans,
        _ => return whole(body),
    };
    let runs = balanced(&spans, threads);
    std::thread::scope(|scope| {
        let (first, rest) = runs.split_first()?;
        let others: Vec<_> = rest.iter().map(|run| scope.spawn(move || decode_spans::<E>(body, run))).collect();
        let mut out = decode_spans(body, first)?;
        for other in others {
            out.extend(other.join().ok()??);
        }
        Some(out)
    })
}

fn decode_spans<E: DeserializeOwned>(body: &[u8], spans: &[Range<usize>]) -> Option<Vec<TreeResult<E>>> {
    spans.iter().map(|span| serde_json::from_slice(&body[span.clone()]).ok()).collect()
}

/// `spans` cut into at most `n` consecutive runs of about equal bytes.
fn balanced(spans: &[Range<usize>], n: usize) -> Vec<&[Range<usize>]> {
    let total: usize = spans.iter().map(|s| s.len()).sum();
    let share = total.div_ceil(n.max(1)).max(1);
    let mut runs = Vec::with_capacity(n);
    let (mut start, mut bytes) = (0, 0);
    for (i, span) in spans.iter().enumerate() {
        bytes += span.len();
        if bytes >= share && runs.len() + 1 < n {
            runs.push(&spans[start..=i]);
            (start, bytes) = (i + 1, 0);
        }
    }
    if start < spans.len() {
        runs.push(&spans[start..]);
    }
    runs
}

/// The byte ranges of the `results` array's elements when the answer is laid out as sandboxd
/// writes it: `{"results":[{…},…]}`, whitespace allowed between tokens. Anything else is `None`.
/// Only strings and nesting are followed here; each element is then decoded (and so checked) whole.
fn result_spans(body: &[u8]) -> Option<Vec<Range<usize>>> {
    let mut i = skip_ws(body, 0);
    for token in [&b"{"[..], b"\"results\"", b":", b"["] {
        if !body.get(i..)?.starts_with(token) {
            return None;
        }
        i = skip_ws(body, i + token.len());
    }
    let mut spans = Vec::new();
    if body.get(i) == Some(&b']') {
        i += 1;
    } else {
        loop {
            if body.get(i) != Some(&b'{') {
                return None;
            }
            let end = value_end(body, i)?;
            spans.push(i..end);
            i = skip_ws(body, end);
            match body.get(i)? {
                b',' => i = skip_ws(body, i + 1),
                b']' => {
                    i += 1;
                    break;
                }
                _ => return None,
            }
        }
    }
    i = skip_ws(body, i);
    (body.get(i) == Some(&b'}') && skip_ws(body, i + 1) == body.len()).then_some(spans)
}

fn skip_ws(body: &[u8], mut i: usize) -> usize {
    while body.get(i).is_some_and(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r')) {
        i += 1;
    }
    i
}

/// Where the object or array opening at `start` ends (one past its closing bracket).
fn value_end(body: &[u8], start: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut i = start;
    while let Some(&b) = body.get(i) {
        match b {
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            b'"' => {
                i = string_end(body, i + 1)?;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// One past the quote that closes the string whose contents start at `i`.
fn string_end(body: &[u8], mut i: usize) -> Option<usize> {
    loop {
        let at = i + memchr::memchr2(b'"', b'\\', body.get(i..)?)?;
        if body[at] == b'"' {
            return Some(at + 1);
        }
        // A backslash escapes the next byte (`\"`, `\\`, `\u…` alike).
        i = at + 2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::hosts::sandboxd::client::wire::FileEntry;

    fn answer(n: usize) -> String {
        let results: Vec<String> = (0..n)
            .map(|i| {
                if i % 5 == 4 {
                    return format!(r#"{{"session_id":"s{i}","tree":null,"error":"No such workspace: s{i}","status_code":404}}"#);
                }
                let entries: Vec<String> = (0..i % 4 + 1)
                    .map(|j| {
                        format!(
                            r#"{{"name":"a\"}}]{{[\\{j}","path":"d/a\"}}]{{[\\{j}","is_dir":false,"size":{j},"modified_at":"2026-12-01T10:00:0{j}+00:00"}}"#
                        )
                    })
                    .collect();
                format!(r#"{{"session_id":"s{i}","tree":{{"entries":[{}],"truncated":{}}}}}"#, entries.join(","), i % 2 == 0)
            })
            .collect();
        format!(r#"{{"results":[{}]}}"#, results.join(","))
    }

    #[test]
    fn the_spans_are_the_results_even_with_brackets_and_escaped_quotes_in_strings() {
        let body = answer(7);
        let spans = result_spans(body.as_bytes()).expect("sandboxd's layout");
        assert_eq!(spans.len(), 7);
        for (i, span) in spans.iter().enumerate() {
            let one: TreeResult<FileEntry> =
                serde_json::from_slice(&body.as_bytes()[span.clone()]).expect("one result");
            assert_eq!(one.session_id, format!("s{i}"));
        }
        let spaced = body.replace(r#"{"results":["#, " {\n \"results\" : [ ").replace("]}]}", "]} ] } \n");
        assert_eq!(result_spans(spaced.as_bytes()).map(|s| s.len()), Some(7));
        assert_eq!(result_spans(br#"{"results":[]}"#), Some(Vec::new()));
    }

    #[test]
    fn other_shapes_have_no_spans_and_are_decoded_whole() {
        for odd in [
            r#"{"other":1,"results":[]}"#,
            r#"{"results":[],"other":1}"#,
            r#"{"results":[{"session_id":"a"},]}"#,
            r#"{"results":[{"session_id":"a"}"#,
            r#"{"results":[{"session_id":"a\"}]}"#,
            r#"{"results":[1]}"#,
            "",
        ] {
            assert_eq!(result_spans(odd.as_bytes()), None, "{odd}");
        }
        let reordered = r#"{"other":1,"results":[{"session_id":"a","tree":{"entries":[],"truncated":false}}]}"#;
        let got = in_parallel::<FileEntry>(reordered.as_bytes(), 4).expect("decoded whole");
        assert_eq!(got.len(), 1);
        assert_eq!(in_parallel::<FileEntry>(br#"{"results":[{"nope":1}]}"#, 4), None);
    }

    #[test]
    fn decoding_on_several_threads_gives_what_decoding_whole_gives() {
        let body = answer(23);
        let expected = whole::<FileEntry>(body.as_bytes()).expect("whole");
        for threads in 1..=5 {
            assert_eq!(in_parallel::<FileEntry>(body.as_bytes(), threads).as_ref(), Some(&expected), "{threads}");
        }
        assert_eq!(expected[1].tree.as_ref().expect("tree").entries[1].name, "a\"}]{[\\1");
        assert!(expected[4].result().is_err());
    }

    #[test]
    fn runs_cover_every_span_once_in_order() {
        let spans: Vec<Range<usize>> = [5, 1, 1, 9, 2, 2, 2, 30, 1]
            .iter()
            .scan(0, |at, len| {
                let span = *at..*at + len;
                *at += len;
                Some(span)
            })
            .collect();
        for n in 1..=6 {
            let runs = balanced(&spans, n);
            assert!(runs.len() <= n && !runs.is_empty());
            assert_eq!(runs.concat(), spans, "{n}");
        }
    }
}
