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
