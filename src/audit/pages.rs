//! HTML: the audit log, filtered and paged; the filters stay in the URL.

use actix_web::http::StatusCode;
use actix_web::web::{Data, Query};
use actix_web::{HttpRequest, HttpResponse};
use askama::Template;

use super::api::AuditQuery;
use super::error::AuditError;
use super::events;
use super::filter::FilterInput;
use super::model::AuditEvent;
use super::service;
use crate::db::Page;
use crate::state::AppState;
use crate::web::filters::Choice;
use crate::web::{page_status, paths, FieldErrors, PageCaller, PageError, Shell};

#[derive(Template)]
#[template(path = "audit/index.html")]
pub struct AuditLogPage {
    pub shell: Shell,
    /// `None` while a filter is refused.
    pub events: Option<Page<AuditEvent>>,
    pub filters: FilterInput,
    pub errors: FieldErrors,
}

impl AuditLogPage {
    /// The filters set, as the links to other pages carry them.
    fn query(&self) -> Vec<(&str, &str)> {
        let f = &self.filters;
        [("actor", &f.actor), ("event", &f.event), ("from", &f.from), ("to", &f.to)]
            .into_iter()
            .filter(|(_, v)| !v.trim().is_empty())
            .map(|(k, v)| (k, v.as_str()))
            .collect()
    }
    pub fn page_link(&self, page: u32) -> String {
        paths::audit_page(&self.query(), page)
    }
    pub fn is_filtered(&self) -> bool {
        !self.query().is_empty()
    }
    pub fn event_choices(&self) -> Vec<Choice> {
        let mut choices = vec![Choice::new("", "Any event")];
        choices.extend(events::EVENTS.iter().map(|(code, name)| Choice::new(*code, *name)));
        choices
    }
    pub fn label(&self, e: &AuditEvent) -> String {
        events::label(&e.action)
    }
}

pub async fn index(
    st: Data<AppState>,
    caller: PageCaller,
    req: HttpRequest,
    q: Query<AuditQuery>,
) -> Result<HttpResponse, PageError> {
    let filters = q.filters();
    let (status, events, errors) = match service::page(&st.db, &caller, q.page, &filters).await {
        Ok(events) => (StatusCode::OK, Some(events), FieldErrors::new()),
        Err(AuditError::Invalid(errors)) => (StatusCode::UNPROCESSABLE_ENTITY, None, errors),
        Err(e) => return Err(e.into()),
    };
    let p = AuditLogPage { shell: Shell::new(&caller, &req, "audit"), events, filters, errors };
    page_status(status, &p.shell, &p)
}
