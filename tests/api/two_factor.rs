//! Two-factor sign-in with TOTP (issue 49, item 7), on SQLite and PostgreSQL: enrolment with a
//! first code, recovery codes kept hashed, the sign-in's second step (a half-signed-in browser
//! reaches nothing), codes used once and only within one step of the clock, the lock-out shared
//! with wrong passwords, the owners' requirement, switching off, and the command line's way back.

use reqwest::Method;

use crate::accounts_sign_ins::{audit_rows, reset_password};
use crate::db_test;
use crate::helpers::{Client, Resp, MEMBER_PASSWORD, OWNER_EMAIL, OWNER_PASSWORD};
use crate::support::two_factor::App;

/// Enrols the account of `c`: the page's secret in an app, a first code; the recovery codes.
async fn enrol(c: &Client) -> (App, Vec<String>) {
    let page = c.get("/account/two-factor").await;
    assert_eq!(page.status, 200, "{}", page.body);
    let secret = page.select_text("#two-factor-secret").expect("the secret as text");
    let mut app = App::of(&secret);
    let r = c.post_form("/account/two-factor", &[("code", &app.next_code().await)]).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let codes = r.select_all("#recovery-codes code");
    (app, codes)
}

/// The second step's page after a right password, and its form posted with `code`.
async fn second_step(c: &Client, code: &str) -> Resp {
    let form = c.get("/login/two-factor").await;
    assert_eq!(form.status, 200, "{}", form.body);
    let token = form.select_attr("input[name=csrf_token]", "value").expect("a form");
    c.send(c.http.post(c.url("/login/two-factor")).form(&[("code", code), ("csrf_token", &token)])).await
}

fn signed_in(r: &Resp) -> bool {
    r.status == 303 && r.location().as_deref() == Some("/")
}

db_test! {
    async fn a_second_step_completes_the_sign_in_and_each_code_works_once(app: TestApp) {
        app.setup_owner().await;
        let page = app.web.get("/account").await;
        assert!(page.select_text("#two-factor-status").is_some_and(|t| t.contains("off")), "{}", page.body);

        // Enrolment: a QR code (an SVG image) and the secret as text; a wrong first code leaves it off.
        let form = app.web.get("/account/two-factor").await;
        let qr = form.select_attr("#two-factor-qr", "src").expect("a QR code");
        assert!(qr.starts_with("data:image/svg+xml;base64,"), "{qr}");
        let secret = form.select_text("#two-factor-secret").expect("secret");
        assert_eq!(app.web.get("/account/two-factor").await.select_text("#two-factor-secret"), Some(secret.clone()), "the same secret until confirmed");
        let r = app.web.post_form("/account/two-factor", &[("code", "000000")]).await;
        assert_eq!(r.status, 422, "{}", r.body);
        assert!(r.field_error("code").is_some_and(|m| m.contains("not the code")), "{}", r.body);
        assert_eq!(app.scalar_strings("SELECT CAST(COUNT(*) AS TEXT) FROM user_two_factor WHERE enabled_at IS NOT NULL").await, ["0"]);
        let mut phone = App::of(&secret);
        let r = app.web.post_form("/account/two-factor", &[("code", &phone.next_code().await)]).await;
        assert_eq!(r.status, 200, "{}", r.body);
        let codes = r.select_all("#recovery-codes code");
        assert_eq!(codes.len(), 10, "{}", r.body);
        let page = app.web.get("/account").await;
        assert!(page.select_text("#two-factor-status").is_some_and(|t| t.contains("10 recovery codes of 10 left")), "{}", page.body);

        // Stored: the recovery codes as SHA-256 only; the secret encrypted, bound to the account.
        let mut hashes = app.scalar_strings("SELECT code_hash FROM two_factor_recovery_codes").await;
        let mut expected: Vec<String> = codes.iter().map(|c| agenticos::auth::secrets::sha256_hex(c)).collect();
        hashes.sort();
        expected.sort();
        assert_eq!(hashes, expected);
        let user_id = app.scalar_strings("SELECT id FROM users").await.remove(0);
        let mut conn = app.state.db.conn().await.expect("conn");
        let (nonce, ciphertext): (Vec<u8>, Vec<u8>) =
            sqlx::query_as("SELECT nonce, ciphertext FROM user_two_factor").fetch_one(&mut *conn).await.expect("row");
        drop(conn);
        let raw = totp_rs::Secret::Encoded(secret.clone()).to_bytes().expect("base32");
        assert!(!ciphertext.windows(raw.len()).any(|w| w == raw.as_slice()), "the secret is not stored in plain text");
        let key = &app.state.vault_key;
        let opened = agenticos::vault::crypto::decrypt(key, "account-two-factor", &user_id, &nonce, &ciphertext);
        assert_eq!(opened.expect("decrypts"), raw);
        assert!(agenticos::vault::crypto::decrypt(key, "account-two-factor", "another-user", &nonce, &ciphertext).is_err());
        assert_eq!(audit_rows(&app, "account.two_factor_enabled").await,
            [format!("{OWNER_EMAIL} | {OWNER_EMAIL} | authenticator app confirmed; 10 recovery codes issued")]);

        // A right password alone makes no session: the browser reaches nothing, page or API, and
        // the second step's cookie is no session cookie.
        let c = app.new_client();
        let r = c.post_login(OWNER_EMAIL, OWNER_PASSWORD).await;
        assert_eq!((r.status.as_u16(), r.location().as_deref()), (303, Some("/login/two-factor")), "{}", r.body);
        let set_cookie = r.header("set-cookie").expect("the second step's cookie");
        assert!(set_cookie.starts_with("agos_second_step=") && set_cookie.contains("HttpOnly"), "{set_cookie}");
        assert!(set_cookie.contains("Path=/login/two-factor"), "{set_cookie}");
        let challenge = set_cookie["agos_second_step=".len()..].split(';').next().expect("value").to_string();
        for path in ["/", "/account", "/members", "/tokens"] {
            assert!(c.get(path).await.location().is_some_and(|l| l.starts_with("/login")), "{path}");
        }
        assert_eq!(c.api(Method::GET, "/api/v1/me", None).await.problem(401)["type"], "https://agenticos.dev/problems/unauthenticated");
        let forged = c.send(c.http.get(c.url("/api/v1/me")).header("cookie", format!("agos_session={challenge}"))).await;
        assert_eq!(forged.status, 401, "{}", forged.body);
        assert_eq!(app.count("login_sessions").await, 1, "only the owner's first sign-in");

        // Wrong codes are refused at the field and counted; a code two steps old is outside the skew.
        let r = second_step(&c, "123456").await;
        assert_eq!(r.status, 422, "{}", r.body);
        assert!(r.field_error("code").is_some_and(|m| m.contains("not right")), "{}", r.body);
        let old = phone.code_at(phone.now_step() - 2);
        assert_eq!(second_step(&c, &old).await.status, 422);
        assert_eq!(app.count("login_failures").await, 2);
        assert_eq!(audit_rows(&app, "sign_in.failed").await.len(), 2);
        let code = phone.next_code().await;
        let r = second_step(&c, &code).await;
        assert!(signed_in(&r), "{} {:?}", r.status, r.location());
        assert_eq!(c.get("/account").await.status, 200);
        assert_eq!(app.count("login_failures").await, 0, "a completed sign-in forgets the failures");
        assert_eq!(app.count("sign_in_challenges").await, 0);

        // The same code again, in another browser: refused (replay), though within the skew.
        let d = app.new_client();
        assert_eq!(d.post_login(OWNER_EMAIL, OWNER_PASSWORD).await.location().as_deref(), Some("/login/two-factor"));
        let r = second_step(&d, &code).await;
        assert_eq!(r.status, 422, "a code works once: {}", r.body);
        // A recovery code instead, typed in capitals with spaces: once.
        let typed = codes[3].replace('-', " ").to_uppercase();
        assert!(signed_in(&second_step(&d, &typed).await));
        let e = app.new_client();
        e.post_login(OWNER_EMAIL, OWNER_PASSWORD).await;
        assert_eq!(second_step(&e, &codes[3]).await.status, 422, "a recovery code works once");
        assert_eq!(audit_rows(&app, "sign_in.recovery_code_used").await, [format!("{OWNER_EMAIL} | {OWNER_EMAIL} | 9 of 10 left")]);
        let how = app.scalar_strings("SELECT detail FROM audit_events WHERE action = 'sign_in.succeeded' ORDER BY created_at, id").await;
        assert_eq!(how[how.len() - 2..], ["password and two-factor code", "password and recovery code"]);

        // Wrong codes reach the same per-account limit as wrong passwords (one counted above):
        // then even a right code waits, and the page says for how long.
        for _ in 0..4 {
            assert_eq!(second_step(&e, "999999").await.status, 422);
        }
        let r = second_step(&e, &codes[4]).await;
        assert_eq!(r.status, 429, "{}", r.body);
        assert!(r.select_text("#second-step-message").is_some_and(|m| m.contains("Too many failed sign-ins")), "{}", r.body);
        assert_eq!(r.header("retry-after").map(|s| !s.is_empty()), Some(true));
        assert_eq!(app.count("sign_in_challenges").await, 1, "still waiting for its code");
        assert_eq!(app.scalar_strings("SELECT CAST(COUNT(*) AS TEXT) FROM two_factor_recovery_codes WHERE used_at IS NULL").await, ["9"]);

        // Without a live second step the page sends back to the sign-in.
        let f = app.new_client();
        assert_eq!(f.get("/login/two-factor").await.location().as_deref(), Some("/login"));
        // (The test's own HTML parser logs the pages it reads; the console's lines are the rest.)
        let logs = crate::helpers::captured_logs();
        let logged: Vec<&str> = logs.lines().filter(|l| l.contains(&secret) && !l.contains("html5ever")).collect();
        assert!(logged.is_empty(), "the secret is never logged: {logged:?}");
    }
}

db_test! {
    async fn owners_require_two_factor_and_members_without_it_are_sent_to_set_it_up(app: TestApp) {
        app.setup_owner().await;
        let bob = app.member_with_role("bob@example.com", "operator").await;
        let admin = app.member_with_role("admin@example.com", "admin").await;
        let token = admin.create_token_in_page("ops", "operator").await;

        // Only an owner flips the switch, and only with two-factor sign-in on themselves.
        let r = admin.post_form("/members/two-factor", &[("require_two_factor", "on")]).await;
        assert_eq!(r.status, 403, "{}", r.body);
        assert!(admin.get("/members").await.select_text("#two-factor-required-card").is_none(), "an admin sees no switch");
        let r = app.web.post_form("/members/two-factor", &[("require_two_factor", "on")]).await;
        assert_eq!(r.status, 422, "{}", r.body);
        assert!(r.field_error("require-two-factor").is_some_and(|m| m.contains("your own account first")), "{}", r.body);
        let (_owner_app, _) = enrol(&app.web).await;
        let r = app.web.post_form("/members/two-factor", &[("require_two_factor", "on")]).await;
        assert_eq!(r.status, 303, "{}", r.body);
        let members = app.web.get("/members").await;
        assert_eq!(members.select_attr("#require-two-factor", "checked").as_deref(), Some(""), "{}", members.body);
        assert_eq!(audit_rows(&app, "organization.two_factor_required").await,
            [format!("{OWNER_EMAIL} | Acme | members without two-factor sign-in are sent to enrol")]);

        // A member without it is sent to set it up before anything else, page or API; API tokens
        // are not concerned.
        for path in ["/", "/members", "/account", "/agents"] {
            assert_eq!(bob.get(path).await.location().as_deref(), Some("/account/two-factor"), "{path}");
        }
        let p = bob.api(Method::GET, "/api/v1/me", None).await.problem(403);
        assert_eq!(p["type"], "https://agenticos.dev/problems/two-factor-required", "{p}");
        assert_eq!(admin.get("/tokens").await.location().as_deref(), Some("/account/two-factor"));
        assert_eq!(admin.bearer(&token, Method::GET, "/api/v1/me", None).await.status, 200, "a token is its own credential");
        let page = bob.get("/account/two-factor").await;
        assert!(page.select_text("#two-factor-required").is_some_and(|t| t.contains("requires two-factor")), "{}", page.body);
        let (mut bob_app, _) = enrol(&bob).await;
        assert_eq!(bob.get("/agents").await.status, 200);
        // The owner's own sign-ins are unaffected but for their second step.
        assert_eq!(app.web.get("/members").await.status, 200);

        // Switching off: a wrong password or a spent code is refused at the field; the password
        // does it. With the requirement on, Bob is sent to set it up again.
        let r = bob.post_form("/account/two-factor/disable", &[("two_factor_proof", "not my password")]).await;
        assert_eq!(r.status, 422, "{}", r.body);
        assert!(r.field_error("two-factor-proof").is_some_and(|m| m.contains("neither")), "{}", r.body);
        let r = bob.post_form("/account/two-factor/disable", &[("two_factor_proof", &bob_app.next_code().await)]).await;
        assert_eq!(r.status, 303, "{}", r.body);
        assert_eq!(bob.get("/agents").await.location().as_deref(), Some("/account/two-factor"));
        assert_eq!(audit_rows(&app, "account.two_factor_disabled").await, ["bob@example.com | bob@example.com | confirmed with a code"]);
        assert_eq!(app.scalar_strings("SELECT CAST(COUNT(*) AS TEXT) FROM two_factor_recovery_codes tc JOIN users u ON u.id = tc.user_id WHERE u.email = 'bob@example.com'").await, ["0"]);

        // The owner switches the requirement off: Bob goes on without it.
        let r = app.web.post_form("/members/two-factor", &[]).await;
        assert_eq!(r.status, 303, "{}", r.body);
        assert_eq!(bob.get("/agents").await.status, 200);
        assert_eq!(audit_rows(&app, "organization.two_factor_not_required").await.len(), 1);
        let c = app.new_client();
        assert!(signed_in(&c.post_login("bob@example.com", MEMBER_PASSWORD).await), "a password alone signs Bob in again");

        // A locked-out owner (phone and recovery codes lost) is let back in from the command line.
        let (code, out, err) = reset_password(&app, &["--email", OWNER_EMAIL, "--clear-2fa"]);
        assert_eq!(code, Some(0), "{out}{err}");
        assert!(out.contains(&format!("two-factor sign-in of {OWNER_EMAIL} is off")), "{out}");
        assert_eq!(app.count("user_two_factor").await, 0);
        assert_eq!(audit_rows(&app, "account.two_factor_cleared_on_command_line").await,
            [format!("agenticos admin | {OWNER_EMAIL} | secret and recovery codes deleted")]);
        let (code, out, _) = reset_password(&app, &["--email", OWNER_EMAIL, "--clear-2fa"]);
        assert_eq!(code, Some(0));
        assert!(out.contains("was off already"), "{out}");
    }
}
