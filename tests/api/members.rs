use reqwest::Method;

use crate::db_test;
use crate::helpers::{MEMBER_PASSWORD, OWNER_PASSWORD};

async fn membership_id(app: &crate::helpers::TestApp, email: &str) -> String {
    app.scalar_strings(&format!(
        "SELECT m.id FROM memberships m JOIN users u ON u.id = m.user_id WHERE u.email = '{email}'"
    ))
    .await
    .remove(0)
}

db_test! {
    async fn inviting_a_new_person_shows_the_link_once_and_adds_nobody_until_they_accept(app: TestApp) {
        app.setup_owner().await;
        let r = app.web.post_form("/members", &[("email", "New@Example.com"), ("role", "builder")]).await;
        assert_eq!(r.status, 200);
        assert!(r.select_text("#one-time-password").is_none(), "no password is made for anyone");
        let link = r.select_text("#invitation-link").expect("shown once");
        let code = r.select_text("#invitation-code").expect("shown once");
        assert!(link.ends_with(&format!("/invitations/{code}")), "{link}");
        assert!(r.select_all("#members-table tbody tr").iter().all(|row| !row.contains("new@example.com")));
        let pending = r.select_all("#invitations-table tbody tr");
        assert!(pending.len() == 1 && pending[0].contains("new@example.com") && pending[0].contains("Builder"), "{pending:?}");
        assert_eq!((app.count("users").await, app.count("memberships").await), (1, 1), "no account, no membership yet");
        let again = app.web.get("/members").await;
        assert!(!again.body.contains(&code), "the code is shown only once");
        assert!(again.select_text("#invitations-table").is_some_and(|t| t.contains("new@example.com")));

        let c = app.new_client();
        let joined = c.accept_invitation(&crate::helpers::link_path(&link), MEMBER_PASSWORD).await;
        assert_eq!(joined.status, 303, "{}", joined.body);
        let me = c.api(Method::GET, "/api/v1/me", None).await.json();
        assert_eq!((me["email"].as_str(), me["role"].as_str()), (Some("new@example.com"), Some("builder")));
        assert_eq!(app.new_client().post_login("new@example.com", MEMBER_PASSWORD).await.status, 303);
        let actions = app.scalar_strings("SELECT action FROM audit_events WHERE action LIKE 'member.%' ORDER BY seq").await;
        assert_eq!(actions, vec!["member.invited".to_string(), "member.joined".to_string()]);
        assert!(app.web.get("/members").await.select_text("#invitations-table").is_none(), "no longer pending");
    }
}

db_test! {
    async fn an_existing_account_is_invited_not_added_and_a_member_is_refused(app: TestApp) {
        app.setup_owner().await;
        let bob = app.other_org_user("bob@example.com", "Bob Inc").await;
        let r = app.web.post_form("/members", &[("email", "bob@example.com"), ("role", "operator")]).await;
        assert_eq!(r.status, 200, "{}", r.body);
        assert!(r.select_text("#invitation-link").is_some(), "the same answer as for a new e-mail");
        assert!(r.select_all("#members-table tbody tr").iter().all(|row| !row.contains("bob@example.com")));
        let orgs = bob.api(Method::GET, "/api/v1/organizations", None).await.json();
        assert_eq!(orgs.as_array().map(Vec::len), Some(1), "Bob does not see Acme before he accepts: {orgs}");
        let dup = app.web.post_form("/members", &[("email", "Owner@example.com"), ("role", "member")]).await;
        assert_eq!(dup.status, 422);
        assert!(dup.field_error("member-email").is_some_and(|m| m.contains("already a member")));
        assert_eq!(app.count("invitations").await, 1);
        assert_eq!(app.new_client().post_login("bob@example.com", OWNER_PASSWORD).await.status, 303, "his password is his");
    }
}

db_test! {
    async fn the_last_owner_cannot_be_demoted_or_removed(app: TestApp) {
        app.setup_owner().await;
        let id = membership_id(&app, "owner@example.com").await;
        let r = app.web.post_form(&format!("/members/{id}/role"), &[("role", "admin")]).await;
        assert_eq!(r.status, 409);
        assert!(r.body.contains("last owner cannot be demoted"));
        let r = app.web.post_form(&format!("/members/{id}/delete"), &[]).await;
        assert_eq!(r.status, 409);
        assert_eq!(app.scalar_strings("SELECT role FROM memberships").await, vec!["owner".to_string()]);
        // With a second owner, the first may step down.
        app.member_with_role("co@example.com", "owner").await;
        let r = app.web.post_form(&format!("/members/{id}/role"), &[("role", "admin")]).await;
        assert_eq!(r.status, 303);
    }
}

db_test! {
    async fn nobody_changes_the_role_of_someone_who_outranks_them(app: TestApp) {
        app.setup_owner().await;
        let admin = app.member_with_role("admin@example.com", "admin").await;
        let owner_id = membership_id(&app, "owner@example.com").await;
        let r = admin.post_form(&format!("/members/{owner_id}/role"), &[("role", "member")]).await;
        assert_eq!(r.status, 409);
        assert!(r.body.contains("outranks you"));
        let r = admin.post_form(&format!("/members/{owner_id}/delete"), &[]).await;
        assert_eq!(r.status, 409);
        app.member_with_role("op@example.com", "operator").await;
        let op_id = membership_id(&app, "op@example.com").await;
        let r = admin.api(Method::PATCH, &format!("/api/v1/members/{op_id}"), Some(serde_json::json!({"role": "owner"}))).await;
        let p = r.problem(409);
        assert!(p["detail"].as_str().is_some_and(|d| d.contains("above your own")));
        let r = admin.api(Method::PATCH, &format!("/api/v1/members/{op_id}"), Some(serde_json::json!({"role": "builder"}))).await;
        assert_eq!(r.status, 200);
        assert_eq!(r.json()["role"], "builder");
        let page = admin.get("/members").await;
        assert!(page.select_text(&format!("#member-{owner_id}")).is_some_and(|t| t.contains("Outranks you")));
    }
}

db_test! {
    async fn roles_below_admin_cannot_manage_members_tokens_or_audit(app: TestApp) {
        app.setup_owner().await;
        let builder = app.member_with_role("b@example.com", "builder").await;
        for path in ["/members", "/tokens", "/audit"] {
            assert_eq!(builder.get(path).await.status, 403, "{path}");
        }
        builder.api(Method::GET, "/api/v1/members", None).await.problem(403);
        assert_eq!(builder.get("/vault").await.status, 200, "builders keep vault keys");
        let member = app.member_with_role("m@example.com", "member").await;
        assert_eq!(member.get("/vault").await.status, 403);
        let home = member.get("/").await;
        assert!(home.select_all("nav.sidebar-nav a").iter().all(|a| a != "Members" && a != "Vault"));
        let r = member.post_form("/members", &[("email", "x@example.com"), ("role", "member")]).await;
        assert_eq!(r.status, 403);
        assert_eq!(app.count("memberships").await, 3);
    }
}
