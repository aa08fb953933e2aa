//! Issue 30: a person who forgot their password gets a reset link by mail where
//! `AGENTICOS_SMTP_URL` is set (the console's lettre delivering to a local SMTP sink), and the
//! page says to ask an admin where it is not. On SQLite and PostgreSQL.

use crate::db_test;
use crate::helpers::{link_path, Client, Resp, MEMBER_PASSWORD};
use crate::support::smtp_sink;

/// An address of this test's own: the sink is shared by every test of the binary.
fn unique_email(what: &str) -> String {
    format!("{what}-{}@example.com", uuid::Uuid::new_v4().simple())
}

/// Posts `fields` with the CSRF token of the form on `page` (no sign-in needed).
async fn post_page_form(c: &Client, page: &str, action: &str, fields: &[(&str, &str)]) -> Resp {
    let form_page = c.get(page).await;
    let token =
        form_page.select_attr("input[name=csrf_token]", "value").unwrap_or_else(|| panic!("{}", form_page.body));
    let mut all: Vec<(&str, &str)> = fields.to_vec();
    all.push(("csrf_token", &token));
    c.send(c.http.post(c.url(action)).form(&all)).await
}

async fn ask_for_link(c: &Client, email: &str) -> Resp {
    post_page_form(c, "/forgot-password", "/forgot-password", &[("email", email)]).await
}

/// The reset link's path in a mail (the links carry `AGENTICOS_PUBLIC_URL`, port 0 in tests).
fn reset_path(mail: &smtp_sink::Mail) -> String {
    let body = mail.body();
    let link = body.split_whitespace().find(|w| w.contains("/reset-password/")).unwrap_or_else(|| panic!("{body}"));
    link_path(link)
}

async fn set_password(c: &Client, path: &str, new: &str, confirm: &str) -> Resp {
    post_page_form(c, path, path, &[("new_password", new), ("confirm_password", confirm)]).await
}

db_test! {
    async fn a_forgotten_password_is_set_again_with_a_mailed_link_that_works_once(app: TestApp)
        settings(&[("AGENTICOS_SMTP_URL", smtp_sink::url())])
    {
        app.setup_owner().await;
        let email = unique_email("forgot");
        let signed_in = app.member_with_role(&email, "member").await;
        assert_eq!(signed_in.get("/documents").await.status, 200);

        // The sign-in page leads to the form.
        let c = app.new_client();
        let login = c.get("/login").await;
        assert_eq!(login.select_attr("#forgot-link", "href").as_deref(), Some("/forgot-password"));
        let form = c.get("/forgot-password").await;
        assert_eq!(form.status, 200);
        assert!(form.select_text("#forgot-no-mail").is_none(), "{}", form.body);

        // A malformed address is refused at its field; an unknown one answers as a known one does.
        let bad = ask_for_link(&c, "not an address").await;
        assert_eq!(bad.status, 422, "{}", bad.body);
        assert!(bad.field_error("email").is_some(), "{}", bad.body);
        let nobody = unique_email("nobody");
        let unknown = ask_for_link(&c, &nobody).await;
        let known = ask_for_link(&c, &format!("  {}  ", email.to_uppercase())).await;
        assert_eq!((unknown.status.as_u16(), known.status.as_u16()), (200, 200), "{}", known.body);
        let said = |r: &Resp, address: &str| r.select_text("#forgot-sent").map(|t| t.replace(address, "ADDRESS"));
        assert!(said(&known, &email).is_some_and(|t| t.contains("If ADDRESS has an account")), "{}", known.body);
        assert_eq!(said(&unknown, &nobody), said(&known, &email), "the answer tells nothing about the account");

        // One mail, to the account's address, from the default sender, with the link.
        let mails = smtp_sink::wait_for_mails(&email, 1).await;
        assert_eq!(mails.len(), 1);
        let mail = &mails[0];
        assert_eq!(mail.from, "noreply@localhost");
        assert_eq!(mail.header("Subject").as_deref(), Some("Reset your agenticos password"));
        assert!(mail.body().contains(&format!("agenticos account {email} at http://127.0.0.1:0")), "{}", mail.body());
        let path = reset_path(mail);
        let token = path.rsplit('/').next().unwrap_or_default().to_string();
        assert!(token.len() >= 40, "{path}");
        assert!(smtp_sink::mails_to(&nobody).is_empty(), "nothing went to an address without an account");
        // Only the token's hash is stored; no log line has the token.
        let stored = app.scalar_strings("SELECT token_hash FROM password_reset_links").await;
        assert_eq!(stored, [agenticos::auth::secrets::sha256_hex(&token)]);
        assert!(!crate::helpers::captured_logs().contains(&token), "the token is in the log");

        // The link's page names the account; a mismatch or a short password changes nothing.
        let page = c.get(&path).await;
        assert_eq!(page.status, 200, "{}", page.body);
        assert!(page.body.contains(&email), "{}", page.body);
        let mismatch = set_password(&c, &path, "my brand new password", "my brand new passwort").await;
        assert_eq!(mismatch.status, 422, "{}", mismatch.body);
        assert!(mismatch.field_error("confirm-password").is_some_and(|m| m.contains("not the same")), "{}", mismatch.body);
        let short = set_password(&c, &path, "short", "short").await;
        assert_eq!(short.status, 422, "{}", short.body);
        assert!(short.field_error("new-password").is_some(), "{}", short.body);
        assert_eq!(signed_in.get("/documents").await.status, 200, "nothing changed yet");

        // The new password is set: every sign-in of the account ends, sign-in says so.
        let done = set_password(&c, &path, "my brand new password", "my brand new password").await;
        assert_eq!(done.status, 303, "{}", done.body);
        assert_eq!(done.location().as_deref(), Some("/login?reset=done"));
        let notice = c.get("/login?reset=done").await;
        assert!(notice.select_text("#login-notice").is_some_and(|t| t.contains("new password is set")), "{}", notice.body);
        let ended = signed_in.get("/documents").await;
        assert_eq!(ended.status, 303, "the old sign-in ended");
        assert_eq!(c.post_login(&email, MEMBER_PASSWORD).await.status, 401, "the old password is gone");
        assert_eq!(c.post_login(&email, "my brand new password").await.status, 303);
        let audited = app
            .scalar_strings("SELECT actor_label || '|' || target || '|' || detail FROM audit_events WHERE action = 'account.password_reset_by_mail'")
            .await;
        assert_eq!(audited, [format!("{email}|{email}|with a link sent by mail; 1 sign-in ended")]);

        // The link worked once: its page and its form now say it is gone (410), and nothing changes.
        let again = c.get(&path).await;
        assert_eq!(again.status, 410);
        assert!(again.select_text("#reset-gone").is_some(), "{}", again.body);
        // (The gone page has no form: the sign-in page's token serves, as for any form of this client.)
        let fields = [("new_password", "an attacker's password"), ("confirm_password", "an attacker's password")];
        let replay = post_page_form(&c, "/login", &path, &fields).await;
        assert_eq!(replay.status, 410, "{}", replay.body);
        assert_eq!(app.new_client().post_login(&email, "my brand new password").await.status, 303);
        assert_eq!(app.count("password_reset_links").await, 0);
    }
}

db_test! {
    async fn links_are_limited_per_hour_expire_and_end_with_any_new_password(app: TestApp)
        settings(&[("AGENTICOS_SMTP_URL", smtp_sink::url()), ("AGENTICOS_MAIL_FROM", "Console <console@example.com>")])
    {
        app.setup_owner().await;
        let email = unique_email("limited");
        app.member_with_role(&email, "member").await;
        let c = app.new_client();
        for _ in 0..4 {
            assert_eq!(ask_for_link(&c, &email).await.status, 200);
        }
        let mails = smtp_sink::wait_for_mails(&email, 3).await;
        assert_eq!(app.count("password_reset_links").await, 3, "the fourth request in the hour sent nothing");
        assert_eq!(mails[0].from, "console@example.com");
        assert!(mails[0].header("From").is_some_and(|f| f.contains("Console")), "{:?}", mails[0].header("From"));
        let paths: Vec<String> = mails.iter().map(reset_path).collect();

        // An expired link is gone, and so is a link to nothing at all (NUL, garbage).
        app.execute(&format!(
            "UPDATE password_reset_links SET expires_at = 0 WHERE token_hash = '{}'",
            agenticos::auth::secrets::sha256_hex(paths[0].rsplit('/').next().unwrap_or_default())
        ))
        .await;
        assert_eq!(c.get(&paths[0]).await.status, 410);
        // (A NUL never reaches the handler: the router answers 404 itself.)
        for (junk, status) in [("/reset-password/%00", 404), ("/reset-password/x", 410), ("/reset-password/%E2%80%AE", 410)] {
            let r = c.get(junk).await;
            assert_eq!(r.status.as_u16(), status, "{junk}: {}", r.body);
        }

        // An admin resets the password: the other links end.
        assert_eq!(c.get(&paths[1]).await.status, 200);
        let owner = &app.web;
        let id = app
            .scalar_strings(&format!("SELECT m.id FROM memberships m JOIN users u ON u.id = m.user_id WHERE u.email = '{email}'"))
            .await
            .remove(0);
        let reset = owner.post_form(&format!("/members/{id}/password-reset"), &[]).await;
        assert_eq!(reset.status, 200, "{}", reset.body);
        assert_eq!(c.get(&paths[1]).await.status, 410, "an admin's reset ended the mailed links");
        assert_eq!(c.get(&paths[2]).await.status, 410);
        assert_eq!(app.count("password_reset_links").await, 0);
    }
}

db_test! {
    async fn a_burst_of_requests_issues_no_more_links_than_the_hourly_limit(app: TestApp)
        settings(&[("AGENTICOS_SMTP_URL", smtp_sink::url()), ("AGENTICOS_MAIL_FROM", "console@example.com")])
    {
        app.setup_owner().await;
        let email = unique_email("burst");
        app.member_with_role(&email, "member").await;
        // Twenty forms fetched first, then posted at once: the count and the insert of each are
        // one transaction, so the fourth and later find three links.
        let mut posts = Vec::new();
        for _ in 0..20 {
            let c = app.new_client();
            let page = c.get("/forgot-password").await;
            let token = page.select_attr("input[name=csrf_token]", "value").expect("the form's CSRF token");
            posts.push((c, token));
        }
        let answers = futures_util::future::join_all(posts.iter().map(|(c, token)| {
            let form = [("email", email.as_str()), ("csrf_token", token.as_str())];
            c.send(c.http.post(c.url("/forgot-password")).form(&form))
        }))
        .await;
        assert!(answers.iter().all(|r| r.status == 200), "every request is answered alike");
        let issued = app
            .scalar_strings(&format!(
                "SELECT l.id FROM password_reset_links l JOIN users u ON u.id = l.user_id WHERE u.email = '{email}'"
            ))
            .await;
        assert_eq!(issued.len(), 3, "at most three links an hour, however many ask at once");
        assert_eq!(smtp_sink::wait_for_mails(&email, 3).await.len(), 3);
    }
}

db_test! {
    async fn without_mail_the_page_says_to_ask_an_admin_and_sends_nothing(app: TestApp) {
        app.setup_owner().await;
        let c = app.new_client();
        let page = c.get("/forgot-password").await;
        assert_eq!(page.status, 200);
        assert!(page.select_text("#forgot-no-mail").is_some_and(|t| t.contains("Ask an owner or admin")), "{}", page.body);
        assert!(page.select_attr("input[name=email]", "name").is_none(), "no form where nothing can be sent");
        let posted = post_page_form(&c, "/login", "/forgot-password", &[("email", crate::helpers::OWNER_EMAIL)]).await;
        assert_eq!(posted.status, 409, "{}", posted.body);
        assert!(posted.select_text("#forgot-no-mail").is_some(), "{}", posted.body);
        assert_eq!(app.count("password_reset_links").await, 0);
    }
}
