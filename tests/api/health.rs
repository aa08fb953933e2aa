use crate::db_test;

db_test! {
    async fn healthz_and_readyz_answer_without_authentication(app: TestApp) {
        let r = app.web.get("/healthz").await;
        assert_eq!(r.status, 200);
        assert_eq!(r.json()["status"], "ok");
        let r = app.web.get("/readyz").await;
        assert_eq!(r.status, 200);
        assert_eq!(r.json()["database"], "ok");
    }
}

db_test! {
    async fn every_response_carries_the_security_headers(app: TestApp) {
        for path in ["/healthz", "/login", "/setup", "/nope", "/api/v1/me", "/static/css/app.css"] {
            let r = app.web.get(path).await;
            let csp = r.header("content-security-policy").unwrap_or_else(|| panic!("{path}: no CSP"));
            assert!(csp.contains("frame-ancestors 'none'"), "{path}: {csp}");
            assert!(csp.contains("script-src 'self'"), "{path}: {csp}");
            assert!(!csp.contains("unsafe-inline"), "{path}: {csp}");
            assert_eq!(r.header("x-content-type-options").as_deref(), Some("nosniff"), "{path}");
            assert!(r.header("referrer-policy").is_some(), "{path}");
            assert!(r.header("x-request-id").is_some_and(|v| v.len() == 32), "{path}");
        }
    }
}

db_test! {
    async fn an_unknown_page_is_a_404_page_and_an_unknown_api_route_a_problem(app: TestApp) {
        let r = app.web.get("/does-not-exist").await;
        assert_eq!(r.status, 404);
        assert!(r.body.contains("There is no page at this address."));
        let r = app.web.get("/api/v1/does-not-exist").await;
        let p = r.problem(404);
        assert!(p["detail"].as_str().is_some_and(|d| d.contains("/api/v1/does-not-exist")));
    }
}
