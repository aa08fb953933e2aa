use actix_web::web::Data;
use actix_web::{HttpRequest, HttpResponse};
use askama::Template;

use super::service::{self, Home};
use crate::state::AppState;
use crate::web::{page, PageCaller, PageError, Shell};

#[derive(Template)]
#[template(path = "dashboard/index.html")]
pub struct DashboardPage {
    pub shell: Shell,
    pub home: Home,
}

pub async fn index(st: Data<AppState>, caller: PageCaller, req: HttpRequest) -> Result<HttpResponse, PageError> {
    let home = service::home(&st, &caller).await?;
    let shell = Shell::new(&caller, &req, "home");
    page(&shell, &DashboardPage { shell: shell.clone(), home })
}
