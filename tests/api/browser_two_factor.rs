//! Real Chromium for two-factor sign-in (issue 49, item 7), at 1280 and 390 px: setting it up
//! from the account page (the QR code, the secret as text, the first code), the recovery codes
//! shown once, the sign-in's second step, and the owners' switch on Members; axe finds no serious
//! or critical violation on any of those pages (on SQLite and PostgreSQL).

use serde_json::Value;

use crate::browser::{self, Browser};
use crate::db_test;
use crate::helpers::{MEMBER_PASSWORD, OWNER_EMAIL, OWNER_PASSWORD};
use crate::support::browser_sign_in::{sign_in_as, submit_sign_in};
use crate::support::two_factor::App;

async fn js(b: &Browser, script: &str) -> anyhow::Result<Value> {
    Ok(b.client.execute(script, vec![]).await?)
}

/// Sets up two-factor sign-in for the signed-in person and signs in again with it; the axe
/// violations of each page on the way.
async fn set_up_and_sign_in_again(
    b: &Browser,
    base: &str,
    who: &str,
    email: &str,
    password: &str,
) -> anyhow::Result<(App, Vec<String>)> {
    let mut bad = crate::browser_axe::violations(b, base, who, "/account").await?;
    b.click("#two-factor-set-up").await?;
    b.wait_for("#two-factor-qr").await?;
    let shown =
        js(b, "var i = document.querySelector('#two-factor-qr'); return i.complete && i.naturalWidth > 0;").await?;
    assert_eq!(shown, Value::Bool(true), "the QR code is an image the browser shows (CSP img-src data:)");
    bad.extend(crate::browser_axe::violations(b, base, who, "/account/two-factor").await?);
    let secret = b.text("#two-factor-secret").await?;
    let mut phone = App::of(&secret);
    b.fill("#code", "000000").await?;
    b.click("#two-factor-confirm").await?;
    b.wait_for_text("#code-error", "not the code").await?;
    b.fill("#code", &phone.next_code().await).await?;
    b.click("#two-factor-confirm").await?;
    b.wait_for("#recovery-codes").await?;
    let codes = js(b, "return document.querySelectorAll('#recovery-codes code').length;").await?;
    assert_eq!(codes, Value::from(10));
    bad.extend(axe_here(b, who, "recovery codes").await?);
    b.click("#recovery-codes-done").await?;
    b.wait_for_text("#two-factor-status", "since").await?;

    b.click(".user-menu button[type=submit]").await?;
    b.wait_for("#password").await?;
    submit_sign_in(b, base, email, password).await?;
    b.wait_for("#second-step-button").await?;
    assert_eq!(b.current_path().await?, "/login/two-factor");
    bad.extend(axe_here(b, who, "/login/two-factor").await?);
    b.fill("#code", &phone.next_code().await).await?;
    b.click("#second-step-button").await?;
    b.wait_for("nav.sidebar-nav").await?;
    Ok((phone, bad))
}

/// axe on the page as it is (one reached by a form's answer, not by its address).
async fn axe_here(b: &Browser, who: &str, what: &str) -> anyhow::Result<Vec<String>> {
    crate::browser_axe::violations_here(b, &format!("{who} {what}")).await
}

db_test! {
    async fn two_factor_sign_in_in_a_real_browser_at_both_widths(app: TestApp) -> anyhow::Result<()> {
        if !browser::browser_or_skip("two_factor_sign_in_in_a_real_browser_at_both_widths") {
            return Ok(());
        }
        app.setup_owner().await;
        app.member_with_role("phone@example.com", "member").await;
        let b = Browser::start().await?;

        // 1280 px: the owner sets it up, signs in with it, and requires it of members.
        b.client.set_window_size(1280, 800).await?;
        sign_in_as(&b, &app.address, OWNER_EMAIL, OWNER_PASSWORD).await?;
        let (mut owner_phone, mut bad) =
            set_up_and_sign_in_again(&b, &app.address, "owner at 1280", OWNER_EMAIL, OWNER_PASSWORD).await?;
        bad.extend(crate::browser_axe::violations(&b, &app.address, "owner at 1280", "/members").await?);
        b.click("#require-two-factor").await?;
        b.click("#require-two-factor-save").await?;
        b.wait_for_text("#flash", "Two-factor sign-in is required").await?;
        bad.extend(crate::browser_axe::violations(&b, &app.address, "owner at 1280", "/account").await?);
        b.click(".user-menu button[type=submit]").await?;
        b.wait_for("#password").await?;

        // 390 px: a member is sent to set it up before anything else, then signs in with it.
        b.client.set_window_size(390, 844).await?;
        submit_sign_in(&b, &app.address, "phone@example.com", MEMBER_PASSWORD).await?;
        b.wait_for("#two-factor-required").await?;
        assert_eq!(b.current_path().await?, "/account/two-factor");
        bad.extend(axe_here(&b, "member at 390", "/account/two-factor (required)").await?);
        let scroll = js(&b, "return document.documentElement.scrollWidth - window.innerWidth;").await?;
        assert!(scroll.as_f64().unwrap_or(1.0) <= 0.0, "the enrolment page scrolls sideways at 390 px: {scroll}");
        let secret = b.text("#two-factor-secret").await?;
        let mut phone = App::of(&secret);
        b.fill("#code", &phone.next_code().await).await?;
        b.click("#two-factor-confirm").await?;
        b.wait_for("#recovery-codes").await?;
        bad.extend(axe_here(&b, "member at 390", "recovery codes").await?);
        let scroll = js(&b, "return document.documentElement.scrollWidth - window.innerWidth;").await?;
        assert!(scroll.as_f64().unwrap_or(1.0) <= 0.0, "the recovery codes scroll sideways at 390 px: {scroll}");
        b.click("#recovery-codes-done").await?;
        b.wait_for_text("#two-factor-status", "since").await?;
        bad.extend(crate::browser_axe::violations(&b, &app.address, "member at 390", "/account").await?);
        b.click(".user-menu button[type=submit]").await?;
        b.wait_for("#password").await?;
        submit_sign_in(&b, &app.address, "phone@example.com", MEMBER_PASSWORD).await?;
        b.wait_for("#second-step-button").await?;
        bad.extend(axe_here(&b, "member at 390", "/login/two-factor").await?);
        b.fill("#code", &phone.next_code().await).await?;
        b.click("#second-step-button").await?;
        b.wait_for("nav.sidebar-nav").await?;

        // The owner's pages at 390 px too.
        b.click(".user-menu button[type=submit]").await?;
        b.wait_for("#password").await?;
        submit_sign_in(&b, &app.address, OWNER_EMAIL, OWNER_PASSWORD).await?;
        b.wait_for("#second-step-button").await?;
        b.fill("#code", &owner_phone.next_code().await).await?;
        b.click("#second-step-button").await?;
        b.wait_for("nav.sidebar-nav").await?;
        for path in ["/members", "/account"] {
            bad.extend(crate::browser_axe::violations(&b, &app.address, "owner at 390", path).await?);
        }
        assert!(bad.is_empty(), "accessibility: {bad:?}");
        b.close().await
    }
}
