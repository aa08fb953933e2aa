//! The audit log: written in the same transaction as the change it records.

use super::error::AuditError;
use super::filter::{self, FilterInput};
pub use super::model::Actor;
use super::model::AuditEvent;
use super::store;
use crate::access::Caller;
use crate::db::{self, Db, DbResult, Page, PageRequest};

pub const PER_PAGE: u32 = 50;

pub async fn record(
    c: &mut db::Conn,
    org_id: &str,
    actor: &Actor,
    action: &str,
    target: &str,
    detail: &str,
) -> DbResult<()> {
    store::insert(c, org_id, actor, action, target, detail, db::now_ms()).await
}

/// A page of the organization's log, newest first, with the events `filters` let through.
pub async fn page(
    db: &Db,
    caller: &Caller,
    page: Option<u32>,
    filters: &FilterInput,
) -> Result<Page<AuditEvent>, AuditError> {
    if !caller.role.can_read_audit() {
        return Err(AuditError::Forbidden);
    }
    let filter = filter::parse(filters).map_err(AuditError::Invalid)?;
    let req = PageRequest::new(page, PER_PAGE);
    let mut c = db.conn().await?;
    Ok(Page::from_fetched(store::page(&mut c, &caller.org_id, &filter, req).await?, req))
}
