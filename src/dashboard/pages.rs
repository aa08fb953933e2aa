use actix_web::web::Data;
use actix_web::{HttpRequest, HttpResponse};
use askama::Template;

use crate::startup::AppState;
use crate::web::{page, Caller, PageError, Shell};

#[derive(Template)]
#[template(path = "dashboard/index.html")]
pub struct DashboardPage {
    pub shell: Shell,
    pub database: &'static str,
}

pub async fn index(st: Data<AppState>, caller: Caller, req: HttpRequest) -> Result<HttpResponse, PageError> {
    let shell = Shell::new(&caller, &req, "home");
    let database = match st.db.kind() {
        crate::db::DbKind::Sqlite => "SQLite (embedded)",
        crate::db::DbKind::Postgres => "PostgreSQL",
    };
    page(&shell, &DashboardPage { shell: shell.clone(), database })
}
