//! Every registered `/api/v1` route is in the OpenAPI document, and nothing else is.

#[test]
fn every_api_route_is_documented() {
    let doc = serde_json::to_value(agenticos::api::document()).expect("serialises");
    let paths = doc["paths"].as_object().expect("paths");
    let mut missing = Vec::new();
    let routes = agenticos::api::routes();
    for r in &routes {
        let method = r.method.as_str().to_ascii_lowercase();
        if paths.get(r.path).and_then(|p| p.get(&method)).is_none() {
            missing.push(format!("{} {}", r.method, r.path));
        }
    }
    assert!(missing.is_empty(), "routes missing from /api/v1/openapi.json: {missing:?}");
    let documented: usize = paths.values().map(|p| p.as_object().map(|o| o.len()).unwrap_or(0)).sum();
    assert_eq!(documented, routes.len(), "the document lists operations no route serves");
    assert!(doc["openapi"].as_str().is_some_and(|v| v.starts_with("3.")));
}

crate::db_test! {
    async fn the_document_is_served(app: TestApp) {
        let r = app.web.get("/api/v1/openapi.json").await;
        assert_eq!(r.status, 200);
        assert!(r.json()["paths"]["/api/v1/me"]["get"].is_object());
    }
}
