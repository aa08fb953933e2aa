use crate::db_test;
use crate::helpers::{OWNER_EMAIL, OWNER_ORG, OWNER_PASSWORD};

db_test! {
    async fn setup_creates_the_first_owner_and_is_gone_afterwards(app: TestApp) {
        let r = app.web.get("/login").await;
        assert_eq!(r.status, 303, "login redirects to setup while no user exists");
        assert_eq!(r.location().as_deref(), Some("/setup"));

        let r = app.web.post_setup(OWNER_EMAIL, OWNER_PASSWORD, OWNER_ORG).await;
        assert_eq!(r.status, 303);
        assert_eq!(r.location().as_deref(), Some("/"));
        assert!(r.header("set-cookie").is_some_and(|c| c.contains("agos_session=") && c.contains("HttpOnly") && c.contains("SameSite=Lax")));

        let home = app.web.get("/").await;
        assert_eq!(home.status, 200);
        assert_eq!(home.select_text("h1").as_deref(), Some(OWNER_ORG));
        assert_eq!(app.scalar_strings("SELECT role FROM memberships").await, vec!["owner".to_string()]);
        let hash = app.scalar_strings("SELECT password_hash FROM users").await.remove(0);
        assert!(hash.starts_with("$argon2id$"), "{hash}");

        assert_eq!(app.web.get("/setup").await.status, 404);
        let again = app.new_client().post_setup("second@example.com", OWNER_PASSWORD, "Other").await;
        assert_eq!(again.status, 404);
        assert_eq!(app.count("users").await, 1);
    }
}

db_test! {
    async fn invalid_setup_input_is_shown_inline_and_nothing_is_written(app: TestApp) {
        let r = app.web.post_setup("", "short", &"x".repeat(101)).await;
        assert_eq!(r.status, 422);
        assert!(r.field_error("email").is_some_and(|m| m.contains("e-mail")));
        assert!(r.field_error("password").is_some_and(|m| m.contains("10")));
        assert!(r.field_error("organization").is_some_and(|m| m.contains("100")));
        assert_eq!(r.select_attr("#organization", "aria-invalid").as_deref(), Some("true"));
        assert_eq!(r.select_attr("#email", "aria-describedby").as_deref(), Some("email-error"));
        assert_eq!(app.count("users").await, 0);
        assert_eq!(app.count("organizations").await, 0);
    }
}

db_test! {
    async fn a_wrong_email_and_a_wrong_password_get_the_same_message(app: TestApp) {
        app.setup_owner().await;
        let c = app.new_client();
        let a = c.post_login("nobody@example.com", OWNER_PASSWORD).await;
        let b = c.post_login(OWNER_EMAIL, "wrong password!").await;
        assert_eq!(a.status, 401);
        assert_eq!(b.status, 401);
        let ma = a.select_text(".alert-error").expect("message");
        assert_eq!(Some(ma.clone()), b.select_text(".alert-error"));
        assert_eq!(ma, "The e-mail or password is wrong.");
        let r = c.post_login(OWNER_EMAIL, OWNER_PASSWORD).await;
        assert_eq!(r.status, 303);
        assert_eq!(c.get("/").await.status, 200);
    }
}

db_test! {
    async fn the_sixth_wrong_password_within_the_window_gets_429(app: TestApp) {
        app.setup_owner().await;
        let c = app.new_client();
        for i in 0..5 {
            let r = c.post_login(OWNER_EMAIL, "wrong password!").await;
            assert_eq!(r.status, 401, "attempt {}", i + 1);
        }
        let r = c.post_login(OWNER_EMAIL, "wrong password!").await;
        assert_eq!(r.status, 429);
        let retry: u64 = r.header("retry-after").expect("Retry-After").parse().expect("seconds");
        assert!(retry > 0 && retry <= 15 * 60, "{retry}");
        // Locked out: even the right password waits.
        let r = c.post_login(OWNER_EMAIL, OWNER_PASSWORD).await;
        assert_eq!(r.status, 429);
        // Another account is not affected.
        let r = c.post_login("nobody@example.com", "whatever123").await;
        assert_eq!(r.status, 401);
        let actions = app.scalar_strings("SELECT action FROM audit_events WHERE action LIKE 'sign_in.%'").await;
        assert_eq!(actions.iter().filter(|a| *a == "sign_in.failed").count(), 5);
        assert_eq!(actions.iter().filter(|a| *a == "sign_in.locked").count(), 1);
    }
}

db_test! {
    async fn logout_deletes_the_session_row(app: TestApp) {
        app.setup_owner().await;
        assert_eq!(app.count("login_sessions").await, 1);
        let r = app.web.post_form("/logout", &[]).await;
        assert_eq!(r.status, 303);
        assert_eq!(r.location().as_deref(), Some("/login"));
        assert_eq!(app.count("login_sessions").await, 0);
        let r = app.web.get("/").await;
        assert_eq!(r.status, 303);
        assert_eq!(r.location().as_deref(), Some("/login"));
    }
}

db_test! {
    async fn a_signed_in_person_creates_and_switches_organizations(app: TestApp) {
        app.setup_owner().await;
        let r = app.web.post_form("/orgs", &[("name", "Second Org")]).await;
        assert_eq!(r.status, 303);
        let home = app.web.get("/").await;
        assert_eq!(home.select_text("h1").as_deref(), Some("Second Org"));
        assert!(home.body.contains("Organization “Second Org” created."), "flash shown");
        let again = app.web.get("/").await;
        assert!(!again.body.contains("Organization “Second Org” created."), "flash shown once");
        let acme = app.scalar_strings("SELECT id FROM organizations WHERE name = 'Acme'").await.remove(0);
        let r = app.web.post_form("/orgs/switch", &[("organization_id", &acme)]).await;
        assert_eq!(r.status, 303);
        assert_eq!(app.web.get("/").await.select_text("h1").as_deref(), Some("Acme"));
        let orgs = app.web.api(reqwest::Method::GET, "/api/v1/organizations", None).await;
        assert_eq!(orgs.json().as_array().map(Vec::len), Some(2));
    }
}

db_test! {
    async fn a_person_without_organization_is_sent_to_create_one(app: TestApp) {
        app.setup_owner().await;
        let member = app.member_with_role("leaver@example.com", "member").await;
        let id = app.scalar_strings("SELECT m.id FROM memberships m JOIN users u ON u.id = m.user_id WHERE u.email = 'leaver@example.com'").await.remove(0);
        assert_eq!(app.web.post_form(&format!("/members/{id}/delete"), &[]).await.status, 303);
        let r = member.get("/").await;
        assert_eq!(r.status, 303);
        assert_eq!(r.location().as_deref(), Some("/orgs/new"));
        let page = member.get("/orgs/new").await;
        assert!(page.body.contains("belong to no organization yet"));
    }
}
