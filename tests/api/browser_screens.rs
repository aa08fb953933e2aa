//! Real Chromium on a phone-sized screen (390 × 844) and on a desktop one: every top-level page
//! fits the width with its navigation behind a Menu button, the Running row names its agent and
//! links its conversation, Back after signing out shows the sign-in page, and a member's
//! navigation has Conversations. The same seeded organization makes the screenshots of docs/console.md
//! (`screenshots`, ignored by default: see docs/console.md, "Screenshots").

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use reqwest::Method;
use serde_json::{json, Value};

use crate::browser::{self, Browser};
use crate::db_test;
use crate::helpers::{Backend, TestApp, MEMBER_PASSWORD, OWNER_EMAIL, OWNER_PASSWORD};
use crate::peer::{self, Peer};
use crate::support::browser_sign_in::{sign_in, sign_in_as};
use crate::support::{service_agent, Org};

/// What the seeded organization holds.
pub struct Seeded {
    pub conversation: String,
    pub conversation_title: String,
    pub member_email: String,
    pub member_password: String,
    pub activity_path: String,
}

/// An organization with a sandbox host, agents, conversations and running sessions, people and
/// a token: what the console looks like in use.
pub async fn seed(app: &TestApp, peer: &Peer) -> Seeded {
    let o = Org::new(app).await;
    let conn = o
        .call(
            Method::POST,
            "/api/v1/sandbox-connections",
            Some(json!({"name": "eu-sandboxes", "address": peer.url, "new_key": peer.token})),
        )
        .await;
    assert_eq!(conn.status, 201, "{}", conn.body);
    let conn = conn.json()["id"].as_str().expect("connection").to_string();
    let writer = o.agent(service_agent("report writer", "conversation")).await;
    let assistant = o.agent(service_agent("personal assistant", "user")).await;
    let notes = o.agent(json!({"name": "notes keeper", "backend": "state", "scope": "conversation"})).await;

    let member_email = "sam@example.com".to_string();
    app.member_with_role(&member_email, "member").await;
    let member_password = MEMBER_PASSWORD.to_string();
    app.member_with_role("ops@example.com", "operator").await;
    let me = o.call(Method::GET, "/api/v1/members", None).await.json();
    let member_id = me
        .as_array()
        .into_iter()
        .flatten()
        .find(|m| m["email"] == member_email.as_str())
        .and_then(|m| m["user_id"].as_str())
        .expect("the member's id")
        .to_string();

    let conversation_title = "Quarterly report".to_string();
    let conversation =
        o.conversation(&writer, json!({"title": conversation_title, "member_user_ids": [member_id]})).await;
    let run = o.run(&writer, Some(&conversation), json!({})).await;
    assert_eq!(o.write(&run, "report/draft.md", "# Q3\n\nRevenue grew.").await.status, 204);
    assert_eq!(o.exec(&run, "wc -l report/draft.md").await.status, 200);
    let other = o.conversation(&notes, json!({"title": "Onboarding checklist", "member_user_ids": [member_id]})).await;
    let notes_run = o.run(&notes, Some(&other), json!({})).await;
    assert_eq!(o.write(&notes_run, "checklist.md", "- laptop\n- accounts").await.status, 204);
    let personal = o.run(&assistant, None, json!({})).await;
    assert_eq!(o.write(&personal, "diary.txt", "Monday").await.status, 204);

    let state = o.ws(&run, Method::GET, "state", None).await.json();
    let key = state["session_key"].as_str().expect("session key");
    Seeded {
        conversation,
        conversation_title,
        member_email,
        member_password,
        activity_path: format!("/sandboxes/{conn}/sessions/{key}/activity"),
    }
}

/// A browser whose page is 390 × 844 (a window opened that narrow is widened to 500 px: it is
/// resized once open, its frame added).
async fn phone() -> anyhow::Result<Browser> {
    let b = Browser::start_with_args(&["--window-size=390,844"]).await?;
    b.goto("about:blank").await?;
    let frame = js(&b, "return window.outerHeight - window.innerHeight").await?.as_u64().unwrap_or(0);
    b.client.set_window_size(390, 844 + u32::try_from(frame).unwrap_or(0)).await?;
    Ok(b)
}

pub(crate) async fn js(b: &Browser, script: &str) -> anyhow::Result<Value> {
    b.client.execute(script, vec![]).await.with_context(|| format!("running {script}"))
}

/// The top-level pages: where the navigation's links go.
async fn nav_targets(b: &Browser) -> anyhow::Result<Vec<String>> {
    let v = js(b, "return Array.from(document.querySelectorAll('nav.sidebar-nav a')).map(a => a.getAttribute('href'))")
        .await?;
    Ok(v.as_array().into_iter().flatten().filter_map(Value::as_str).map(str::to_string).collect())
}

/// Waits (bounded, polling) until the current URL satisfies `ok`.
async fn wait_for_url(b: &Browser, what: &str, ok: impl Fn(&url::Url) -> bool) -> anyhow::Result<url::Url> {
    let deadline = Instant::now() + b.wait_timeout();
    let mut pause = Duration::from_millis(20);
    loop {
        let url = b.client.current_url().await?;
        if ok(&url) {
            return Ok(url);
        }
        if Instant::now() >= deadline {
            bail!("waited {:?} for the URL to be {what}; it is {url}", b.wait_timeout());
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_millis(250));
    }
}

/// Waits (bounded, polling) until `script` returns true.
pub(crate) async fn wait_until(b: &Browser, what: &str, script: &str) -> anyhow::Result<()> {
    let deadline = Instant::now() + b.wait_timeout();
    let mut pause = Duration::from_millis(20);
    while js(b, script).await? != Value::Bool(true) {
        if Instant::now() >= deadline {
            bail!("waited {:?} for {what}", b.wait_timeout());
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_millis(250));
    }
    Ok(())
}

/// At 390 px: the page fits the width, the top bar shows the organization and Sign out, the
/// navigation is folded away, and the Menu button unfolds it with every link on screen.
async fn check_small_screen(b: &Browser, path: &str) -> anyhow::Result<()> {
    let fit = js(
        b,
        "const r = s => { const e = document.querySelector(s); if (!e) return null; const b = e.getBoundingClientRect(); return [b.left, b.right, b.width]; };
         return { scroll: document.documentElement.scrollWidth, inner: window.innerWidth,
                  nav: getComputedStyle(document.querySelector('#sidebar-nav')).display,
                  select: r('#org-switch-select'), signOut: r('.user-menu button[type=submit]'), menu: r('#menu-button') };",
    )
    .await?;
    assert_eq!(fit["inner"], 390, "{path}: the viewport is not 390 px wide: {fit}");
    assert!(fit["scroll"].as_f64().is_some_and(|w| w <= 390.0), "{path} scrolls sideways: {fit}");
    assert_eq!(fit["nav"], "none", "{path}: the navigation is not folded away: {fit}");
    for (name, min_width) in [("select", 150.0), ("signOut", 40.0), ("menu", 40.0)] {
        let rect = fit[name].as_array().with_context(|| format!("{path}: no {name}"))?;
        let (left, right, width) =
            (rect[0].as_f64().unwrap_or(-1.0), rect[1].as_f64().unwrap_or(999.0), rect[2].as_f64().unwrap_or(0.0));
        assert!(left >= 0.0 && right <= 390.0 && width >= min_width, "{path}: {name} is cut off or squeezed: {fit}");
    }
    b.click("#menu-button").await?;
    let links = js(
        b,
        "return Array.from(document.querySelectorAll('nav.sidebar-nav a')).map(a => { const r = a.getBoundingClientRect();
           return [a.textContent.trim(), r.width > 0 && r.height > 0 && r.left >= 0 && r.right <= 390]; })
         .concat([['scroll', document.documentElement.scrollWidth <= 390]]);",
    )
    .await?;
    for l in links.as_array().into_iter().flatten() {
        assert_eq!(l[1], true, "{path}: with the menu open, {} is not on screen: {links}", l[0]);
    }
    Ok(())
}

db_test! {
    async fn the_console_fits_a_phone_and_back_after_sign_out_shows_the_sign_in_page(app: TestApp) -> anyhow::Result<()> {
        if !browser::browser_or_skip("the_console_fits_a_phone_and_back_after_sign_out_shows_the_sign_in_page") {
            return Ok(());
        }
        let peer = peer::shared().await;
        let seeded = seed(&app, peer).await;
        let b = phone().await?;
        sign_in(&b, &app.address).await?;

        // Every top-level page, and a few that open from them.
        let mut pages = nav_targets(&b).await?;
        assert!(pages.len() >= 9, "{pages:?}");
        pages.extend([format!("/conversations/{}", seeded.conversation), seeded.activity_path.clone(), "/sandboxes/new".into()]);
        for path in &pages {
            b.goto(&format!("{}{path}", app.address)).await?;
            b.wait_for("main#main").await?;
            check_small_screen(&b, path).await?;
        }

        // The Running row names its agent and links its conversation; the delete dialog is full-width.
        b.goto(&format!("{}/sandboxes/running", app.address)).await?;
        let row = "tr.session[data-session-id]";
        b.wait_for_text(&format!("{row} .agent-name"), "report writer").await?;
        let link = b.wait_for(&format!("{row} a.conversation")).await?;
        assert_eq!(link.attr("href").await?, Some(format!("/conversations/{}", seeded.conversation)));
        assert_eq!(link.text().await?, seeded.conversation_title);
        b.click(&format!("{row} a.session-delete")).await?;
        let dialog = b.wait_for("dialog#session-delete-dialog[open]").await?;
        let (_, _, width, _) = dialog.rectangle().await?;
        let room = js(&b, "return document.documentElement.clientWidth").await?.as_f64().unwrap_or(390.0);
        assert!(width >= room - 1.0, "the dialog is {width} px wide of {room}");
        // Read once its opening animation has shown it.
        b.wait_for_text("#session-delete-what", "eu-sandboxes").await?;
        b.click("#session-delete-form a[data-close-dialog]").await?;
        wait_until(&b, "the dialog closed", "return !document.querySelector('dialog')").await?;
        // The table refreshes itself every 10 seconds: find the link and follow it in one step.
        js(&b, &format!("document.querySelector('{row} a.conversation').click()")).await?;
        wait_for_url(&b, "the conversation", |u| u.path() == format!("/conversations/{}", seeded.conversation)).await?;
        b.wait_for_text("main h1", &seeded.conversation_title).await?;

        // Back after signing out shows the sign-in page, not the previous person's page.
        b.goto(&format!("{}/members", app.address)).await?;
        b.wait_for("#members-table").await?;
        b.click(".user-menu button[type=submit]").await?;
        b.wait_for("#password").await?;
        assert_eq!(b.current_path().await?, "/login");
        b.client.back().await?;
        let url = wait_for_url(&b, "the sign-in page asked for by /members", |u| {
            u.path() == "/login" && u.query() == Some("next=%2Fmembers")
        })
        .await?;
        b.wait_for("#password").await?;
        let source = b.client.source().await?;
        assert!(!source.contains("members-table") && !source.contains(OWNER_EMAIL), "the previous page is shown at {url}");
        check_login_fits(&b).await?;

        // Signing in there returns to the members page.
        b.fill("#email", OWNER_EMAIL).await?;
        b.fill("#password", OWNER_PASSWORD).await?;
        b.click("button[type=submit]").await?;
        b.wait_for("#members-table").await?;
        assert_eq!(b.current_path().await?, "/members");
        b.click(".user-menu button[type=submit]").await?;
        b.wait_for("#password").await?;

        // A member's navigation has Conversations: their own.
        sign_in_as(&b, &app.address, &seeded.member_email, &seeded.member_password).await?;
        b.click("#menu-button").await?;
        let nav = b.text("nav.sidebar-nav").await?;
        assert!(nav.contains("Conversations") && nav.contains("API reference") && !nav.contains("Members"), "{nav}");
        b.click("nav.sidebar-nav a[href='/conversations']").await?;
        b.wait_for_text("#conversations-table", &seeded.conversation_title).await?;
        check_small_screen(&b, "/conversations (member)").await?;
        b.close().await
    }
}

async fn check_login_fits(b: &Browser) -> anyhow::Result<()> {
    let scroll = js(b, "return document.documentElement.scrollWidth").await?;
    assert!(scroll.as_f64().is_some_and(|w| w <= 390.0), "the sign-in page scrolls sideways: {scroll}");
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Screenshots

/// Where the screenshots of docs/console.md live.
fn screenshot_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/screenshots")
}

/// The tallest screenshot: long pages are cut there.
const MAX_HEIGHT: u32 = 2400;

/// A PNG of the whole page (up to [`MAX_HEIGHT`]) at `width`, as `<name>-<width>.png`.
async fn shoot(b: &Browser, name: &str, width: u32, height: u32) -> anyhow::Result<()> {
    // The window is taller than the page's viewport by the browser's own frame.
    let v = js(b, "return [Math.ceil(document.documentElement.scrollHeight), window.outerHeight - window.innerHeight]")
        .await?;
    let number = |i: usize| v[i].as_u64().and_then(|n| u32::try_from(n).ok()).unwrap_or(0);
    let (page, frame) = (number(0), number(1));
    b.client.set_window_size(width, (page + frame).clamp(height, MAX_HEIGHT)).await?;
    b.screenshot(screenshot_dir().join(format!("{name}-{width}.png"))).await?;
    b.client.set_window_size(width, height).await?;
    Ok(())
}

/// Regenerates `docs/screenshots/*.png`: every top-level page at 1280 and 390 px (docs/console.md,
/// "Screenshots"). `cargo test --test api screenshots -- --ignored`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "writes docs/screenshots; run it on purpose with --ignored"]
async fn screenshots() -> anyhow::Result<()> {
    assert!(browser::browser_available(), "screenshots need Chromium and chromedriver");
    // Mail configured (to the tests' SMTP sink), so that the forgotten-password page shows its form.
    let mail = [("AGENTICOS_SMTP_URL", crate::support::smtp_sink::url())];
    let app = crate::helpers::spawn_app_with(Backend::Sqlite, &mail).await.context("an app")?;
    let peer = peer::shared().await;
    let seeded = seed(&app, peer).await;
    // `/sandboxes/{connection}/sessions/{key}/activity`
    let connection = seeded.activity_path.split('/').nth(2).context("the connection in the activity path")?.to_string();
    let pages = [
        ("home", "/".to_string()),
        ("conversations", "/conversations".to_string()),
        ("conversation", format!("/conversations/{}", seeded.conversation)),
        ("agents", "/agents".to_string()),
        ("connections", "/sandboxes".to_string()),
        ("running", "/sandboxes/running".to_string()),
        ("activity", seeded.activity_path.clone()),
        ("vault", "/vault".to_string()),
        ("members", "/members".to_string()),
        ("tokens", "/tokens".to_string()),
        ("audit", "/audit".to_string()),
        ("api-reference", "/api-reference".to_string()),
        ("activity-all", "/sandboxes/activity".to_string()),
        ("policy", format!("/sandboxes/{connection}/policy")),
        ("documents", "/documents".to_string()),
        ("account", "/account".to_string()),
        ("not-found", "/no-such-page".to_string()),
    ];
    for (width, height) in [(1280, 800), (390, 844)] {
        let b = Browser::start_with_args(&[&format!("--window-size={width},{height}"), "--hide-scrollbars"]).await?;
        b.client.set_window_size(width, height).await?;
        b.goto(&format!("{}/login", app.address)).await?;
        b.wait_for("#password").await?;
        shoot(&b, "login", width, height).await?;
        b.goto(&format!("{}/forgot-password", app.address)).await?;
        b.wait_for("#email").await?;
        shoot(&b, "forgot-password", width, height).await?;
        sign_in(&b, &app.address).await?;
        for (name, path) in &pages {
            b.goto(&format!("{}{path}", app.address)).await?;
            b.wait_for("main#main").await?;
            if *name == "running" {
                b.wait_for_text("#running-sessions", "report writer").await?;
            }
            shoot(&b, name, width, height).await?;
        }
        // A Markdown file's preview, opened from its workspace's page.
        b.goto(&format!("{}/documents", app.address)).await?;
        let file = b
            .wait_for("a[href^='/documents/workspaces/'][href*='draft.md']")
            .await?
            .attr("href")
            .await?
            .context("a link to the draft")?;
        b.goto(&format!("{}{file}", app.address)).await?;
        b.wait_for_text("#workspace-preview", "Revenue grew").await?;
        shoot(&b, "document-preview", width, height).await?;
        b.goto(&format!("{}/sandboxes/running", app.address)).await?;
        b.click("a.session-delete").await?;
        b.wait_for("dialog#session-delete-dialog[open]").await?;
        b.screenshot(screenshot_dir().join(format!("running-delete-dialog-{width}.png"))).await?;
        if width < 768 {
            b.goto(&format!("{}/", app.address)).await?;
            b.click("#menu-button").await?;
            b.screenshot(screenshot_dir().join(format!("menu-{width}.png"))).await?;
        }
        b.close().await?;
    }
    let found = std::fs::read_dir(screenshot_dir())?.count();
    assert!(found >= 2 * (pages.len() + 3), "only {found} screenshots written");
    Ok(())
}
