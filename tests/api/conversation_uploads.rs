//! Files a member attaches to a conversation they may see (issue 49, item 6), against the real
//! sandboxd peer on SQLite and PostgreSQL: the file lands in the workspace's `uploads/` exactly
//! as sent, as one recorded `write` whose row names the person, and Documents shows it as
//! attached by a person. A name that would leave `uploads/`, a file over the limit, a missing
//! CSRF token, another organization and a `state` agent are refused in words (or 403/404), and
//! nothing is written.

use reqwest::Method;
use serde_json::json;

use crate::browser_documents::user_id;
use crate::db_test;
use crate::helpers::{Client, Resp};
use crate::peer;
use crate::support::{service_agent, urlencode, Org};

/// What the page's drop zone sends for one file.
async fn attach(c: &Client, token: Option<&str>, conversation: &str, name: &str, bytes: Vec<u8>) -> Resp {
    let url = c.url(&format!("/conversations/{conversation}/files?name={}", urlencode(name)));
    let mut rb = c.http.post(url).header("content-type", "application/octet-stream").body(bytes);
    if let Some(t) = token {
        rb = rb.header("x-csrf-token", t);
    }
    c.send(rb).await
}

/// The files under `dir`, relative, sorted.
fn files_under(dir: &std::path::Path) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(dir)
        .map(|d| d.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    out.sort();
    out
}

db_test! {
    async fn a_member_attaches_a_file_to_a_conversation_into_uploads_recorded_as_theirs(app: TestApp) {
        let peer = peer::shared().await;
        let o = Org::new(&app).await;
        o.connect(peer).await;
        let email = "mia@example.com";
        let member = app.member_with_role(email, "member").await;
        let member_id = user_id(&o, email).await;
        let agent = o.agent(service_agent("reader", "conversation")).await;
        let conv = o.conversation(&agent, json!({"title": "Quarter", "member_user_ids": [member_id]})).await;
        let run = o.run(&agent, Some(&conv), json!({})).await;
        assert_eq!(o.write(&run, "notes.md", "# Notes\n").await.status, 204);
        o.finish(&run).await;
        let key = o.ws(&run, Method::GET, "state", None).await.json()["session_key"].as_str().expect("key").to_string();
        let uploads = peer.workspace_root.join(&key).join("workspace").join("uploads");

        // The page offers it, with the limit.
        let page = member.get(&format!("/conversations/{conv}")).await;
        assert_eq!(page.status, 200);
        assert_eq!(page.select_attr("#attach-drop", "data-max-bytes").as_deref(), Some("8388608"));
        assert!(page.select_text("#conversation-attach").is_some_and(|t| t.contains("At most 8 MiB a file")), "{}", page.body);

        // Any bytes, exactly as sent, after the run finished (the workspace stays open).
        let token = member.csrf().await;
        let bytes: Vec<u8> = (0..=255u8).cycle().take(300_000).collect();
        let r = attach(&member, Some(&token), &conv, "brief v2.bin", bytes.clone()).await;
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(r.select_text(".upload-done .upload-path").as_deref(), Some("uploads/brief v2.bin"), "{}", r.body);
        assert_eq!(std::fs::read(uploads.join("brief v2.bin")).expect("on the host"), bytes);
        // One recorded write that names the person.
        let rows = o.rows(&run).await;
        let last = rows.last().expect("a row");
        assert_eq!(
            (last.0.as_str(), last.1.as_str(), last.2, last.3.as_str()),
            ("write", "/workspace/uploads/brief v2.bin", true, "300000 bytes, attached by mia@example.com"),
            "{rows:?}"
        );
        // Documents: attached by a person.
        let person = o.call(Method::GET, "/api/v1/documents?who=person", None).await.json();
        assert_eq!(person["reach"]["files"], 1, "{person}");

        // Names that leave uploads/, or are no name: said inline, nothing written.
        for name in ["../escape.txt", "/etc/passwd", "a/b.txt", "..", ""] {
            let r = attach(&member, Some(&token), &conv, name, b"x".to_vec()).await;
            assert_eq!(r.status, 422, "{name:?}: {}", r.body);
            assert!(r.select_text(".upload-error .upload-message").is_some_and(|m| !m.is_empty()), "{name:?}: {}", r.body);
        }
        // A NUL is refused by the query's own check, before the handler (a page naming the field).
        let r = attach(&member, Some(&token), &conv, "nul\u{0}.txt", b"x".to_vec()).await;
        assert_eq!(r.status, 422, "{}", r.body);
        assert!(r.body.contains("name: This value contains a NUL"), "{}", r.body);
        // Over the limit (8 MiB): said inline, nothing written.
        let r = attach(&member, Some(&token), &conv, "big.bin", vec![7u8; 8 * 1024 * 1024 + 1]).await;
        assert_eq!(r.status, 413, "{}", r.body);
        assert!(r.select_text(".upload-message").is_some_and(|m| m.contains("larger than 8 MiB")), "{}", r.body);
        // Without the CSRF token: refused.
        let r = attach(&member, None, &conv, "forged.txt", b"x".to_vec()).await;
        assert_eq!(r.status, 403, "{}", r.body);
        assert_eq!(files_under(&uploads), ["brief v2.bin"]);
        assert_eq!(o.rows(&run).await.len(), rows.len(), "no refused attachment is an operation");

        // Another organization's person: no such conversation.
        let stranger = app.other_org_user("eve@example.com", "Elsewhere").await;
        let stranger_token = stranger.csrf().await;
        let r = attach(&stranger, Some(&stranger_token), &conv, "x.txt", b"x".to_vec()).await;
        assert_eq!(r.status, 404, "{}", r.body);
        assert_eq!(files_under(&uploads), ["brief v2.bin"]);

        // A `state` agent takes none, and its page says so before anything is sent.
        let keeper = o.agent(json!({"name": "keeper", "backend": "state", "scope": "conversation"})).await;
        let notes = o.conversation(&keeper, json!({"member_user_ids": [member_id]})).await;
        let notes_run = o.run(&keeper, Some(&notes), json!({})).await;
        let page = member.get(&format!("/conversations/{notes}")).await;
        assert!(page.select_text("#attach-unsupported").is_some_and(|t| t.contains("takes no attachments")), "{}", page.body);
        let r = attach(&member, Some(&token), &notes, "x.txt", b"x".to_vec()).await;
        assert_eq!(r.status, 409, "{}", r.body);
        assert!(r.select_text(".upload-message").is_some_and(|m| m.contains("takes no attachments")), "{}", r.body);
        assert!(o.rows(&notes_run).await.is_empty());
    }
}
