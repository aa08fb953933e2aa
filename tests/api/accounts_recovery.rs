//! Issue 30's accounts: the invitation page asks for the password twice, API tokens expire, and
//! an owner or admin resets a member's password to a one-time one (on SQLite and PostgreSQL).

use reqwest::Method;

use crate::db_test;
use crate::helpers::{Client, MEMBER_PASSWORD, OWNER_EMAIL, OWNER_PASSWORD};

async fn membership_id(app: &crate::helpers::TestApp, email: &str) -> String {
    app.scalar_strings(&format!(
        "SELECT m.id FROM memberships m JOIN users u ON u.id = m.user_id WHERE u.email = '{email}'"
    ))
    .await
    .remove(0)
}

/// Waits (bounded) for a token whose row just expired to be refused: an answer cached before
/// lasts [`agenticos::tokens::service::AUTH_CACHE_TTL`] at most.
async fn expired_soon(c: &Client, token: &str) {
    let deadline = std::time::Instant::now() + agenticos::tokens::service::AUTH_CACHE_TTL * 10;
    while c.bearer(token, Method::GET, "/api/v1/me", None).await.status != 401 {
        assert!(std::time::Instant::now() < deadline, "the expired token still authenticates");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

/// Posts the invitation page's form, with the password and its repetition.
async fn join(c: &Client, link: &str, password: &str, confirm: &str) -> crate::helpers::Resp {
    let page = c.get(link).await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(page.select_text("label[for=confirm-password]").is_some_and(|l| l == "Repeat the password"));
    let token = page.select_attr("input[name=csrf_token]", "value").expect("a form");
    let form = [("password", password), ("confirm_password", confirm), ("csrf_token", &token)];
    c.send(c.http.post(c.url(link)).form(&form)).await
}

db_test! {
    async fn the_invitation_page_asks_for_the_password_twice_and_a_mismatch_writes_nothing(app: TestApp) {
        app.setup_owner().await;
        app.other_org_user("bob@example.com", "Bob Inc").await;
        let new = app.invite("new@example.com", "builder").await;
        let existing = app.invite("bob@example.com", "builder").await;
        let (users, memberships) = (app.count("users").await, app.count("memberships").await);

        // A new person and an existing account alike: refused at the second field, before any
        // password is checked (no failure counted) or anything written.
        for link in [&new, &existing] {
            let c = app.new_client();
            let r = join(&c, link, "my own new password", "my own new passwork").await;
            assert_eq!(r.status, 422, "{}", r.body);
            assert!(r.field_error("confirm-password").is_some_and(|m| m.contains("not the same")), "{}", r.body);
            assert!(r.field_error("password").is_none(), "{}", r.body);
            assert!(r.select_attr("#confirm-password", "aria-invalid").is_some_and(|v| v == "true"), "{}", r.body);
        }
        assert_eq!((app.count("users").await, app.count("memberships").await), (users, memberships), "nothing written");
        assert_eq!(app.count("login_failures").await, 0, "no password was checked");
        let accepted = app.scalar_strings("SELECT CAST(COUNT(*) AS TEXT) FROM invitations WHERE accepted_at IS NOT NULL").await;
        assert_eq!(accepted, ["0"]);

        // The same password twice joins.
        let c = app.new_client();
        let r = join(&c, &new, "my own new password", "my own new password").await;
        assert_eq!(r.status, 303, "{}", r.body);
        assert_eq!(app.new_client().post_login("new@example.com", "my own new password").await.status, 303);
        let c = app.new_client();
        assert_eq!(join(&c, &existing, OWNER_PASSWORD, OWNER_PASSWORD).await.status, 303);
        assert_eq!(app.count("memberships").await, memberships + 2);
    }
}

db_test! {
    async fn a_token_expires_after_the_days_chosen_and_then_is_a_token_expired_401(app: TestApp) {
        app.setup_owner().await;
        // The page: 90 days are offered first, the date is listed.
        let page = app.web.get("/tokens").await;
        assert_eq!(page.select_all("#token-expires option"), ["30 days", "90 days", "365 days", "No expiry"]);
        assert_eq!(page.select_attr("#token-expires option[selected]", "value").as_deref(), Some("90"));
        let r = app.web.post_form("/tokens", &[("name", "odd"), ("role", "operator"), ("expires", "12")]).await;
        assert_eq!(r.status, 422);
        assert!(r.field_error("token-expires").is_some_and(|m| m.contains("30, 90 or 365")), "{}", r.body);
        assert_eq!(app.count("api_tokens").await, 0, "nothing written");
        let r = app.web.post_form("/tokens", &[("name", "short"), ("role", "admin"), ("expires", "30")]).await;
        assert_eq!(r.status, 200, "{}", r.body);
        let short = r.select_text("#new-token-value").expect("shown once");
        let r = app.web.post_form("/tokens", &[("name", "forever"), ("role", "admin"), ("expires", "never")]).await;
        let forever = r.select_text("#new-token-value").expect("shown once");
        let rows = app
            .scalar_strings("SELECT name || ':' || COALESCE(CAST((expires_at - created_at) / 86400000 AS TEXT), 'none') FROM api_tokens ORDER BY name")
            .await;
        assert_eq!(rows, ["forever:none", "short:30"]);
        let short_id = app.scalar_strings("SELECT id FROM api_tokens WHERE name = 'short'").await.remove(0);
        let row = app.web.get("/tokens").await.select_text(&format!("#token-{short_id} .token-expires")).expect("row");
        assert!(row.chars().any(|c| c.is_ascii_digit()), "a date: {row}");

        // The API: 30, 90, 365 or none; anything else is refused at its field.
        let body = serde_json::json!({"name": "week", "role": "operator", "expires_in_days": 7});
        let r = app.web.bearer(&forever, Method::POST, "/api/v1/tokens", Some(body)).await;
        r.problem(422);
        assert_eq!(r.problem_fields(), ["expires_in_days"]);
        let body = serde_json::json!({"name": "year", "role": "operator", "expires_in_days": 365});
        let r = app.web.bearer(&forever, Method::POST, "/api/v1/tokens", Some(body)).await;
        assert_eq!(r.status, 201, "{}", r.body);
        let created = r.json();
        let (at, exp) = (created["token"]["created_at"].as_i64(), created["token"]["expires_at"].as_i64());
        assert_eq!(exp.zip(at).map(|(e, c)| e - c), Some(365 * 86_400_000));
        let listed = app.web.bearer(&forever, Method::GET, "/api/v1/tokens", None).await.json();
        let never = listed.as_array().expect("a list").iter().find(|t| t["name"] == "forever").expect("forever").clone();
        assert!(never["expires_at"].is_null(), "{never}");

        // Past its expiry: a 401 that says so, on every route, and the lists say expired.
        assert_eq!(app.web.bearer(&short, Method::GET, "/api/v1/me", None).await.status, 200);
        app.execute(&format!("UPDATE api_tokens SET expires_at = 1000 WHERE id = '{short_id}'")).await;
        expired_soon(&app.web, &short).await;
        for path in ["/api/v1/me", "/api/v1/tokens", "/api/v1/members"] {
            let r = app.web.bearer(&short, Method::GET, path, None).await;
            let p = r.problem(401);
            assert_eq!(p["type"], "https://agenticos.dev/problems/token-expired", "{path}");
            assert!(p["detail"].as_str().is_some_and(|d| d.contains("expired")), "{p}");
            assert_eq!(r.header("www-authenticate").as_deref(), Some("Bearer"));
        }
        let r = app.web.bearer(&short, Method::POST, "/api/v1/tokens", Some(serde_json::json!({"name": "x", "role": "member"}))).await;
        assert_eq!(r.problem(401)["type"], "https://agenticos.dev/problems/token-expired");
        // Unknown is still the plain 401.
        let p = app.web.bearer("agos_nope", Method::GET, "/api/v1/me", None).await.problem(401);
        assert_eq!(p["type"], "https://agenticos.dev/problems/unauthenticated");
        let row = app.web.get("/tokens").await.select_text(&format!("#token-{short_id} .token-status")).expect("row");
        assert_eq!(row.trim(), "expired");
        let own = app.web.get("/account").await.select_text(&format!("#own-token-{short_id}")).expect("own row");
        assert!(own.contains("expired"), "{own}");
        assert_eq!(app.web.bearer(&forever, Method::GET, "/api/v1/me", None).await.status, 200);
    }
}

db_test! {
    async fn an_admin_resets_a_members_password_to_a_one_time_one_they_must_replace(app: TestApp) {
        app.setup_owner().await;
        let bob = app.member_with_role("bob@example.com", "operator").await;
        let admin = app.member_with_role("admin@example.com", "admin").await;
        let bob_id = membership_id(&app, "bob@example.com").await;
        let owner_id = membership_id(&app, OWNER_EMAIL).await;
        let admin_id = membership_id(&app, "admin@example.com").await;
        let hash_before = app.scalar_strings("SELECT password_hash FROM users WHERE email = 'bob@example.com'").await;

        // Who may not: an operator (403), an admin for an owner or themselves (409), another
        // organization (404), a form without its CSRF token.
        assert_eq!(bob.post_form(&format!("/members/{admin_id}/password-reset"), &[]).await.status, 403);
        let r = admin.post_form(&format!("/members/{owner_id}/password-reset"), &[]).await;
        assert_eq!(r.status, 409);
        assert!(r.body.contains("outranks you"), "{}", r.body);
        let r = admin.post_form(&format!("/members/{admin_id}/password-reset"), &[]).await;
        assert_eq!(r.status, 409);
        assert!(r.body.contains("your account page"), "{}", r.body);
        let stranger = app.other_org_user("eve@example.com", "Eve Inc").await;
        assert_eq!(stranger.post_form(&format!("/members/{bob_id}/password-reset"), &[]).await.status, 404);
        assert_eq!(admin.post_form_without_csrf(&format!("/members/{bob_id}/password-reset"), &[]).await.status, 403);
        let hash = app.scalar_strings("SELECT password_hash FROM users WHERE email = 'bob@example.com'").await;
        assert_eq!(hash, hash_before, "nothing changed");
        assert!(app.scalar_strings("SELECT id FROM audit_events WHERE action = 'member.password_reset'").await.is_empty());

        // The admin resets it: the one-time password is shown on that answer only.
        let members = admin.get("/members").await;
        // Each row links to its confirmation (the console's own dialog); the form posts from there.
        assert!(members.select_text(&format!("#member-{bob_id} a.member-reset")).is_some());
        assert!(members.select_text(&format!("#member-{admin_id} a.member-reset")).is_none(), "not their own");
        let asked = admin.get(&format!("/members/{bob_id}/password-reset")).await;
        assert!(asked.select_attr("#member-reset-form", "action").is_some_and(|a| a.ends_with("/password-reset")), "{}", asked.body);
        let r = admin.post_form(&format!("/members/{bob_id}/password-reset"), &[]).await;
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(r.header("cache-control").as_deref(), Some("no-store"));
        let one_time = r.select_text("#one-time-password").expect("shown once");
        assert_eq!(one_time.len(), 23, "{one_time}");
        assert!(!admin.get("/members").await.body.contains(&one_time), "shown only once");

        // Bob's sign-ins ended, his old password is gone, and the one-time one leads only to
        // choosing his own.
        assert_eq!(bob.get("/").await.location().as_deref().map(|l| l.starts_with("/login")), Some(true));
        assert_eq!(app.new_client().post_login("bob@example.com", MEMBER_PASSWORD).await.status, 401);
        let c = app.new_client();
        assert_eq!(c.post_login("bob@example.com", &one_time).await.status, 303);
        assert_eq!(c.get("/members").await.location().as_deref(), Some("/account/password"));
        let p = c.api(Method::GET, "/api/v1/me", None).await.problem(403);
        assert_eq!(p["type"], "https://agenticos.dev/problems/password-change-required");
        let form = c.get("/account/password").await;
        let token = form.select_attr("input[name=csrf_token]", "value").expect("form");
        let fields = [
            ("current_password", one_time.as_str()),
            ("new_password", "bob's own password"),
            ("confirm_password", "bob's own password"),
            ("csrf_token", token.as_str()),
        ];
        let r = c.send(c.http.post(c.url("/account/password")).form(&fields)).await;
        assert_eq!(r.status, 303, "{}", r.body);
        assert_eq!(c.get("/members").await.status, 403, "an operator's page again, not the password page");
        assert_eq!(app.new_client().post_login("bob@example.com", "bob's own password").await.status, 303);
        assert_eq!(app.new_client().post_login("bob@example.com", &one_time).await.status, 401, "used up");

        // Audited, without the password; nor is it in the logs.
        let audit = app
            .scalar_strings("SELECT actor_label || '|' || target || '|' || detail FROM audit_events WHERE action = 'member.password_reset'")
            .await;
        assert_eq!(audit, ["admin@example.com|bob@example.com|one-time password issued; 1 sign-in ended"]);
        let everything = app.scalar_strings("SELECT target || detail FROM audit_events").await.join(" ");
        assert!(!everything.contains(&one_time));
        // The test's own HTML parser logs what it reads; the application's lines must not hold it.
        let logs = crate::helpers::captured_logs();
        let app_lines: Vec<&str> = logs.lines().filter(|l| l.contains("\"target\":\"agenticos")).collect();
        assert!(app_lines.iter().any(|l| l.contains("password_reset")), "the reset is logged");
        assert!(app_lines.iter().all(|l| !l.contains(&one_time)), "the one-time password reached a log");

        // Someone who also belongs to an organization the admin does not manage is refused.
        let eve_link = app.invite("eve@example.com", "member").await;
        let eve = app.new_client();
        assert_eq!(eve.accept_invitation(&eve_link, OWNER_PASSWORD).await.status, 303);
        let eve_id = app
            .scalar_strings("SELECT m.id FROM memberships m JOIN users u ON u.id = m.user_id JOIN organizations o ON o.id = m.organization_id WHERE u.email = 'eve@example.com' AND o.name = 'Acme'")
            .await
            .remove(0);
        let r = admin.post_form(&format!("/members/{eve_id}/password-reset"), &[]).await;
        assert_eq!(r.status, 409);
        assert!(r.body.contains("another organization"), "{}", r.body);
    }
}
