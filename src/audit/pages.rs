//! HTML: the audit log, paged.

use actix_web::web::{Data, Query};
use actix_web::{HttpRequest, HttpResponse};
use askama::Template;
use serde::Deserialize;

use super::model::AuditEvent;
use super::service;
use crate::db::Page;
use crate::state::AppState;
use crate::web::{page, paths, PageCaller, PageError, Shell};

#[derive(Template)]
#[template(path = "audit/index.html")]
pub struct AuditLogPage {
    pub shell: Shell,
    pub events: Page<AuditEvent>,
}

impl AuditLogPage {
    pub fn prev_link(&self) -> String {
        paths::audit_page(self.events.page.saturating_sub(1).max(1))
    }
    pub fn next_link(&self) -> String {
        paths::audit_page(self.events.page + 1)
    }
}

#[derive(Deserialize)]
pub struct PageQuery {
    page: Option<u32>,
}

pub async fn index(
    st: Data<AppState>,
    caller: PageCaller,
    req: HttpRequest,
    q: Query<PageQuery>,
) -> Result<HttpResponse, PageError> {
    let events = service::page(&st.db, &caller, q.page).await?;
    let p = AuditLogPage { shell: Shell::new(&caller, &req, "audit"), events };
    page(&p.shell, &p)
}
