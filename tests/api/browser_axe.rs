//! Accessibility in real Chromium: axe-core (vendored for the tests only in
//! `tests/api/vendor/axe.min.js`, its version and licence in THIRD_PARTY.md; the console never
//! serves it) runs on the console's main pages as an owner and as a member. Any serious or
//! critical violation fails the test, naming its rule and the elements it found. One browser
//! session does it all, and checks on the way that the audit log's When stays on one line.

use std::time::Duration;

use anyhow::Context as _;
use fantoccini::wd::TimeoutConfiguration;
use serde_json::Value;

use crate::browser::{self, Browser};
use crate::browser_screens::{js, seed, wait_until};
use crate::db_test;
use crate::peer;
use crate::support::browser_sign_in::{sign_in, sign_in_as};

/// axe-core, read at build time from the test tree.
const AXE: &str = include_str!("vendor/axe.min.js");

/// Runs axe on the page and answers its serious and critical violations, one line each.
const RUN_AXE: &str = "const done = arguments[arguments.length - 1];
    axe.run(document, { resultTypes: ['violations'] })
      .then(r => done({ passes: r.passes.length, bad: r.violations
        .filter(v => v.impact === 'serious' || v.impact === 'critical')
        .map(v => `${v.id} (${v.impact}): ${v.nodes.slice(0, 6).map(n => n.target.join(' ')).join(', ')}`) }))
      .catch(e => done({ passes: 0, bad: ['axe could not run: ' + e] }));";

/// The serious and critical violations on `path`, each prefixed with who saw it where.
pub(crate) async fn violations(b: &Browser, base: &str, who: &str, path: &str) -> anyhow::Result<Vec<String>> {
    b.goto(&format!("{base}{path}")).await?;
    violations_here(b, &format!("{who} {path}")).await
}

/// The serious and critical violations on the page the browser shows (one reached by a form's
/// answer rather than by its address), each prefixed with `label`.
pub(crate) async fn violations_here(b: &Browser, label: &str) -> anyhow::Result<Vec<String>> {
    let path = label;
    b.wait_for("main#main").await?;
    if js(b, "return typeof window.axe").await? != "object" {
        b.client.execute(&format!("{AXE}\nreturn typeof window.axe;"), vec![]).await.context("injecting axe")?;
    }
    let found = b.client.execute_async(RUN_AXE, vec![]).await.with_context(|| format!("running axe on {path}"))?;
    // axe ran its rules here: some of them passed (an empty page or a failed injection has none).
    anyhow::ensure!(found["passes"].as_u64().is_some_and(|n| n > 10), "axe checked little on {path}: {found}");
    Ok(found["bad"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(|v| format!("{label}: {v}"))
        .collect())
}

/// The `href`s of the links `css` finds on the current page.
async fn links(b: &Browser, css: &str) -> anyhow::Result<Vec<String>> {
    let v = js(b, &format!("return Array.from(document.querySelectorAll({css:?})).map(a => a.getAttribute('href'))"))
        .await?;
    Ok(v.as_array().into_iter().flatten().filter_map(Value::as_str).map(str::to_string).collect())
}

/// The pages a person reaches from the navigation, the account link, the sandbox views' tabs
/// and the connections' Policy, plus `extra`, each once.
async fn main_pages(b: &Browser, base: &str, extra: &[&str]) -> anyhow::Result<Vec<String>> {
    b.goto(&format!("{base}/")).await?;
    b.wait_for("nav.sidebar-nav").await?;
    let mut pages = links(b, "nav.sidebar-nav a").await?;
    pages.extend(links(b, ".user-menu a.account-link").await?);
    if pages.iter().any(|p| p == "/sandboxes") {
        b.goto(&format!("{base}/sandboxes")).await?;
        b.wait_for("main#main").await?;
        pages.extend(links(b, "nav.tabs a").await?);
        pages.extend(links(b, "#connections-table .row-actions a[href$='/policy']").await?.into_iter().take(1));
    }
    pages.extend(extra.iter().map(|p| (*p).to_string()));
    let mut seen = std::collections::BTreeSet::new();
    pages.retain(|p| seen.insert(p.clone()));
    Ok(pages)
}

/// Whether the first When of the audit log is drawn on one line.
const WHEN_ON_ONE_LINE: &str = "const t = document.querySelector('#audit-table tbody td.when-cell time');
    return t ? t.getClientRects().length === 1 && t.getBoundingClientRect().height < 2 * parseFloat(getComputedStyle(t).lineHeight || '20') : 'no audit row';";

db_test! {
    async fn the_main_pages_have_no_serious_or_critical_accessibility_violation(app: TestApp) -> anyhow::Result<()> {
        if !browser::browser_or_skip("the_main_pages_have_no_serious_or_critical_accessibility_violation") {
            return Ok(());
        }
        let seeded = seed(&app, peer::shared().await).await;
        let b = Browser::start().await?;
        // axe reads every node of a page: give it longer than a click on a busy machine.
        b.client
            .update_timeouts(TimeoutConfiguration::new(Some(Duration::from_secs(60)), Some(Duration::from_secs(60)), Some(Duration::ZERO)))
            .await?;
        let conversation = format!("/conversations/{}", seeded.conversation);
        let mut failures = Vec::new();

        sign_in(&b, &app.address).await?;
        let owner = main_pages(&b, &app.address, &[&conversation, &seeded.activity_path, "/no-such-page"]).await?;
        for path in &owner {
            failures.extend(violations(&b, &app.address, "owner", path).await?);
        }
        // The audit log's When stays on one line, wide and as narrow as this window goes
        // (Chromium keeps a window opened wide at 500 px or more).
        for width in [1280, 390] {
            let frame = js(&b, "return window.outerWidth - window.innerWidth").await?.as_u64().unwrap_or(0);
            b.client.set_window_size(width + u32::try_from(frame).unwrap_or(0), 900).await?;
            let resized = if width > 1000 { "window.innerWidth >= 1200" } else { "window.innerWidth <= 600" };
            wait_until(&b, "the window's new width", &format!("return {resized}")).await?;
            b.goto(&format!("{}/audit", app.address)).await?;
            b.wait_for("#audit-table").await?;
            let inner = js(&b, "return window.innerWidth").await?;
            assert_eq!(js(&b, WHEN_ON_ONE_LINE).await?, Value::Bool(true), "the audit log's When wraps at {inner} px");
        }
        b.client.set_window_size(1280, 900).await?;
        wait_until(&b, "the window's width back", "return window.innerWidth >= 1200").await?;

        b.click(".user-menu button[type=submit]").await?;
        b.wait_for("#password").await?;
        sign_in_as(&b, &app.address, &seeded.member_email, &seeded.member_password).await?;
        let member = main_pages(&b, &app.address, &[&conversation, "/members"]).await?;
        for path in &member {
            failures.extend(violations(&b, &app.address, "member", path).await?);
        }
        eprintln!("owner pages: {owner:?}\nmember pages: {member:?}");
        for needed in ["/", "/sandboxes", "/sandboxes/running", "/sandboxes/activity", "/agents", "/conversations", "/documents", "/members", "/vault", "/tokens", "/account"] {
            assert!(owner.iter().any(|p| p == needed), "the owner's sweep missed {needed}: {owner:?}");
        }
        assert!(owner.iter().any(|p| p.ends_with("/policy")), "no Policy page: {owner:?}");
        assert!(member.len() >= 5, "{member:?}");
        assert!(failures.is_empty(), "{} serious or critical accessibility violations:\n{}", failures.len(), failures.join("\n"));
        b.close().await
    }
}
