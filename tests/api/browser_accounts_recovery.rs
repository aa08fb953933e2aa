//! Real Chromium for issue 30's account flows, in one browser session: the invitation page's
//! repeated password, an admin's password reset confirmed in
//! the console's own dialog (axe-clean at 1280 and 390 px), and a refused demotion of the last owner shown
//! in its row, in view, its select back at the stored role (on SQLite and PostgreSQL).

use anyhow::Context;
use serde_json::{json, Value};

use crate::browser::{self, Browser};
use crate::browser_attach::both_widths;
use crate::browser_screens::wait_until;
use crate::db_test;
use crate::support::browser_sign_in::{sign_in, submit_sign_in};

async fn js(b: &Browser, script: &str, args: Vec<Value>) -> anyhow::Result<Value> {
    Ok(b.client.execute(script, args).await?)
}

db_test! {
    async fn account_recovery_flows_in_a_real_browser(app: TestApp) -> anyhow::Result<()> {
        if !browser::browser_or_skip("account_recovery_flows_in_a_real_browser") {
            return Ok(());
        }
        app.setup_owner().await;
        let link = app.invite("new@example.com", "operator").await;
        // Enough pending invitations that the members table is below the fold.
        for i in 0..12 {
            app.invite(&format!("pending{i}@example.com"), "member").await;
        }
        let b = Browser::start().await?;
        b.client.set_window_size(1280, 720).await?;

        // 1. The invitation page: two different passwords are refused at the second field.
        b.goto(&format!("{}{link}", app.address)).await?;
        b.fill("#password", "my own new password").await?;
        b.fill("#confirm-password", "my own other password").await?;
        b.click("#join-button").await?;
        b.wait_for_text("#confirm-password-error", "not the same").await?;
        let focused = js(&b, "return document.activeElement && document.activeElement.id;", vec![]).await?;
        assert_eq!(focused, json!("confirm-password"));
        assert_eq!(app.count("users").await, 1, "nothing written");
        b.fill("#password", "my own new password").await?;
        b.fill("#confirm-password", "my own new password").await?;
        b.click("#join-button").await?;
        b.wait_for("nav.sidebar-nav").await?;
        assert_eq!(app.count("users").await, 2);
        b.click(".user-menu button[type=submit]").await?;
        b.wait_for("#password").await?;

        // 2. The owner resets the new member's password; it is shown once, and signing in with
        // it leads to choosing their own.
        sign_in(&b, &app.address).await?;
        b.goto(&format!("{}/members", app.address)).await?;
        let new_id = app
            .scalar_strings("SELECT m.id FROM memberships m JOIN users u ON u.id = m.user_id WHERE u.email = 'new@example.com'")
            .await
            .remove(0);
        // Confirmed in the console's own dialog, not a native confirm(); axe-clean at both widths.
        b.click(&format!("#member-{new_id} a.member-reset")).await?;
        b.wait_for("dialog#member-reset-dialog[open] #member-reset-confirm").await?;
        // Read once the dialog shows it (WebDriver reads a title still fading in as "").
        let what = b.wait_for_text("#member-reset-title", "new@example.com").await?;
        assert_eq!(what.trim(), "Reset the password of new@example.com?");
        both_widths(&b, "the reset's confirmation").await?;
        b.click("#member-reset-confirm").await?;
        // Read once htmx has settled it in (text being added is not yet visible to WebDriver).
        let one_time = b.wait_for_text("#one-time-password", "-").await?.trim().to_string();
        assert_eq!(one_time.len(), 23, "{one_time}");

        // 3. Demoting the last owner, scrolled down: the refusal is in the owner's row, on
        // screen below the sticky top bar, and the select is back at Owner.
        let owner_id = app
            .scalar_strings("SELECT m.id FROM memberships m JOIN users u ON u.id = m.user_id WHERE u.email = 'owner@example.com'")
            .await
            .remove(0);
        let row = format!("#member-{owner_id}");
        let select = format!("#role-{owner_id}");
        js(&b, "document.querySelector(arguments[0]).scrollIntoView({block: 'center'});", vec![json!(row)]).await?;
        let scrolled = js(&b, "return window.scrollY;", vec![]).await?.as_f64().context("scrollY")?;
        assert!(scrolled > 100.0, "the members table is below the fold ({scrolled})");
        js(&b, "var s = document.querySelector(arguments[0]); s.value = 'admin';", vec![json!(select)]).await?;
        b.click(&format!("{row} form[action$='/role'] button[type=submit]")).await?;
        b.wait_for_text(&format!("#role-{owner_id}-error"), "last owner cannot be demoted").await?;
        wait_until(&b, "the select back at owner", &format!("return document.querySelector('{select}').value === 'owner';")).await?;
        let place = js(
            &b,
            "var e = document.querySelector(arguments[0]).getBoundingClientRect(); \
             var bar = document.querySelector('.topbar').getBoundingClientRect(); \
             return [e.top, e.bottom, bar.bottom, window.innerHeight, window.scrollY];",
            vec![json!(format!("#role-{owner_id}-error"))],
        )
        .await?;
        let n = |i: usize| place[i].as_f64().unwrap_or(f64::NAN);
        assert!(n(0) >= n(2) && n(1) <= n(3), "the message is on screen below the top bar: {place}");
        assert!((n(4) - scrolled).abs() < 50.0, "the page did not jump: {place}, was {scrolled}");
        assert_eq!(b.current_path().await?, "/members");
        assert_eq!(b.text("#flash").await?.trim(), "", "not in the flash under the top bar");
        assert_eq!(app.scalar_strings("SELECT role FROM memberships WHERE role = 'owner'").await.len(), 1);

        // The member signs in with the one-time password and must choose their own.
        b.click(".user-menu button[type=submit]").await?;
        b.wait_for("#password").await?;
        submit_sign_in(&b, &app.address, "new@example.com", &one_time).await?;
        b.wait_for("#new-password").await?;
        assert_eq!(b.current_path().await?, "/account/password");
        b.close().await
    }
}

db_test! {
    async fn a_forgotten_password_is_set_again_from_the_mailed_link_on_a_phone(app: TestApp)
        settings(&[("AGENTICOS_SMTP_URL", crate::support::smtp_sink::url())]) -> anyhow::Result<()>
    {
        if !browser::browser_or_skip("a_forgotten_password_is_set_again_from_the_mailed_link_on_a_phone") {
            return Ok(());
        }
        app.setup_owner().await;
        let email = format!("phone-{}@example.com", uuid::Uuid::new_v4().simple());
        app.member_with_role(&email, "member").await;
        let b = Browser::start().await?;
        b.client.set_window_size(390, 844).await?;

        // From the sign-in page to the form, with the keyboard's Enter.
        b.goto(&format!("{}/login", app.address)).await?;
        b.click("#forgot-link").await?;
        b.wait_for("#email").await?;
        let mut failures = crate::browser_axe::violations(&b, &app.address, "signed out", "/forgot-password").await?;
        b.fill("#email", &email).await?;
        b.client.find(fantoccini::Locator::Css("#email")).await?.send_keys("\u{E007}").await?;
        let sent = b.wait_for_text("#forgot-sent", "on its way").await?;
        assert!(sent.contains(&email), "{sent}");

        // The mailed link opens the page that sets it; the new password twice, then sign in.
        let mail = crate::support::smtp_sink::wait_for_mails(&email, 1).await.remove(0);
        let body = mail.body();
        let link = body.split_whitespace().find(|w| w.contains("/reset-password/")).context("a link in the mail")?;
        let path = crate::helpers::link_path(link);
        b.goto(&format!("{}{path}", app.address)).await?;
        b.wait_for("#new-password").await?;
        failures.extend(crate::browser_axe::violations(&b, &app.address, "signed out", &path).await?);
        assert!(failures.is_empty(), "accessibility: {failures:?}");
        let scroll = js(&b, "return document.documentElement.scrollWidth - window.innerWidth;", vec![]).await?;
        assert!(scroll.as_f64().unwrap_or(1.0) <= 0.0, "the page scrolls sideways at 390 px: {scroll}");
        b.fill("#new-password", "a phone-made password").await?;
        b.fill("#confirm-password", "a phone-made password").await?;
        b.click("form button[type=submit]").await?;
        b.wait_for_text("#login-notice", "new password is set").await?;
        submit_sign_in(&b, &app.address, &email, "a phone-made password").await?;
        b.wait_for("nav.sidebar-nav").await?;
        b.close().await
    }
}
