//! Real Chromium: the connection dialog and the Connections table as issue 9 asks them to behave
//! (a refused save, "Save anyway", live health, no stale message after a probe, the Vault's "Used
//! by", deleting a connection with its key), on SQLite and PostgreSQL.

use fantoccini::Locator;

use crate::browser::{self, Browser};
use crate::browser_attach::both_widths;
use crate::db_test;
use crate::support::browser_sign_in::sign_in;

/// The two widths every screen is looked at.
const WIDE: (u32, u32) = (1440, 1000);
const NARROW: (u32, u32) = (390, 844);

/// With `SCREENSHOTS=1`, saves `target/screenshots/<name>-1440.png` and `-390.png` to look at,
/// each as tall as `SCREENSHOTS` says (e.g. `SCREENSHOTS=2000` to see a whole dialog).
async fn shots(b: &Browser, name: &str) -> anyhow::Result<()> {
    let Ok(tall) = std::env::var("SCREENSHOTS") else {
        return Ok(());
    };
    std::fs::create_dir_all("target/screenshots")?;
    for (w, h) in [WIDE, NARROW] {
        let h = tall.parse::<u32>().ok().filter(|t| *t > 100).unwrap_or(h);
        b.client.set_window_size(w, h).await?;
        b.screenshot(format!("target/screenshots/{name}-{w}.png")).await?;
    }
    b.client.set_window_size(WIDE.0, WIDE.1).await?;
    Ok(())
}

async fn is_absent(b: &Browser, css: &str) -> anyhow::Result<bool> {
    Ok(b.client.find_all(Locator::Css(css)).await?.is_empty())
}

db_test! {
    async fn a_wrong_key_is_refused_saved_anyway_shown_as_key_refused_and_deleted_with_its_key(app: TestApp) -> anyhow::Result<()> {
        if !browser::browser_or_skip("a_wrong_key_is_refused_saved_anyway_shown_as_key_refused_and_deleted_with_its_key") {
            return Ok(());
        }
        let peer = crate::peer::shared().await;
        app.setup_owner().await;
        let b = Browser::start_with_args(&[&format!("--window-size={},{}", WIDE.0, WIDE.1)]).await?;
        sign_in(&b, &app.address).await?;
        b.goto(&format!("{}/sandboxes", app.address)).await?;
        b.click("#add-connection").await?;
        b.wait_for("dialog#connection-dialog[open] #connection-name").await?;
        shots(&b, "connection-dialog").await?;

        // "Test this host" after an address error: the message is at Address, then gone.
        b.fill("#connection-name", "eu").await?;
        b.fill("#connection-address", "http://169.254.169.254/").await?;
        b.fill("#connection-new-key", &peer.token).await?;
        b.click("#probe-button").await?;
        b.wait_for_text("#connection-address-error", "link-local").await?;
        let kept = b.wait_for("#connection-new-key").await?.prop("value").await?;
        assert_eq!(kept.as_deref(), Some(peer.token.as_str()), "the pasted token was kept across the redraw");
        b.fill("#connection-address", &peer.url).await?;
        b.click("#probe-button").await?;
        b.wait_for_text("#probe-result", "accepted the key").await?;
        assert!(is_absent(&b, ".field-error").await?, "a stale message stayed in the dialog");
        // (Text is read once a swapped-in element has faded in: a transparent one has none.)
        let cards = b.wait_for_text("#connection-runtime", "offered by this host").await?;
        assert!(cards.contains("offered by this host") && cards.contains("builds on first use"), "{cards}");
        shots(&b, "connection-dialog-tested").await?;

        // A wrong key: the save is refused with the host's reason at the key, then saved anyway.
        b.fill("#connection-new-key", "not-the-token-0123456789").await?;
        b.click("#save-connection").await?;
        b.wait_for_text("#connection-new-key-error", "Credential refused").await?;
        b.wait_for_text("#save-refused", "New token").await?;
        assert!(is_absent(&b, "#probe-result").await?, "the earlier success still shows beside the refusal");
        shots(&b, "connection-dialog-refused").await?;
        // On a laptop's 800 px the dialog scrolls, and Save anyway stays in view at any scroll.
        b.client.set_window_size(1280, 800).await?;
        for scroll in ["0", "dialog.scrollHeight"] {
            let place = b
                .client
                .execute(
                    &format!(
                        "const dialog = document.querySelector('#connection-dialog'); dialog.scrollTop = {scroll};
                         const d = dialog.getBoundingClientRect(), s = document.querySelector('#save-anyway').getBoundingClientRect();
                         return [dialog.scrollHeight > dialog.clientHeight, s.top >= d.top && s.bottom <= d.bottom && s.bottom <= window.innerHeight];"
                    ),
                    vec![],
                )
                .await?;
            assert_eq!(place, serde_json::json!([true, true]), "scrolled to {scroll}: the dialog scrolls, Save anyway in view");
        }
        b.client.set_window_size(WIDE.0, WIDE.1).await?;
        b.click("#save-anyway").await?;
        // The save navigates (HX-Redirect): wait through it.
        b.wait_for_text("#connections-table", "eu").await?;
        let id = app.scalar_strings("SELECT id FROM sandbox_connections").await.remove(0);
        let cell = b.wait_for_text(&format!("#health-{id}"), "key refused").await?;
        assert!(cell.contains("Rotate key") && cell.contains("Edit"), "{cell}");
        assert!(!b.client.source().await?.contains(&peer.token), "the token reached the browser");
        shots(&b, "connections").await?;

        // The Vault says which connection uses the key.
        b.click("nav.sidebar-nav a[href='/vault']").await?;
        b.wait_for_text(".secret-used-by", "eu").await?;
        shots(&b, "vault").await?;

        // Deleted with its key, from the confirmation dialog.
        b.click("nav.sidebar-nav a[href='/sandboxes']").await?;
        // The row's rarer actions are behind More, its Delete a quiet item there (axe-clean open).
        let row = format!("#connection-{id}");
        b.wait_for(&format!("{row} .row-menu summary")).await?;
        let buttons = b.client.find_all(Locator::Css(&format!("{row} .row-actions > .btn"))).await?.len();
        assert_eq!(buttons, 2, "Policy and Edit beside More");
        assert!(is_absent(&b, &format!("{row} .btn-danger")).await?, "a solid red Delete in the row");
        b.click(&format!("{row} .row-menu summary")).await?;
        b.wait_for(&format!("{row} .row-menu[open] a.menu-item-danger")).await?;
        both_widths(&b, "the Connections row's More menu").await?;
        b.click(&format!("{row} a[href$='/delete']")).await?;
        b.wait_for("dialog#delete-connection-dialog[open] #delete-key").await?;
        shots(&b, "connection-delete").await?;
        b.click("#delete-key").await?;
        b.click("#confirm-delete").await?;
        b.wait_for_text("#flash", "deleted from the vault too").await?;
        assert_eq!(app.count("sandbox_connections").await, 0);
        assert_eq!(app.count("vault_secrets").await, 0);
        b.close().await
    }
}
