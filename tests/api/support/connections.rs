//! Connection rows no route writes any more, put straight into the table.

use crate::helpers::TestApp;

/// A second row for the host of connection `id` (the same organization, kind, address, key and
/// runtime, named `name`, created a millisecond later), as an old database may hold: one address
/// is one connection now, and a key goes to one address. Its id.
pub(crate) async fn same_host_again(app: &TestApp, id: &str, name: &str) -> String {
    let again = uuid::Uuid::new_v4().to_string();
    let mut c = app.state.db.conn().await.expect("conn");
    sqlx::query(
        "INSERT INTO sandbox_connections (id, organization_id, name, kind, address, credential_secret_id, \
         default_runtime, is_default, is_enabled, created_at, updated_at) \
         SELECT $1, organization_id, $2, kind, address, credential_secret_id, default_runtime, 0, 1, \
         created_at + 1, updated_at + 1 FROM sandbox_connections WHERE id = $3",
    )
    .bind(&again)
    .bind(name)
    .bind(id)
    .execute(&mut *c)
    .await
    .expect("the same host again");
    again
}

/// A Daytona connection of `org_id` to `api_url` with `key` as its vault key (purpose `daytona`,
/// bound to `api_url`), written through the stores as the connections service cannot save one
/// yet; the organization's default when it has no other. Its id.
pub(crate) async fn daytona(o: &crate::support::Org<'_>, api_url: &str, key: &str) -> String {
    use agenticos::sandbox::connections::model::ConnectionKind;
    use agenticos::sandbox::connections::store::{self, Values};
    let body = serde_json::json!({"name": format!("daytona-{}", &uuid::Uuid::new_v4().simple().to_string()[..8]),
        "purpose": "daytona", "value": key});
    let r = o.call(reqwest::Method::POST, "/api/v1/vault/secrets", Some(body)).await;
    assert_eq!(r.status, 201, "{}", r.body);
    let secret_id = r.json()["id"].as_str().expect("secret id").to_string();
    let (app, org_id) = (o.app, o.org_id.as_str());
    let mut c = app.state.db.conn().await.expect("conn");
    sqlx::query("UPDATE vault_secrets SET bound_address = $1 WHERE id = $2")
        .bind(api_url)
        .bind(&secret_id)
        .execute(&mut *c)
        .await
        .expect("bind the key");
    let id = uuid::Uuid::new_v4().to_string();
    let name = format!("daytona-{}", &id[..8]);
    let values = Values {
        name: &name,
        kind: ConnectionKind::Daytona,
        address: Some(api_url),
        credential_secret_id: Some(&secret_id),
        default_runtime: None,
    };
    let is_default = store::count(&mut c, org_id).await.expect("count") == 0;
    store::insert(&mut c, &id, org_id, &values, is_default, agenticos::db::now_ms()).await.expect("insert");
    id
}
