//! The account page and issued passwords: a one-time password is replaced before anything else,
//! a password change needs the current one and ends the other sign-ins, sign-ins and own API
//! tokens are listed and ended or revoked (on SQLite and PostgreSQL).

use reqwest::{Method, StatusCode};

use crate::db_test;
use crate::helpers::{Client, Resp, TestApp, OWNER_EMAIL, OWNER_PASSWORD};

const NEW_PASSWORD: &str = "my own password 1";

/// An owner created the way `agenticos admin create-owner` does without `--password-stdin`,
/// signed in with the one-time password it printed.
async fn issued_owner(app: &TestApp, email: &str, org: &str) -> (Client, String) {
    let created = agenticos::auth::service::create_owner_with_one_time_password(&app.state.db, email, org)
        .await
        .expect("create owner");
    let password = created.one_time_password.expect("a new account gets a one-time password");
    let c = app.new_client();
    let r = c.post_login(email, &password).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    (c, password)
}

async fn choose(c: &Client, path: &str, current: &str, new: &str, confirm: &str) -> Resp {
    c.post_form(path, &[("current_password", current), ("new_password", new), ("confirm_password", confirm)]).await
}

db_test! {
    async fn a_one_time_password_must_be_replaced_before_any_page(app: TestApp) {
        let (c, one_time) = issued_owner(&app, "ops@example.com", "Ops").await;
        assert_eq!(app.scalar_strings("SELECT CAST(must_change_password AS TEXT) FROM users").await, ["1"]);

        // Every page sends the person to choose a password; htmx is told the same.
        for path in ["/", "/members", "/account", "/orgs/new", "/audit"] {
            let r = c.get(path).await;
            assert_eq!(r.status, StatusCode::SEE_OTHER, "{path}");
            assert_eq!(r.location().as_deref(), Some("/account/password"), "{path}");
        }
        let r = c.send(c.http.get(c.url("/members")).header("hx-request", "true")).await;
        assert_eq!(r.header("hx-redirect").as_deref(), Some("/account/password"));
        // The API with this sign-in is refused too, as a problem saying why.
        let r = c.api(Method::GET, "/api/v1/me", None).await;
        let p = r.problem(403);
        assert_eq!(p["type"], "https://agenticos.dev/problems/password-change-required");
        // A form of another page is refused before it does anything.
        let r = c.post_form("/orgs/new", &[("name", "Sneaky")]).await;
        assert_eq!(r.location().as_deref(), Some("/account/password"));
        assert_eq!(app.count("organizations").await, 1);

        // An API token of the account is not affected.
        let caller = agenticos::orgs::service::command_line_caller(&app.state.db, "Ops", None).await.expect("caller");
        let input = agenticos::tokens::service::NewToken { name: "ci".into(), role: "admin".into(), description: String::new() };
        let token = agenticos::tokens::service::create(&app.state.db, &caller, input).await.expect("token").value;
        let me = c.bearer(&token, Method::GET, "/api/v1/me", None).await;
        assert_eq!(me.status, StatusCode::OK, "{}", me.body);

        let page = c.get("/account/password").await;
        assert_eq!(page.status, StatusCode::OK);
        assert_eq!(page.select_text("h1").as_deref(), Some("Choose your password"));
        assert_eq!(page.select_attr("#current-password", "autofocus").as_deref(), Some(""));

        // Every refusal at once, each at its field, the first of them focused.
        let r = choose(&c, "/account/password", "not it at all", "short", "different").await;
        assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(r.field_error("current-password").as_deref(), Some("This is not your current password."));
        assert!(r.field_error("new-password").is_some_and(|m| m.contains("10")), "{}", r.body);
        assert!(r.field_error("confirm-password").is_some());
        assert_eq!(r.select_attr("#current-password", "autofocus").as_deref(), Some(""));
        assert!(r.select_attr("#new-password", "autofocus").is_none());
        let r = choose(&c, "/account/password", &one_time, &one_time, &one_time).await;
        assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
        assert!(r.field_error("new-password").is_some_and(|m| m.contains("other than your current")));
        assert_eq!(r.select_attr("#new-password", "autofocus").as_deref(), Some(""));
        assert_eq!(app.scalar_strings("SELECT CAST(must_change_password AS TEXT) FROM users").await, ["1"]);

        let r = choose(&c, "/account/password", &one_time, NEW_PASSWORD, NEW_PASSWORD).await;
        assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
        assert_eq!(r.location().as_deref(), Some("/"));
        assert_eq!(app.scalar_strings("SELECT CAST(must_change_password AS TEXT) FROM users").await, ["0"]);
        let home = c.get("/").await;
        assert_eq!(home.status, StatusCode::OK);
        assert!(home.body.contains("Your password is set."), "{}", home.body);
        assert_eq!(c.get("/account/password").await.location().as_deref(), Some("/account"));

        // The one-time password is gone; the chosen one signs in straight to the console.
        let other = app.new_client();
        assert_eq!(other.post_login("ops@example.com", &one_time).await.status, StatusCode::UNAUTHORIZED);
        assert_eq!(other.post_login("ops@example.com", NEW_PASSWORD).await.status, StatusCode::SEE_OTHER);
        assert_eq!(other.get("/members").await.status, StatusCode::OK);
        let audit = app.scalar_strings("SELECT action FROM audit_events WHERE action = 'account.password_changed'").await;
        assert_eq!(audit.len(), 1);
    }
}

db_test! {
    async fn a_password_chosen_on_the_command_line_is_not_replaced_at_sign_in(app: TestApp) {
        let c = app.other_org_user("chosen@example.com", "Chosen").await;
        assert_eq!(c.get("/").await.status, StatusCode::OK);
        // An e-mail address that already has an account keeps its password: none is printed.
        let again = agenticos::auth::service::create_owner_with_one_time_password(&app.state.db, "chosen@example.com", "Second")
            .await
            .expect("second organization");
        assert!(again.one_time_password.is_none());
        assert_eq!(c.get("/").await.status, StatusCode::OK);
        assert_eq!(app.scalar_strings("SELECT CAST(must_change_password AS TEXT) FROM users").await, ["0"]);
    }
}

db_test! {
    async fn changing_the_password_needs_the_current_one_and_ends_only_the_other_sign_ins(app: TestApp) {
        app.setup_owner().await;
        let laptop = app.new_client();
        assert_eq!(laptop.post_login(OWNER_EMAIL, OWNER_PASSWORD).await.status, StatusCode::SEE_OTHER);
        let phone = app.new_client();
        assert_eq!(phone.post_login(OWNER_EMAIL, OWNER_PASSWORD).await.status, StatusCode::SEE_OTHER);
        assert_eq!(app.count("login_sessions").await, 3);

        let page = app.web.get("/account").await;
        assert_eq!(page.status, StatusCode::OK);
        assert_eq!(page.select_all("#sessions-table tbody tr").len(), 3);
        assert_eq!(page.select_all("#sessions-table tr.current-session").len(), 1);

        // Without the current password nothing changes, and every refusal is shown at once.
        let r = choose(&app.web, "/account", "", "short", "shorter").await;
        assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(r.field_error("current-password").as_deref(), Some("Enter your current password."));
        assert!(r.field_error("new-password").is_some());
        assert!(r.field_error("confirm-password").is_some());
        let r = choose(&app.web, "/account", "wrong password!", NEW_PASSWORD, NEW_PASSWORD).await;
        assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(r.field_error("current-password").as_deref(), Some("This is not your current password."));
        // A wrong current password counts like a wrong one at sign-in.
        assert_eq!(app.count("login_failures").await, 1);
        assert_eq!(app.count("login_sessions").await, 3);
        assert_eq!(laptop.get("/").await.status, StatusCode::OK);

        let r = choose(&app.web, "/account", OWNER_PASSWORD, NEW_PASSWORD, NEW_PASSWORD).await;
        assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
        assert_eq!(r.location().as_deref(), Some("/account"));
        let page = app.web.get("/account").await;
        assert!(page.body.contains("Your 2 other sign-ins were ended."), "{}", page.body);
        assert_eq!(app.count("login_sessions").await, 1);
        assert_eq!(app.count("login_failures").await, 0);
        for gone in [&laptop, &phone] {
            let r = gone.get("/").await;
            assert_eq!(r.location().as_deref(), Some("/login"));
        }
        let hash = app.scalar_strings("SELECT password_hash FROM users").await.remove(0);
        assert!(hash.starts_with("$argon2id$"), "{hash}");
        assert_eq!(app.new_client().post_login(OWNER_EMAIL, OWNER_PASSWORD).await.status, StatusCode::UNAUTHORIZED);
        assert_eq!(app.new_client().post_login(OWNER_EMAIL, NEW_PASSWORD).await.status, StatusCode::SEE_OTHER);
        let detail = app.scalar_strings("SELECT detail FROM audit_events WHERE action = 'account.password_changed'").await;
        assert_eq!(detail, ["2 other sign-ins ended"]);
    }
}

db_test! {
    async fn another_sign_in_is_ended_from_the_account_page_and_no_one_elses(app: TestApp) {
        app.setup_owner().await;
        let laptop = app.new_client();
        assert_eq!(laptop.post_login(OWNER_EMAIL, OWNER_PASSWORD).await.status, StatusCode::SEE_OTHER);
        // Its browser is noted at its first page.
        let r = laptop.send(laptop.http.get(laptop.url("/")).header("user-agent", "Mozilla/5.0 (X11; Linux x86_64) Firefox/133.0")).await;
        assert_eq!(r.status, StatusCode::OK);

        let page = app.web.get("/account").await;
        let rows = page.select_all("#sessions-table tbody tr");
        assert_eq!(rows.len(), 2);
        assert!(rows.iter().any(|r| r.contains("Firefox on Linux")), "{rows:?}");
        let ended = app.scalar_strings("SELECT id FROM login_sessions WHERE user_agent LIKE '%Firefox%'").await.remove(0);
        let stranger = app.other_org_user("stranger@example.com", "Elsewhere").await;
        let r = stranger.post_form(&format!("/account/sessions/{ended}/end"), &[]).await;
        assert_eq!(r.status, StatusCode::NOT_FOUND);
        assert_eq!(laptop.get("/").await.status, StatusCode::OK);

        let r = app.web.post_form(&format!("/account/sessions/{ended}/end"), &[]).await;
        assert_eq!(r.status, StatusCode::SEE_OTHER);
        assert_eq!(r.location().as_deref(), Some("/account"));
        assert_eq!(laptop.get("/").await.location().as_deref(), Some("/login"));
        assert_eq!(app.web.get("/account").await.select_all("#sessions-table tbody tr").len(), 1);
    }
}

db_test! {
    async fn the_account_page_lists_own_tokens_of_every_organization_and_revokes_where_the_role_allows(app: TestApp) {
        app.setup_owner().await;
        app.web.create_token_in_page("acme-ci", "operator").await;
        let admin = app.member_with_role("admin@example.com", "admin").await;
        admin.create_token_in_page("admin-ci", "builder").await;
        assert_eq!(app.web.post_form("/orgs/new", &[("name", "Beta")]).await.status, StatusCode::SEE_OTHER);
        app.web.create_token_in_page("beta-ci", "owner").await;

        let page = app.web.get("/account").await;
        let rows = page.select_all("#own-tokens-table tbody tr");
        assert_eq!(rows.len(), 2, "{rows:?}");
        assert!(rows.iter().any(|r| r.contains("acme-ci") && r.contains("Acme")), "{rows:?}");
        assert!(rows.iter().any(|r| r.contains("beta-ci") && r.contains("Beta")), "{rows:?}");
        assert!(!page.body.contains("admin-ci"), "another person's token is not listed");

        // Revoking one of Acme's while acting in Beta.
        let acme_ci = app.scalar_strings("SELECT id FROM api_tokens WHERE name = 'acme-ci'").await.remove(0);
        let r = app.web.post_form(&format!("/account/tokens/{acme_ci}/revoke"), &[]).await;
        assert_eq!(r.status, StatusCode::SEE_OTHER);
        assert_eq!(app.scalar_strings("SELECT name FROM api_tokens WHERE revoked_at IS NOT NULL").await, ["acme-ci"]);
        // Someone else's token is not the owner's to revoke from the account page.
        let admin_ci = app.scalar_strings("SELECT id FROM api_tokens WHERE name = 'admin-ci'").await.remove(0);
        let r = app.web.post_form(&format!("/account/tokens/{admin_ci}/revoke"), &[]).await;
        assert_eq!(r.status, StatusCode::NOT_FOUND);

        // The admin is made a builder: their token is still listed, but no longer theirs to revoke.
        let acme = app.scalar_strings("SELECT id FROM organizations WHERE name = 'Acme'").await.remove(0);
        assert_eq!(app.web.post_form("/orgs/switch", &[("organization_id", &acme)]).await.status, StatusCode::SEE_OTHER);
        let membership = app.scalar_strings("SELECT m.id FROM memberships m JOIN users u ON u.id = m.user_id WHERE u.email = 'admin@example.com'").await.remove(0);
        let r = app.web.post_form(&format!("/members/{membership}/role"), &[("role", "builder")]).await;
        assert_eq!(r.status, StatusCode::SEE_OTHER);
        let page = admin.get("/account").await;
        assert_eq!(page.select_all("#own-tokens-table tbody tr").len(), 1);
        assert!(page.select_text("#own-tokens-table form button").is_none(), "no Revoke for a builder");
        let r = admin.post_form(&format!("/account/tokens/{admin_ci}/revoke"), &[]).await;
        assert_eq!(r.status, StatusCode::FORBIDDEN);
        assert_eq!(app.scalar_strings("SELECT name FROM api_tokens WHERE revoked_at IS NOT NULL").await, ["acme-ci"]);
    }
}

db_test! {
    async fn the_top_bar_links_the_account_page_by_the_persons_e_mail(app: TestApp) {
        app.setup_owner().await;
        let home = app.web.get("/").await;
        assert_eq!(home.select_text(".user-menu a.account-link").as_deref(), Some(OWNER_EMAIL));
        assert_eq!(home.select_attr(".user-menu a.account-link", "href").as_deref(), Some("/account"));
        let page = app.web.get("/account").await;
        assert_eq!(page.select_attr(".user-menu a.account-link", "aria-current").as_deref(), Some("page"));
    }
}
