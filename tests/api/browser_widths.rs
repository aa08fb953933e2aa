//! A width sweep in real Chromium: every page an owner and a member reach (found by following
//! the console's own links from Home) at 1280 and at 390 px. A page fails when it scrolls
//! sideways (`document.scrollingElement.scrollWidth > innerWidth`) or when a row action (a link,
//! button or field in a table row) is off screen or clipped by a box that scrolls or hides.

use std::collections::{BTreeSet, VecDeque};

use anyhow::Context as _;
use serde_json::Value;

use crate::browser::{self, Browser};
use crate::browser_screens::{js, seed};
use crate::db_test;
use crate::peer;
use crate::support::browser_sign_in::{sign_in, sign_in_as};

/// The most pages one person's sweep visits (one of each kind: ids and values are folded).
const MAX_PAGES: usize = 80;

/// Links a sweep does not follow: they download, sign out, or leave the console's pages.
const SKIPPED: [&str; 8] = ["/logout", "/export", "/download", "/raw", "/api/", "/static/", "/openapi", "/health"];

/// The page's links to follow, as paths with their query.
const LINKS: &str = "return Array.from(document.querySelectorAll('a[href]'))
    .filter(a => !a.hasAttribute('download'))
    .map(a => a.getAttribute('href'))
    .filter(h => h.startsWith('/') && !h.startsWith('//'))
    .map(h => h.split('#')[0]);";

/// What does not fit: the page's sideways scroll and each row action off screen or clipped.
const FIT: &str = "const W = window.innerWidth; const bad = [];
    const sel = 'table tbody tr a[href], table tbody tr button, table tbody tr summary, table tbody tr select, table tbody tr input:not([type=hidden])';
    for (const el of document.querySelectorAll(sel)) {
      const r = el.getBoundingClientRect();
      if (r.width === 0 && r.height === 0) continue;
      if (el.closest('.sr-only')) continue;
      const name = (el.textContent.trim() || el.getAttribute('aria-label') || el.getAttribute('placeholder') || el.tagName).slice(0, 40);
      if (r.left < -0.5 || r.right > W + 0.5) { bad.push(`${name} at ${Math.round(r.left)}–${Math.round(r.right)} px`); continue; }
      for (let p = el.parentElement; p && p !== document.body; p = p.parentElement) {
        if (getComputedStyle(p).overflowX === 'visible') continue;
        const q = p.getBoundingClientRect();
        if (r.left < q.left - 0.5 || r.right > q.right + 0.5) {
          bad.push(`${name} clipped by ${p.tagName.toLowerCase()}.${p.className} (${Math.round(r.left)}–${Math.round(r.right)} in ${Math.round(q.left)}–${Math.round(q.right)})`);
          break;
        }
      }
    }
    const wide = Array.from(document.querySelectorAll('table')).filter(t => t.getBoundingClientRect().right > W + 0.5
        || (t.parentElement && t.getBoundingClientRect().right > t.parentElement.getBoundingClientRect().right + 0.5));
    for (const t of wide) {
      bad.push('a table ' + Math.round(t.getBoundingClientRect().width) + ' px wide, its columns: '
        + Array.from(t.querySelectorAll('thead th')).map(th => `${th.textContent.trim()} ${Math.round(th.getBoundingClientRect().width)}`).join(', '));
    }
    return { scroll: document.scrollingElement.scrollWidth, inner: W, bad };";

/// A path with its ids and values folded, so one page of each kind is visited.
fn kind(path: &str) -> String {
    let (p, q) = path.split_once('?').unwrap_or((path, ""));
    let folded: Vec<String> = p
        .split('/')
        .map(|s| if uuid::Uuid::parse_str(s).is_ok() || s.len() > 24 { "{id}".to_string() } else { s.to_string() })
        .collect();
    let mut keys: Vec<&str> = q.split('&').filter_map(|kv| kv.split('=').next()).filter(|k| !k.is_empty()).collect();
    keys.sort_unstable();
    keys.dedup();
    format!("{}?{}", folded.join("/"), keys.join("&"))
}

/// A browser whose page is `width` × `height` (Chromium widens a window resized below 500 px,
/// so each width gets a browser opened at it; the window is then grown by its own frame).
async fn browser_at(width: u32, height: u32) -> anyhow::Result<Browser> {
    let b = Browser::start_with_args(&[&format!("--window-size={width},{height}"), "--hide-scrollbars"]).await?;
    b.goto("about:blank").await?;
    let frame =
        js(&b, "return [window.outerWidth - window.innerWidth, window.outerHeight - window.innerHeight]").await?;
    let extra = |i: usize| frame[i].as_u64().and_then(|n| u32::try_from(n).ok()).unwrap_or(0);
    b.client.set_window_size(width + extra(0), height + extra(1)).await?;
    let inner = js(&b, "return window.innerWidth").await?;
    anyhow::ensure!(inner == width, "the viewport is {inner} px wide, not {width}");
    Ok(b)
}

/// Every page reachable from Home by the console's links (one of each kind, at most
/// [`MAX_PAGES`]), as paths.
async fn crawl(b: &Browser, base: &str) -> anyhow::Result<Vec<String>> {
    let mut seen = BTreeSet::new();
    let mut queue = VecDeque::from(["/".to_string()]);
    let mut pages = Vec::new();
    while let Some(path) = queue.pop_front() {
        if pages.len() >= MAX_PAGES {
            break;
        }
        if SKIPPED.iter().any(|s| path.contains(s)) || !seen.insert(kind(&path)) {
            continue;
        }
        b.goto(&format!("{base}{path}")).await?;
        // Only the console's pages (with its navigation) are swept and followed.
        if js(b, "return !!document.querySelector('main#main')").await? != Value::Bool(true) {
            continue;
        }
        let links = js(b, LINKS).await?;
        pages.push(path);
        queue.extend(links.as_array().into_iter().flatten().filter_map(Value::as_str).map(str::to_string));
    }
    Ok(pages)
}

/// What does not fit on each of `pages` at the browser's width, one line a page.
async fn misfits(b: &Browser, base: &str, who: &str, pages: &[String]) -> anyhow::Result<Vec<String>> {
    let mut failures = Vec::new();
    for path in pages {
        b.goto(&format!("{base}{path}")).await?;
        b.wait_for("main#main").await?;
        let fit = js(b, FIT).await.with_context(|| format!("measuring {path}"))?;
        let (scroll, inner) = (fit["scroll"].as_f64().unwrap_or(f64::MAX), fit["inner"].as_f64().unwrap_or(0.0));
        let mut what = Vec::new();
        if scroll > inner {
            what.push(format!("scrolls sideways ({scroll} px)"));
        }
        what.extend(fit["bad"].as_array().into_iter().flatten().filter_map(Value::as_str).map(str::to_string));
        if !what.is_empty() {
            failures.push(format!("{who} at {inner} px, {path}: {}", what.join("; ")));
        }
    }
    Ok(failures)
}

async fn sign_out(b: &Browser) -> anyhow::Result<()> {
    b.click(".user-menu button[type=submit]").await?;
    b.wait_for("#password").await?;
    Ok(())
}

db_test! {
    async fn every_page_fits_1280_and_390_px_with_every_row_action_on_screen(app: TestApp) -> anyhow::Result<()> {
        if !browser::browser_or_skip("every_page_fits_1280_and_390_px_with_every_row_action_on_screen") {
            return Ok(());
        }
        let seeded = seed(&app, peer::shared().await).await;
        let (member, password) = (seeded.member_email.as_str(), seeded.member_password.as_str());
        let desk = browser_at(1280, 800).await?;
        sign_in(&desk, &app.address).await?;
        let owner_pages = crawl(&desk, &app.address).await?;
        let mut failures = misfits(&desk, &app.address, "owner", &owner_pages).await?;
        sign_out(&desk).await?;
        sign_in_as(&desk, &app.address, member, password).await?;
        let member_pages = crawl(&desk, &app.address).await?;
        failures.extend(misfits(&desk, &app.address, "member", &member_pages).await?);
        desk.close().await?;

        let b = browser_at(390, 844).await?;
        sign_in(&b, &app.address).await?;
        failures.extend(misfits(&b, &app.address, "owner", &owner_pages).await?);
        sign_out(&b).await?;
        sign_in_as(&b, &app.address, member, password).await?;
        failures.extend(misfits(&b, &app.address, "member", &member_pages).await?);
        eprintln!("owner pages: {owner_pages:?}\nmember pages: {member_pages:?}");
        // The sweep reached the pages the navigation and the tables link to.
        assert!(owner_pages.len() >= 20 && member_pages.len() >= 4, "owner: {owner_pages:?}\nmember: {member_pages:?}");
        assert!(failures.is_empty(), "{} pages do not fit:\n{}", failures.len(), failures.join("\n"));
        b.close().await
    }
}
