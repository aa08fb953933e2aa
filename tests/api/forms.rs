//! Organizations and forms (issue 9): one person's organizations have different names, a refused
//! action leaves the page's URL in the address bar, the first invalid field takes the focus,
//! roles are explained where they are chosen (on SQLite and PostgreSQL).

use reqwest::{Method, StatusCode};
use secrecy::SecretString;

use crate::db_test;
use crate::helpers::{Client, Resp, OWNER_EMAIL};

/// A form posted the way a boosted page posts it: htmx headers and the CSRF header.
async fn htmx_post(c: &Client, path: &str, fields: &[(&str, &str)]) -> Resp {
    let token = c.csrf().await;
    c.send(c.http.post(c.url(path)).header("hx-request", "true").header("x-csrf-token", token).form(fields)).await
}

db_test! {
    async fn one_person_cannot_have_two_organizations_of_the_same_name(app: TestApp) {
        app.setup_owner().await;
        let r = app.web.post_form("/orgs/new", &[("name", "  ACME ")]).await;
        assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(
            r.field_error("name").as_deref(),
            Some("You already belong to an organization named “ACME”. Choose another name.")
        );
        assert_eq!(r.select_attr("#name", "autofocus").as_deref(), Some(""));
        let r = app.web.api(Method::POST, "/api/v1/organizations", Some(serde_json::json!({"name": "acme"}))).await;
        r.problem(422);
        assert_eq!(r.problem_fields(), ["name"]);
        assert_eq!(app.count("organizations").await, 1);

        // Another name is fine, and then that one is taken for this person too.
        assert_eq!(app.web.post_form("/orgs/new", &[("name", "Acme Robotics")]).await.status, StatusCode::SEE_OTHER);
        let r = app.web.post_form("/orgs", &[("name", "acme robotics")]).await;
        assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);

        // Another person may use the same name.
        let other = app.other_org_user("other@example.com", "Elsewhere").await;
        let r = other.api(Method::POST, "/api/v1/organizations", Some(serde_json::json!({"name": "Acme"}))).await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
        // And so does the command line for an existing account.
        let e = agenticos::auth::service::create_owner(&app.state.db, OWNER_EMAIL, SecretString::from("whatever 123"), "acme")
            .await
            .expect_err("refused");
        match e {
            agenticos::auth::error::AuthError::Invalid(f) => assert!(f.has("organization"), "{f:?}"),
            other => panic!("{other:?}"),
        }
        assert_eq!(app.count("organizations").await, 4);
    }
}

db_test! {
    async fn a_refused_action_leaves_the_page_url_in_the_address_bar(app: TestApp) {
        app.setup_owner().await;
        let me = app.scalar_strings("SELECT id FROM memberships").await.remove(0);
        // Removing the last owner is refused: htmx shows the message and keeps the URL.
        let r = htmx_post(&app.web, &format!("/members/{me}/delete"), &[]).await;
        assert_eq!(r.status, StatusCode::CONFLICT);
        assert_eq!(r.header("hx-push-url").as_deref(), Some("false"));
        assert_eq!(r.header("hx-retarget").as_deref(), Some("#flash"));
        // A form shown again with its messages keeps it too.
        let r = htmx_post(&app.web, "/members", &[("email", "not an address"), ("role", "member")]).await;
        assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(r.header("hx-push-url").as_deref(), Some("false"));
        let r = htmx_post(&app.web, "/tokens", &[("name", ""), ("role", "admin")]).await;
        assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(r.header("hx-push-url").as_deref(), Some("false"));
        // A success that goes elsewhere says where, and nothing else.
        let r = htmx_post(&app.web, "/vault", &[("name", "k"), ("purpose", "other"), ("value", "v")]).await;
        assert!(r.header("hx-redirect").is_some(), "{:?}", r.headers);
        assert!(r.header("hx-push-url").is_none());
        // Plain requests and page loads are left alone.
        let r = app.web.post_form(&format!("/members/{me}/delete"), &[]).await;
        assert_eq!(r.status, StatusCode::CONFLICT);
        assert!(r.header("hx-push-url").is_none());
        let r = app.web.send(app.web.http.get(app.web.url("/members")).header("hx-request", "true")).await;
        assert!(r.header("hx-push-url").is_none());
        // The new-organization form posts to its own page's URL, which reloads.
        let page = app.web.get("/orgs/new").await;
        assert_eq!(page.select_attr("main form.form", "action").as_deref(), Some("/orgs/new"));
        let home = app.web.get("/").await;
        assert_eq!(home.select_attr(".org-switch a[href='/orgs/new']", "hx-boost").as_deref(), Some("false"));
    }
}

db_test! {
    async fn the_first_invalid_field_takes_the_focus_and_every_message_is_shown(app: TestApp) {
        app.setup_owner().await;
        // Signing in: both fields missing, the first takes the focus; then only the second.
        let fresh = app.new_client();
        let r = fresh.post_form("/login", &[("email", ""), ("password", "")]).await;
        assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
        assert!(r.field_error("email").is_some() && r.field_error("password").is_some());
        assert_eq!(r.select_attr("#email", "autofocus").as_deref(), Some(""));
        assert!(r.select_attr("#password", "autofocus").is_none());
        let r = fresh.post_form("/login", &[("email", OWNER_EMAIL), ("password", "")]).await;
        assert_eq!(r.select_attr("#password", "autofocus").as_deref(), Some(""));
        assert!(r.select_attr("#email", "autofocus").is_none(), "only the invalid field");

        let r = app.web.post_form("/tokens", &[("name", ""), ("role", "wizard")]).await;
        assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
        assert!(r.field_error("token-name").is_some() && r.field_error("token-role").is_some());
        assert_eq!(r.select_attr("#token-name", "autofocus").as_deref(), Some(""));
        assert!(r.select_attr("#token-role", "autofocus").is_none());
        let r = app.web.post_form("/tokens", &[("name", "ok"), ("role", "wizard")]).await;
        assert_eq!(r.select_attr("#token-role", "autofocus").as_deref(), Some(""));
        // Exactly one control has the focus.
        assert_eq!(r.select_all("[autofocus]").len(), 1);
    }
}

db_test! {
    async fn roles_are_explained_where_they_are_chosen(app: TestApp) {
        app.setup_owner().await;
        app.member_with_role("builder@example.com", "builder").await;
        let members = app.web.get("/members").await;
        let invite = members.select_all("#invite-roles li");
        assert_eq!(invite.len(), 5, "{invite:?}");
        assert!(invite[1].starts_with("Admin: manages members and API tokens"), "{invite:?}");
        assert_eq!(members.select_attr("#member-role", "aria-describedby").as_deref(), Some("invite-roles"));
        assert_eq!(members.select_all("#member-roles li").len(), 5);
        assert_eq!(members.select_attr("#members-table select[name=role]", "aria-describedby").as_deref(), Some("member-roles"));
        assert_eq!(members.select_text("#members-table caption").as_deref(), Some("2 members of Acme"));
        let tokens = app.web.get("/tokens").await;
        let lines = tokens.select_all("#token-roles li");
        assert_eq!(lines.len(), 5);
        assert!(lines[4].starts_with("Member: "), "{lines:?}");
        assert_eq!(tokens.select_attr("#token-role", "aria-describedby").as_deref(), Some("token-roles"));
    }
}

db_test! {
    async fn every_refused_field_is_reported_at_once(app: TestApp) {
        app.setup_owner().await;
        let admin = app.member_with_role("admin@example.com", "admin").await;
        let r = admin.post_form("/members", &[("email", "nope"), ("role", "owner")]).await;
        assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
        assert!(r.field_error("member-email").is_some(), "{}", r.body);
        assert_eq!(r.field_error("member-role").as_deref(), Some("You cannot grant a role above your own (admin)."));
        let r = app.web.post_form("/vault", &[("name", ""), ("purpose", "other"), ("value", ""), ("address", "ftp://x")]).await;
        assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
        for field in ["secret-name", "secret-value", "secret-address"] {
            assert!(r.field_error(field).is_some(), "{field}: {}", r.body);
        }
        assert_eq!(r.select_attr("#secret-name", "autofocus").as_deref(), Some(""));
        assert_eq!(app.count("vault_secrets").await, 0);
        assert_eq!(app.count("invitations").await, 1);
    }
}
