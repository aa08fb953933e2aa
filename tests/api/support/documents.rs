//! What a person sees on Documents.

use reqwest::Method;

use crate::helpers::Client;

/// The workspace ids of the groups `c` sees on Documents (`GET /api/v1/documents`), in order.
pub(crate) async fn workspaces_seen_by(c: &Client) -> Vec<String> {
    let r = c.api(Method::GET, "/api/v1/documents", None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    r.json()["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .map(|g| g["workspace"]["id"].as_str().unwrap_or("").to_string())
        .collect()
}
