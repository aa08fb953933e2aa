//! The smaller items of issue 49's walk in real Chromium at 1280 and 390 px, axe-core after each
//! step (serious and critical = 0), on SQLite and PostgreSQL: the organization changes only on
//! Switch, never on an arrow key in its select (WCAG 3.2.2); the phone's Menu is a button that
//! says whether it is expanded, and Escape folds it; a file low in a long Documents tree opens
//! beside the tree without moving the page, its Close in view, and closing the phone's sheet
//! returns the focus to the file's link; Activity's rows and Home's figures are compact on a phone.

use reqwest::Method;
use serde_json::json;

use crate::browser::{self, Browser};
use crate::browser_attach::{axe_clean, both_widths, wide_browser, width};
use crate::browser_screens::{js, wait_until};
use crate::db_test;
use crate::peer;
use crate::support::browser_sign_in::sign_in;
use crate::support::{service_agent, Org};

/// WebDriver's codes of the keys pressed here.
const ARROW_UP: &str = "\u{e013}";
const ARROW_DOWN: &str = "\u{e015}";
const ESCAPE: &str = "\u{e00c}";

/// A string the page's script returned.
async fn text_of(b: &Browser, script: &str) -> anyhow::Result<String> {
    Ok(js(b, script).await?.as_str().unwrap_or_default().to_string())
}

db_test! {
    async fn the_organization_changes_only_on_switch_and_the_phone_menu_is_a_button_in_chromium(app: TestApp) -> anyhow::Result<()> {
        if !browser::browser_or_skip("the_organization_changes_only_on_switch_and_the_phone_menu_is_a_button_in_chromium") {
            return Ok(());
        }
        app.setup_owner().await;
        let r = app.web.post_form("/orgs/new", &[("name", "Second shop")]).await;
        assert_eq!(r.status, 303, "{}", r.body);

        let b = wide_browser().await?;
        sign_in(&b, &app.address).await?;
        b.wait_for("#org-switch-select").await?;
        let here = text_of(&b, "return document.querySelector('main h1').textContent.trim()").await?;
        // Every submit of the switcher is counted and held while `__hold` is set.
        js(
            &b,
            "window.__submits = 0; window.__hold = true;
             window.addEventListener('submit', e => { if (!e.target.classList.contains('org-switch') || !window.__hold) return;
               window.__submits++; e.preventDefault(); e.stopImmediatePropagation(); }, true);
             return true;",
        )
        .await?;
        let first = js(&b, "return document.getElementById('org-switch-select').selectedIndex === 0").await?;
        let key = if first == true { ARROW_DOWN } else { ARROW_UP };
        b.wait_for("#org-switch-select").await?.send_keys(key).await?;
        wait_until(&b, "the arrow key to choose the other organization", &format!(
            "return document.getElementById('org-switch-select').selectedIndex === {}", if first == true { 1 } else { 0 }
        )).await?;
        let after = js(&b, "return [window.__submits, document.querySelector('main h1').textContent.trim(), location.pathname]").await?;
        assert_eq!(after, json!([0, here, "/"]), "an arrow key in the select switched the organization");
        let other = text_of(&b, "const s = document.getElementById('org-switch-select'); return s.options[s.selectedIndex].textContent").await?;
        let other_name = other.rsplit_once(" (").map(|(n, _)| n.to_string()).unwrap_or(other.clone());
        assert_ne!(other_name, here);
        both_widths(&b, "Home with another organization chosen").await?;
        js(&b, "window.__hold = false; return true;").await?;
        b.click("#org-switch-go").await?;
        b.wait_for_text("main h1", &other_name).await?;

        // The phone: a real button, folded; it unfolds and says so; Escape folds it again.
        width(&b, 390).await?;
        let menu = js(&b, "const m = document.getElementById('menu-button'); const r = m ? m.getBoundingClientRect() : null;
            return [m && m.tagName, m && m.getAttribute('aria-expanded'), m && m.getAttribute('aria-controls'), !!r && r.width > 0,
              getComputedStyle(document.getElementById('nav-toggle')).display,
              getComputedStyle(document.querySelector('label.menu-button')).display,
              getComputedStyle(document.getElementById('sidebar-nav')).display]").await?;
        assert_eq!(menu, json!(["BUTTON", "false", "sidebar-nav", true, "none", "none", "none"]), "the folded menu");
        b.click("#menu-button").await?;
        let open = js(&b, "return [document.getElementById('menu-button').getAttribute('aria-expanded'),
            getComputedStyle(document.getElementById('sidebar-nav')).display]").await?;
        assert_eq!(open, json!(["true", "flex"]));
        axe_clean(&b, "the phone's menu unfolded").await?;
        b.wait_for("#sidebar-nav a[href='/documents']").await?.send_keys(ESCAPE).await?;
        let folded = js(&b, "return [document.getElementById('menu-button').getAttribute('aria-expanded'),
            getComputedStyle(document.getElementById('sidebar-nav')).display, document.activeElement.id]").await?;
        assert_eq!(folded, json!(["false", "none", "menu-button"]), "Escape folds the menu and returns to its button");
        // After a boosted page change the new page's button works the same.
        b.click("#menu-button").await?;
        b.click("#sidebar-nav a[href='/documents']").await?;
        b.wait_for_text("main h1", "Documents").await?;
        wait_until(&b, "the new page's menu button", "const m = document.getElementById('menu-button');
            return !!m && !m.hidden && m.getAttribute('aria-expanded') === 'false'
              && getComputedStyle(document.getElementById('sidebar-nav')).display === 'none'").await?;
        axe_clean(&b, "Documents at 390 px, the menu folded").await?;
        b.close().await?;
        Ok(())
    }
}

db_test! {
    async fn a_file_low_in_a_long_tree_opens_beside_it_and_phone_rows_are_compact_in_chromium(app: TestApp) -> anyhow::Result<()> {
        if !browser::browser_or_skip("a_file_low_in_a_long_tree_opens_beside_it_and_phone_rows_are_compact_in_chromium") {
            return Ok(());
        }
        let peer = peer::shared().await;
        let o = Org::new(&app).await;
        o.connect(peer).await;
        let agent = o.agent(service_agent("lister", "run")).await;
        let run = o.run(&agent, None, json!({})).await;
        assert_eq!(o.write(&run, "file-000.txt", "first").await.status, 204);
        let key = o.ws(&run, Method::GET, "state", None).await.json()["session_key"].as_str().expect("key").to_string();
        let dir = peer.workspace_root.join(&key).join("workspace");
        for i in 1..80 {
            std::fs::write(dir.join(format!("file-{i:03}.txt")), format!("file {i}\n"))?;
        }
        let page = o.call(Method::GET, "/api/v1/documents", None).await.json();
        let id = page["groups"][0]["workspace"]["id"].as_str().unwrap_or_else(|| panic!("a group: {page}")).to_string();

        let b = wide_browser().await?;
        sign_in(&b, &app.address).await?;
        b.goto(&format!("{}/documents/workspaces/{id}", app.address)).await?;
        let last = "li.tree-file[data-path='file-079.txt'] a.tree-open";
        b.wait_for(last).await?;
        let before = js(&b, &format!("document.querySelector(\"{last}\").scrollIntoView({{block: 'center'}}); return window.scrollY")).await?;
        assert!(before.as_f64().is_some_and(|y| y > 600.0), "the tree is not long enough to scroll: {before}");
        b.click(last).await?;
        b.wait_for_text("#preview-path", "file-079.txt").await?;
        wait_until(&b, "the pane to take the focus", "return document.activeElement && document.activeElement.id === 'workspace-preview'").await?;
        let view = js(&b, "const c = document.getElementById('preview-close').getBoundingClientRect();
            const t = document.querySelector('.topbar').getBoundingClientRect();
            return [window.scrollY, c.top >= t.bottom && c.bottom <= window.innerHeight]").await?;
        assert_eq!(view, json!([before, true]), "opening the file moved the page or hid Close (scrollY {before} before)");
        axe_clean(&b, "a file open beside a long tree at 1280 px").await?;

        // A phone: the sheet opens over the page; its Close returns the focus to the file's link.
        width(&b, 390).await?;
        b.goto(&format!("{}/documents/workspaces/{id}", app.address)).await?;
        b.click("li.tree-file[data-path='file-003.txt'] a.tree-open").await?;
        b.wait_for_text("#workspace-preview.preview-open #preview-path", "file-003.txt").await?;
        axe_clean(&b, "the phone's preview sheet").await?;
        b.click("#preview-close").await?;
        wait_until(&b, "the focus back on the file's link", "const a = document.activeElement;
            return !!a && a.matches('a.tree-open') && a.closest('li').getAttribute('data-path') === 'file-003.txt'
              && !document.getElementById('preview-path')").await?;

        // Activity's rows: a few lines each, not a card of nine labelled lines.
        b.goto(&format!("{}/sandboxes/activity", app.address)).await?;
        b.wait_for("#oplog tr.operation").await?;
        let tallest = js(&b, "return Math.max(...Array.from(document.querySelectorAll('#oplog tr.operation'))
            .map(r => r.getBoundingClientRect().height))").await?;
        assert!(tallest.as_f64().is_some_and(|h| h > 0.0 && h <= 150.0), "an Activity row is {tallest} px tall at 390 px");
        axe_clean(&b, "Activity at 390 px").await?;

        // Home's figures side by side, small: the first screen shows more than them.
        b.goto(&format!("{}/", app.address)).await?;
        b.wait_for("#home-stats").await?;
        let stats = js(&b, "return document.getElementById('home-stats').getBoundingClientRect().height").await?;
        assert!(stats.as_f64().is_some_and(|h| h > 0.0 && h <= 140.0), "Home's figures take {stats} px at 390 px");
        axe_clean(&b, "Home at 390 px").await?;
        b.close().await?;
        Ok(())
    }
}
