//! A long text or CSV previewed one bounded page at a time against the real sandboxd peer, on
//! SQLite and PostgreSQL (issue 49): the host's hint for an agent (`[... N more lines. Use
//! offset=M to read more.]`) never shows as content, a file's own line that only looks like it
//! does, pages go next and back by offset and say where they are in the file.

use std::path::Path;

use reqwest::Method;
use serde_json::json;

use crate::db_test;
use crate::helpers::Resp;
use crate::peer;
use crate::support::{service_agent, urlencode, Org};

fn put(dir: &Path, path: &str, bytes: &[u8]) {
    let p = dir.join(path);
    std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
    std::fs::write(p, bytes).expect("write");
}

/// A conversation-scoped service agent's workspace on the shared peer: its id and its folder
/// on the peer's disk.
async fn workspace(o: &Org<'_>, peer: &peer::Peer) -> (String, std::path::PathBuf) {
    let agent = o.agent(service_agent("pager", "conversation")).await;
    let conversation = o.conversation(&agent, json!({})).await;
    let run = o.run(&agent, Some(&conversation), json!({})).await;
    assert_eq!(o.write(&run, "hello.txt", "hello").await.status, 204);
    let key = o.ws(&run, Method::GET, "state", None).await.json()["session_key"].as_str().expect("key").to_string();
    let page = o.call(Method::GET, "/api/v1/documents", None).await.json();
    let id = page["groups"]
        .as_array()
        .and_then(|g| g.iter().find(|g| g["workspace"]["conversation_id"] == conversation.as_str()))
        .and_then(|g| g["workspace"]["id"].as_str())
        .unwrap_or_else(|| panic!("no group: {page}"))
        .to_string();
    (id, peer.workspace_root.join(&key).join("workspace"))
}

/// The `href` of `css`'s link, or none.
fn link(page: &Resp, css: &str) -> Option<String> {
    page.select_attr(css, "href")
}

db_test! {
    async fn a_long_text_and_csv_page_by_offset_and_never_show_the_hosts_hint(app: TestApp) {
        let peer = peer::shared().await;
        let o = Org::new(&app).await;
        o.connect(peer).await;
        let (id, dir) = workspace(&o, peer).await;
        let long: String = (1..=134_805).map(|i| format!("line {i}\n")).collect();
        put(&dir, "logs/long.txt", long.as_bytes());
        let csv: String = std::iter::once("n,square\n".to_string())
            .chain((1..=120_000u64).map(|i| format!("{i},{}\n", i * i)))
            .collect();
        put(&dir, "data/big.csv", csv.as_bytes());
        // The file's own last line only looks like the hint: it is content.
        let lookalike = "a\nb\n\n[... 7 more lines. Use offset=3 to read more.]\n";
        put(&dir, "notes/lookalike.txt", lookalike.as_bytes());
        put(&dir, "notes/end.txt", b"[End of file]\n");
        put(&dir, "notes/empty.txt", b"");
        let open = |path: &str, offset: &str| {
            let at = if offset.is_empty() { String::new() } else { format!("&offset={offset}") };
            format!("/documents/workspaces/{id}?path={}{at}", urlencode(path))
        };
        let lines = |from: u64, to: u64| (from..=to).map(|i| format!("line {i}")).collect::<Vec<_>>().join("\n");

        // The first page: 200 lines, no hint, where it is, a next page and no previous one.
        let first = app.web.get(&open("logs/long.txt", "")).await;
        assert_eq!(first.status, 200);
        let text = first.select_text("#preview-text").expect("a text preview");
        assert!(!text.contains("more lines. Use offset="), "the host's hint is not content: {}", &text[text.len().saturating_sub(120)..]);
        assert_eq!(text, lines(1, 200));
        assert_eq!(first.select_text("#preview-position").as_deref(), Some("Lines 1–200 of 134,805"));
        assert!(link(&first, "#preview-previous").is_none());
        let next = link(&first, "#preview-next").expect("a next page");
        assert!(next.ends_with("&offset=200"), "{next}");
        assert!(first.body.len() < 64 * 1024, "a bounded page: {} bytes", first.body.len());

        let second = app.web.get(&next).await;
        assert_eq!(second.select_text("#preview-text").expect("text"), lines(201, 400));
        assert_eq!(second.select_text("#preview-position").as_deref(), Some("Lines 201–400 of 134,805"));
        let back = link(&second, "#preview-previous").expect("a previous page");
        assert!(!back.contains("offset="), "back to the first page: {back}");
        assert!(link(&second, "#preview-next").is_some_and(|n| n.ends_with("&offset=400")));

        let last = app.web.get(&open("logs/long.txt", "134800")).await;
        assert_eq!(last.select_text("#preview-text").expect("text"), lines(134_801, 134_805));
        assert_eq!(last.select_text("#preview-position").as_deref(), Some("Lines 134,801–134,805 of 134,805"));
        assert!(link(&last, "#preview-next").is_none());
        assert!(link(&last, "#preview-previous").is_some_and(|p| p.ends_with("&offset=134600")));

        let past = app.web.get(&open("logs/long.txt", "200000")).await;
        assert_eq!(past.select_text("#preview-position").as_deref(), Some("Nothing from line 200,001: the file is shorter."));
        let bad = app.web.get(&open("logs/long.txt", "ten")).await;
        assert_eq!(bad.status, 200);
        assert_eq!(bad.select_text("#preview-error").as_deref(), Some("A page starts at a line number (0 is the first line)."));

        // A CSV: 200 rows under its header, counted in rows; its last row is a row.
        let table = app.web.get(&open("data/big.csv", "")).await;
        assert_eq!(table.select_all("#preview-table thead th"), ["n", "square"]);
        let rows = table.select_all("#preview-table tbody tr");
        assert_eq!(rows.len(), 200);
        assert_eq!(table.select_all("#preview-table tbody tr:last-child td"), ["200", "40000"]);
        assert_eq!(table.select_text("#preview-position").as_deref(), Some("Rows 1–200 of 120,000"));
        let next = link(&table, "#preview-next").expect("a next page");
        assert!(next.ends_with("&offset=201"), "{next}");
        let page2 = app.web.get(&next).await;
        assert_eq!(page2.select_all("#preview-table thead th"), ["n", "square"], "the header on every page");
        assert_eq!(page2.select_all("#preview-table tbody tr:first-child td"), ["201", "40401"]);
        assert_eq!(page2.select_text("#preview-position").as_deref(), Some("Rows 201–400 of 120,000"));
        assert!(link(&page2, "#preview-previous").is_some_and(|p| !p.contains("offset=")));
        let end = app.web.get(&open("data/big.csv", "119801")).await;
        assert_eq!(end.select_all("#preview-table tbody tr").len(), 200);
        assert_eq!(end.select_all("#preview-table tbody tr:last-child td"), ["120000", "14400000000"]);
        assert_eq!(end.select_text("#preview-position").as_deref(), Some("Rows 119,801–120,000 of 120,000"));
        assert!(link(&end, "#preview-next").is_none());

        // What a file says is shown, even when it reads like the host's words.
        let own = app.web.get(&open("notes/lookalike.txt", "")).await;
        assert_eq!(own.select_text("#preview-text").as_deref(), Some(lookalike.trim_end()));
        assert_eq!(own.select_text("#preview-position").as_deref(), Some("Lines 1–4 of 4"));
        let end_line = app.web.get(&open("notes/end.txt", "")).await;
        assert_eq!(end_line.select_text("#preview-text").as_deref(), Some("[End of file]"));
        assert_eq!(end_line.select_text("#preview-position").as_deref(), Some("Lines 1–1 of 1"));
        let empty = app.web.get(&open("notes/empty.txt", "")).await;
        assert_eq!(empty.select_text("#preview-text").as_deref(), Some(""));
        assert_eq!(empty.select_text("#preview-position").as_deref(), Some("The file is empty."));
    }
}
