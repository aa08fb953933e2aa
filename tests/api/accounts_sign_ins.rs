//! Accounts as on GitHub (issue 49, item 7): sign-ins in the audit log and as *Last sign-in* on
//! Members, token descriptions and the *Expires* column on the account page, and
//! `agenticos admin reset-password` for a locked-out owner (on SQLite and PostgreSQL).

use std::process::Command;

use reqwest::Method;

use crate::db_test;
use crate::helpers::{link_path, TestApp, OWNER_EMAIL, OWNER_PASSWORD};

/// The audit rows of `action`: `actor_label | target | detail`.
pub(crate) async fn audit_rows(app: &TestApp, action: &str) -> Vec<String> {
    app.scalar_strings(&format!(
        "SELECT actor_label || ' | ' || target || ' | ' || detail FROM audit_events WHERE action = '{action}' \
         ORDER BY created_at, id"
    ))
    .await
}

db_test! {
    async fn a_sign_in_is_audited_by_the_person_and_is_the_members_last_sign_in(app: TestApp) {
        app.setup_owner().await;
        app.member_with_role("mia@example.com", "member").await;
        // Joining with a password signed in too: the time is there before any sign-in form.
        let page = app.web.get("/members").await;
        let mia = app.scalar_strings("SELECT id FROM memberships WHERE role = 'member'").await.remove(0);
        let cell = page.select_text(&format!("#member-{mia} .member-last-sign-in"));
        assert!(cell.as_ref().is_some_and(|t| !t.trim().is_empty() && t.trim() != "never"), "{}", page.body);
        let c = app.new_client();
        assert_eq!(c.post_login("mia@example.com", "wrong password!").await.status, 401);
        assert_eq!(c.post_login("mia@example.com", crate::helpers::MEMBER_PASSWORD).await.status, 303);

        // Signed in: by the person, in the audit log; a failure is by an unverified attempt.
        assert_eq!(audit_rows(&app, "sign_in.succeeded").await, ["mia@example.com | mia@example.com | password"]);
        let failed = audit_rows(&app, "sign_in.failed").await;
        assert_eq!(failed, ["an unverified sign-in attempt | mia@example.com | wrong password"]);
        let who = app.scalar_strings("SELECT COALESCE(actor_user_id, '') FROM audit_events WHERE action = 'sign_in.succeeded'").await;
        let mia_user = app.scalar_strings("SELECT id FROM users WHERE email = 'mia@example.com'").await;
        assert_eq!(who, mia_user);
        let r = app.web.get("/audit?event=sign_in.succeeded").await;
        let rows = r.select_all("#audit-table tbody tr");
        assert!(rows.len() == 1 && rows[0].contains("Signed in") && rows[0].contains("mia@example.com"), "{rows:?}");

        // Members shows when: a time, not "never", for both (the owner signed in at setup).
        let page = app.web.get("/members").await;
        assert_eq!(page.select_all("#members-table th").iter().filter(|t| t.contains("Last sign-in")).count(), 1);
        for row in page.select_all("#members-table tbody tr .member-last-sign-in") {
            assert_ne!(row.trim(), "never", "{}", page.body);
        }
        let api = app.web.api(Method::GET, "/api/v1/members", None).await;
        assert_eq!(api.status, 200, "{}", api.body);
        let members = api.json();
        let times: Vec<bool> = members.as_array().expect("a list").iter().map(|m| m["last_sign_in_at"].is_i64()).collect();
        assert_eq!(times, [true, true], "{members}");
    }
}

db_test! {
    async fn a_token_has_a_description_and_the_account_page_says_when_it_expires(app: TestApp) {
        app.setup_owner().await;
        let form = [("name", "ci-eu"), ("role", "operator"), ("expires", "30"), ("description", "  The nightly CI in eu-1  ")];
        let r = app.web.post_form("/tokens", &form).await;
        assert_eq!(r.status, 200, "{}", r.body);
        let body = serde_json::json!({"name": "scripts", "role": "member", "description": "Ops scripts on the bastion"});
        let r = app.web.api(Method::POST, "/api/v1/tokens", Some(body)).await;
        assert_eq!(r.status, 201, "{}", r.body);
        assert_eq!(r.json()["token"]["description"], "Ops scripts on the bastion");
        let listed = app.web.api(Method::GET, "/api/v1/tokens", None).await.json();
        let mut descriptions: Vec<String> =
            listed.as_array().expect("list").iter().map(|t| t["description"].as_str().unwrap_or("?").to_string()).collect();
        descriptions.sort();
        assert_eq!(descriptions, ["Ops scripts on the bastion", "The nightly CI in eu-1"]);

        // Bad input: a line break or too long, at its field (page) or as a problem (API); nothing written.
        let r = app.web.post_form("/tokens", &[("name", "x"), ("role", "member"), ("description", "two\nlines")]).await;
        assert_eq!(r.status, 422);
        assert!(r.field_error("token-description").is_some_and(|m| m.contains("one line")), "{}", r.body);
        let body = serde_json::json!({"name": "y", "role": "member", "description": "d".repeat(301)});
        let p = app.web.api(Method::POST, "/api/v1/tokens", Some(body)).await.problem(422);
        assert!(p.to_string().contains("300"), "{p}");
        assert_eq!(app.count("api_tokens").await, 2);

        // The account page: each description under its name, and an Expires column.
        let page = app.web.get("/account").await;
        assert_eq!(page.status, 200);
        assert_eq!(page.select_all("#own-tokens-table th").iter().filter(|t| t.trim() == "Expires").count(), 1);
        let ci = app.scalar_strings("SELECT id FROM api_tokens WHERE name = 'ci-eu'").await.remove(0);
        let scripts = app.scalar_strings("SELECT id FROM api_tokens WHERE name = 'scripts'").await.remove(0);
        let row = page.select_text(&format!("#own-token-{ci}")).expect("ci row");
        assert!(row.contains("The nightly CI in eu-1"), "{row}");
        let expires = page.select_text(&format!("#own-token-{ci} .token-expires")).expect("expires cell");
        assert_ne!(expires.trim(), "never", "{row}");
        let expires = page.select_text(&format!("#own-token-{scripts} .token-expires")).expect("expires cell");
        assert_eq!(expires.trim(), "never");
        let tokens_page = app.web.get("/tokens").await;
        assert!(tokens_page.select_text(&format!("#token-{scripts}")).is_some_and(|t| t.contains("Ops scripts on the bastion")));
    }
}

/// `agenticos admin reset-password` on the test app's database: exit code, stdout, stderr.
pub(crate) fn reset_password(app: &TestApp, args: &[&str]) -> (Option<i32>, String, String) {
    let key = tempfile::tempdir().expect("dir");
    let out = Command::new(env!("CARGO_BIN_EXE_agenticos"))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("DATABASE_URL", &app.state.config.database.url)
        .env("AGENTICOS_VAULT_KEY_FILE", key.path().join("vault.key"))
        .env("AGENTICOS_PUBLIC_URL", "https://console.example.com/")
        .args(["admin", "reset-password"])
        .args(args)
        .output()
        .expect("runs");
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code(), text(&out.stdout), text(&out.stderr))
}

db_test! {
    async fn a_locked_out_owner_gets_back_in_with_a_one_time_password_from_the_command_line(app: TestApp) {
        app.setup_owner().await;
        // Locked out: five wrong passwords, and the right one waits too.
        let c = app.new_client();
        for _ in 0..5 {
            c.post_login(OWNER_EMAIL, "forgotten password").await;
        }
        assert_eq!(c.post_login(OWNER_EMAIL, OWNER_PASSWORD).await.status, 429);

        let (code, out, err) = reset_password(&app, &["--email", OWNER_EMAIL]);
        assert_eq!(code, Some(0), "{out}{err}");
        let prefix = format!("one-time password for {OWNER_EMAIL} (shown once): ");
        let line = out.lines().find(|l| l.starts_with(&prefix)).unwrap_or_else(|| panic!("{out}"));
        let one_time = line[prefix.len()..].trim().to_string();
        assert!(out.contains("1 sign-in ended"), "{out}");
        assert!(!err.contains(&one_time), "the password is not logged: {err}");

        // Every sign-in ended; the old password is gone; the one-time one signs in (the lock-out
        // is over) and must be replaced before anything else.
        assert_eq!(app.web.get("/").await.location().as_deref(), Some("/login"));
        let c = app.new_client();
        assert_eq!(c.post_login(OWNER_EMAIL, OWNER_PASSWORD).await.status, 401);
        let r = c.post_login(OWNER_EMAIL, &one_time).await;
        assert_eq!(r.status, 303, "{}", r.body);
        assert_eq!(c.get("/members").await.location().as_deref(), Some("/account/password"));
        let rows = audit_rows(&app, "account.password_reset_on_command_line").await;
        assert_eq!(rows, [format!("agenticos admin | {OWNER_EMAIL} | one-time password issued on the command line; 1 sign-in ended")]);
        assert!(!app.scalar_strings("SELECT detail FROM audit_events").await.iter().any(|d| d.contains(&one_time)));
    }
}

db_test! {
    async fn the_command_line_prints_a_reset_link_that_works_once_and_refuses_an_unknown_address(app: TestApp) {
        app.setup_owner().await;
        let (code, out, err) = reset_password(&app, &["--email", "OPS@example.com", "--link"]);
        assert_eq!(code, Some(1), "{out}{err}");
        assert!(err.contains("No account has the address ops@example.com"), "{err}");
        let (code, out, err) = reset_password(&app, &["--emial", OWNER_EMAIL]);
        assert_eq!(code, Some(2), "{out}{err}");

        let (code, out, err) = reset_password(&app, &["--email", OWNER_EMAIL, "--link"]);
        assert_eq!(code, Some(0), "{out}{err}");
        let link = out.split_whitespace().find(|w| w.starts_with("https://console.example.com/reset-password/"));
        let path = link_path(link.unwrap_or_else(|| panic!("{out}")));
        let c = app.new_client();
        let form = c.get(&path).await;
        assert_eq!(form.status, 200, "{}", form.body);
        let token = form.select_attr("input[name=csrf_token]", "value").expect("form");
        let fields = [("new_password", "a brand new password"), ("confirm_password", "a brand new password"), ("csrf_token", &token)];
        let r = c.send(c.http.post(c.url(&path)).form(&fields)).await;
        assert_eq!(r.status, 303, "{}", r.body);
        assert_eq!(c.get(&path).await.status, 410, "a link works once");
        assert_eq!(app.new_client().post_login(OWNER_EMAIL, "a brand new password").await.status, 303);
        let rows = audit_rows(&app, "account.password_reset_on_command_line").await;
        assert_eq!(rows, [format!("agenticos admin | {OWNER_EMAIL} | reset link issued on the command line; 1 sign-in ended")]);
    }
}
