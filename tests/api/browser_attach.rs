//! Real Chromium at 1280 and 390 px, axe-core after each step (serious and critical = 0), on
//! SQLite and PostgreSQL (issue 49): a member attaches files to a conversation by dropping them
//! and with the file picker (a file over the limit said inline, never sent); an owner saves a
//! Daytona connection through the dialog, whose fields and words change with the kind (against
//! the FAKE Daytona, tests/peer/daytona/); and Documents' preview pages a long file by offset
//! with Previous and Next.

use anyhow::Context as _;
use reqwest::Method;
use serde_json::{json, Value};

use crate::browser::{self, Browser};
use crate::browser_documents::user_id;
use crate::browser_screens::{js, wait_until};
use crate::daytona_fake;
use crate::db_test;
use crate::helpers::MEMBER_PASSWORD;
use crate::peer;
use crate::support::browser_sign_in::{sign_in, sign_in_as};
use crate::support::{service_agent, Org};

/// axe-core, read at build time from the test tree (as `browser_axe` does).
const AXE: &str = include_str!("vendor/axe.min.js");

const RUN_AXE: &str = "const done = arguments[arguments.length - 1];
    axe.run(document, { resultTypes: ['violations'] })
      .then(r => done({ passes: r.passes.length, bad: r.violations
        .filter(v => v.impact === 'serious' || v.impact === 'critical')
        .map(v => `${v.id} (${v.impact}): ${v.nodes.slice(0, 6).map(n => n.target.join(' ')).join(', ')}`) }))
      .catch(e => done({ passes: 0, bad: ['axe could not run: ' + e] }));";

/// True once htmx has finished a swap and nothing is fading: content htmx swaps in starts at
/// opacity 0 (`.htmx-added`) and fades in for 0.3 s, and axe measuring contrast mid-fade sees
/// text lighter than it ends (seen once on the preview's position line).
const SETTLED: &str = "return document.readyState === 'complete'
    && !document.querySelector('.htmx-request, .htmx-settling, .htmx-swapping, .htmx-added')
    && !document.getAnimations().some(a => a instanceof CSSTransition && a.playState === 'running')";

/// Runs axe on the page as it is now (a dialog open, lines added), once htmx has settled: fails
/// on any serious or critical violation, naming `what`.
pub(crate) async fn axe_clean(b: &Browser, what: &str) -> anyhow::Result<()> {
    wait_until(b, &format!("{what} to settle"), SETTLED).await?;
    if js(b, "return typeof window.axe").await? != "object" {
        b.client.execute(&format!("{AXE}\nreturn typeof window.axe;"), vec![]).await.context("injecting axe")?;
    }
    let found = b.client.execute_async(RUN_AXE, vec![]).await.with_context(|| format!("running axe on {what}"))?;
    anyhow::ensure!(found["passes"].as_u64().is_some_and(|n| n > 10), "axe checked little on {what}: {found}");
    let bad: Vec<&str> = found["bad"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    anyhow::ensure!(bad.is_empty(), "{what}: {bad:?}");
    Ok(())
}

/// Makes the page `width` px wide: the window is resized by what the page lacks, and again until
/// the page has the width (a window made narrow does not keep its frame's width). A resize lands
/// a moment after the call on a loaded machine, so a new size is computed only once the window
/// has taken the last one asked for (or a second has passed: a window may keep another size), as
/// a size read mid-resize would otherwise be corrected twice.
pub(crate) async fn width(b: &Browser, width: u32) -> anyhow::Result<()> {
    let deadline = std::time::Instant::now() + b.wait_timeout();
    let mut asked: Option<(i64, std::time::Instant)> = None;
    let mut pause = std::time::Duration::from_millis(20);
    loop {
        let now =
            js(b, "return [window.outerWidth, window.innerWidth, window.outerHeight, window.innerHeight]").await?;
        let n = |i: usize| now[i].as_i64().unwrap_or(0);
        if n(1) == i64::from(width) {
            return Ok(());
        }
        anyhow::ensure!(
            std::time::Instant::now() < deadline,
            "waited {:?} for the page to be {width} px wide: outer/inner width {}/{}",
            b.wait_timeout(),
            n(0),
            n(1)
        );
        // Asked for nothing yet, or the window took the size asked for (or kept another for a
        // second): ask for what is missing.
        if asked.is_none_or(|(outer, at)| outer == n(0) || at.elapsed() > std::time::Duration::from_secs(1)) {
            let outer = (n(0) + i64::from(width) - n(1)).max(100);
            let tall = n(2) + 844 - n(3);
            b.client.set_window_size(u32::try_from(outer)?, u32::try_from(tall.max(200))?).await?;
            asked = Some((outer, std::time::Instant::now()));
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(std::time::Duration::from_millis(250));
    }
}

/// Nothing scrolls sideways.
pub(crate) async fn fits(b: &Browser, what: &str) -> anyhow::Result<()> {
    let wide = js(b, "return document.scrollingElement.scrollWidth - window.innerWidth").await?;
    anyhow::ensure!(wide.as_f64().unwrap_or(1.0) <= 0.0, "{what} scrolls sideways by {wide} px");
    Ok(())
}

/// At 1280 and then 390 px: fits and axe finds nothing serious.
pub(crate) async fn both_widths(b: &Browser, what: &str) -> anyhow::Result<()> {
    for w in [1280, 390] {
        width(b, w).await?;
        fits(b, &format!("{what} at {w} px")).await?;
        axe_clean(b, &format!("{what} at {w} px")).await?;
    }
    width(b, 1280).await
}

pub(crate) async fn wide_browser() -> anyhow::Result<Browser> {
    let b = Browser::start_with_args(&["--window-size=1280,900"]).await?;
    b.goto("about:blank").await?;
    width(&b, 1280).await?;
    Ok(b)
}

/// Files made in the page, as a person's drop or choice would hand them over: `[name, size]`
/// pairs, each file `size` bytes of `x`.
const FILES_OF: &str = "const dt = new DataTransfer();
    for (const [name, size] of arguments[0]) { dt.items.add(new File([new Uint8Array(size).fill(120)], name)); }
    window.__files = dt; return dt.files.length;";

db_test! {
    async fn a_member_drops_and_picks_files_into_a_conversation_in_chromium(app: TestApp) -> anyhow::Result<()> {
        if !browser::browser_or_skip("a_member_drops_and_picks_files_into_a_conversation_in_chromium") {
            return Ok(());
        }
        let peer = peer::shared().await;
        let o = Org::new(&app).await;
        o.connect(peer).await;
        let email = "mia@example.com";
        app.member_with_role(email, "member").await;
        let member_id = user_id(&o, email).await;
        let agent = o.agent(service_agent("reader", "conversation")).await;
        let conv = o.conversation(&agent, json!({"title": "Quarter", "member_user_ids": [member_id]})).await;
        let run = o.run(&agent, Some(&conv), json!({})).await;
        assert_eq!(o.write(&run, "notes.md", "# Notes\n").await.status, 204);
        let key = o.ws(&run, Method::GET, "state", None).await.json()["session_key"].as_str().expect("key").to_string();
        let uploads = peer.workspace_root.join(&key).join("workspace").join("uploads");

        let b = wide_browser().await?;
        sign_in_as(&b, &app.address, email, MEMBER_PASSWORD).await?;
        b.goto(&format!("{}/conversations/{conv}", app.address)).await?;
        b.wait_for("#attach-drop").await?;
        b.wait_for_text("#conversation-attach", "At most 8 MiB a file.").await?;
        both_widths(&b, "a conversation's page").await?;

        // Dropped: a 3 MiB file, sent with its progress, then its line.
        b.client.execute(FILES_OF, vec![json!([["dropped report.txt", 3 * 1024 * 1024]])]).await?;
        js(&b, "const z = document.querySelector('#attach-drop'); \
                z.dispatchEvent(new DragEvent('drop', {dataTransfer: window.__files, bubbles: true, cancelable: true})); return true").await?;
        b.wait_for_text("#attach-list .upload-done .upload-path", "uploads/dropped report.txt").await?;
        // Picked: two files, one over the limit, said at once and never sent.
        b.client.execute(FILES_OF, vec![json!([["small.csv", 12], ["huge.bin", 8 * 1024 * 1024 + 1]])]).await?;
        js(&b, "const i = document.querySelector('#attach-input'); i.files = window.__files.files; \
                i.dispatchEvent(new Event('change', {bubbles: true})); return true").await?;
        b.wait_for_text("#attach-list .upload-error[data-name='huge.bin'] .upload-message", "larger than 8 MiB").await?;
        b.wait_for_text("#attach-list .upload-done[data-name='small.csv'] .upload-path", "uploads/small.csv").await?;
        both_widths(&b, "a conversation's page with files attached").await?;
        b.close().await?;

        assert_eq!(std::fs::read(uploads.join("dropped report.txt"))?.len(), 3 * 1024 * 1024);
        assert_eq!(std::fs::read(uploads.join("small.csv"))?, b"xxxxxxxxxxxx");
        assert!(!uploads.join("huge.bin").exists(), "a file over the limit is never sent");
        let rows = o.rows(&run).await;
        let attached: Vec<&str> = rows.iter().filter(|r| r.3.ends_with("attached by mia@example.com")).map(|r| r.1.as_str()).collect();
        assert_eq!(attached, ["/workspace/uploads/dropped report.txt", "/workspace/uploads/small.csv"], "{rows:?}");
        Ok(())
    }
}

/// The dialog's text, for what it must not say.
async fn dialog_text(b: &Browser) -> anyhow::Result<String> {
    Ok(js(b, "return document.querySelector('dialog#connection-dialog').innerText")
        .await?
        .as_str()
        .unwrap_or_default()
        .to_string())
}

/// Chooses `kind` in the dialog as a person does (the select's change), and waits for its form.
async fn choose_kind(b: &Browser, kind: &str, field: &str) -> anyhow::Result<()> {
    b.choose("#connection-kind", kind).await?;
    b.wait_for(field).await?;
    Ok(())
}

db_test! {
    async fn an_owner_saves_a_daytona_connection_through_a_dialog_that_speaks_daytona(app: TestApp) -> anyhow::Result<()> {
        if !browser::browser_or_skip("an_owner_saves_a_daytona_connection_through_a_dialog_that_speaks_daytona") {
            return Ok(());
        }
        let fake = daytona_fake::shared();
        app.setup_owner().await;
        let b = wide_browser().await?;
        sign_in(&b, &app.address).await?;
        b.goto(&format!("{}/sandboxes", app.address)).await?;
        b.click("#add-connection").await?;
        b.wait_for("dialog#connection-dialog[open] #connection-name").await?;
        let sandboxd = dialog_text(&b).await?;
        anyhow::ensure!(sandboxd.contains("SANDBOXD_TOKEN") && sandboxd.contains("Host token"), "{sandboxd}");

        // Daytona: its own fields and words, typed values kept.
        b.fill("#connection-name", "daytona-fake").await?;
        choose_kind(&b, "daytona", "#connection-snapshot").await?;
        let daytona = dialog_text(&b).await?;
        for gone in ["SANDBOXD_TOKEN", "Host token", "root on the host", "X-Sandbox-Token", "Default runtime"] {
            anyhow::ensure!(!daytona.contains(gone), "“{gone}” in the Daytona dialog: {daytona}");
        }
        for said in ["API URL", "API key", "New API key", "Snapshot", "Test this account"] {
            anyhow::ensure!(daytona.contains(said), "no “{said}” in the Daytona dialog: {daytona}");
        }
        let name = b.wait_for("#connection-name").await?.prop("value").await?;
        assert_eq!(name.as_deref(), Some("daytona-fake"), "the name typed is kept");
        anyhow::ensure!(b.client.find_all(fantoccini::Locator::Css("#connection-runtime")).await?.is_empty(), "no runtime cards");
        both_widths(&b, "the Daytona connection dialog").await?;
        // Back to sandboxd and to Daytona again: each kind's words.
        choose_kind(&b, "sandboxd", "#connection-runtime").await?;
        anyhow::ensure!(dialog_text(&b).await?.contains("SANDBOXD_TOKEN"));
        choose_kind(&b, "daytona", "#connection-snapshot").await?;

        // Asked, then saved.
        b.fill("#connection-address", &fake.api_url).await?;
        b.fill("#connection-new-key", &fake.api_key).await?;
        b.fill("#connection-snapshot", "fake-python").await?;
        b.click("#probe-button").await?;
        b.wait_for_text("#probe-result", "“fake-python” exists").await?;
        b.click("#save-connection").await?;
        b.wait_for_text(".flash", "Connection “daytona-fake” added").await?;
        b.close().await?;

        let mut c = app.state.db.conn().await?;
        let saved: (String, Option<String>, Option<String>) =
            sqlx::query_as("SELECT kind, address, default_runtime FROM sandbox_connections WHERE name = 'daytona-fake'")
                .fetch_one(&mut *c)
                .await?;
        assert_eq!(saved, ("daytona".to_string(), Some(fake.api_url.trim_end_matches('/').to_string()), Some("fake-python".to_string())));
        Ok(())
    }
}

db_test! {
    async fn a_long_files_preview_pages_back_and_forth_in_chromium(app: TestApp) -> anyhow::Result<()> {
        if !browser::browser_or_skip("a_long_files_preview_pages_back_and_forth_in_chromium") {
            return Ok(());
        }
        let peer = peer::shared().await;
        let o = Org::new(&app).await;
        o.connect(peer).await;
        let agent = o.agent(service_agent("pager", "conversation")).await;
        let conversation = o.conversation(&agent, json!({})).await;
        let run = o.run(&agent, Some(&conversation), json!({})).await;
        assert_eq!(o.write(&run, "hello.txt", "hello").await.status, 204);
        let key = o.ws(&run, Method::GET, "state", None).await.json()["session_key"].as_str().expect("key").to_string();
        let long: String = (1..=1_000).map(|i| format!("line {i}\n")).collect();
        let dir = peer.workspace_root.join(&key).join("workspace").join("logs");
        std::fs::create_dir_all(&dir)?;
        std::fs::write(dir.join("long.txt"), long)?;
        let page = o.call(Method::GET, "/api/v1/documents", None).await.json();
        let id = page["groups"]
            .as_array()
            .and_then(|g| g.iter().find(|g| g["workspace"]["conversation_id"] == conversation.as_str()))
            .and_then(|g| g["workspace"]["id"].as_str())
            .unwrap_or_else(|| panic!("no group: {page}"))
            .to_string();

        let b = wide_browser().await?;
        sign_in(&b, &app.address).await?;
        b.goto(&format!("{}/documents/workspaces/{id}?path=logs%2Flong.txt", app.address)).await?;
        b.wait_for_text("#preview-position", "Lines 1–200 of 1,000").await?;
        anyhow::ensure!(b.client.find_all(fantoccini::Locator::Css("#preview-previous")).await?.is_empty(), "no previous page at the start");
        both_widths(&b, "a long file's first page").await?;
        b.click("#preview-next").await?;
        b.wait_for_text("#preview-position", "Lines 201–400 of 1,000").await?;
        let text = b.text("#preview-text").await?;
        anyhow::ensure!(text.starts_with("line 201\n") && text.trim_end().ends_with("line 400"), "the second page: {}", &text[..40.min(text.len())]);
        both_widths(&b, "a long file's second page").await?;
        b.click("#preview-previous").await?;
        b.wait_for_text("#preview-position", "Lines 1–200 of 1,000").await?;
        anyhow::ensure!(b.text("#preview-text").await?.starts_with("line 1\n"));
        b.close().await?;
        Ok(())
    }
}
