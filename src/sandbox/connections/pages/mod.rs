//! HTML: the connections table at `/sandboxes` with each host's live health, the row actions and
//! the delete confirmation. The connection dialog ("Test this host", saving) is in `form.rs`.

use actix_web::http::header::{HeaderValue, VARY};
use actix_web::http::StatusCode;
use actix_web::web::{Data, Form, Path};
use actix_web::{HttpRequest, HttpResponse};
use askama::Template;
use serde::Deserialize;

use super::error::ConnectionError;
use super::model::{Connection, ConnectionHealth};
use super::service::{self, DeletePreview, KeyOutcome};
use crate::sandbox::tombstones::model::Pending;
use crate::sandbox::tombstones::service as tombstones;
use crate::state::AppState;
use crate::web::{page, paths, redirect_with_flash, render, see_other, PageCaller, PageError, Shell};

pub mod form;

pub use form::{create, edit_form, kind_changed, new_form, probe, update};

#[derive(Template)]
#[template(path = "sandbox/connections/index.html")]
pub struct ConnectionsPage {
    pub shell: Shell,
    pub rows: Vec<Row>,
    pub can_manage: bool,
    /// Why the last action was refused (a connection agents are pinned to), shown above the table.
    pub error: Option<String>,
}

impl ConnectionsPage {
    /// Whether a row's health is still to be asked for (the table asks once it is on screen).
    pub fn is_health_pending(&self) -> bool {
        self.rows.iter().any(|r| r.health.health.is_none())
    }
}

/// One row of the table.
pub struct Row {
    pub connection: Connection,
    pub health: HealthCellPartial,
    /// Removed sandboxes at this host still waiting for their destroy.
    pub pending: Pending,
}

/// A row's health: the word, what was found, and a link to what fixes it. `health` is none while
/// the host is being asked.
#[derive(Template)]
#[template(path = "sandbox/connections/_health.html")]
pub struct HealthCellPartial {
    pub connection: Connection,
    pub health: Option<ConnectionHealth>,
    pub can_manage: bool,
    pub csrf_token: String,
    /// Swapped in by the table's poll (out of band), rather than rendered with the page.
    pub is_oob: bool,
}

impl HealthCellPartial {
    fn new(caller: &PageCaller, connection: Connection, health: Option<ConnectionHealth>, is_oob: bool) -> Self {
        HealthCellPartial {
            connection,
            health,
            can_manage: caller.role.can_manage_connections(),
            csrf_token: caller.csrf_token.clone(),
            is_oob,
        }
    }

    /// The vault row where the refused key is rotated, when the key is what to fix.
    pub fn rotate_path(&self) -> Option<String> {
        let h = self.health.as_ref()?;
        let secret = h.credential_secret_id.as_deref()?;
        (self.can_manage && h.health == super::model::Health::KeyRefused).then(|| paths::secret_rotate_field(secret))
    }

    /// Whether "Edit" fixes it (the address, the key, the default runtime).
    pub fn is_fixed_by_editing(&self) -> bool {
        use super::model::Health;
        self.can_manage
            && self.health.as_ref().is_some_and(|h| {
                !matches!(
                    h.health,
                    Health::Healthy | Health::SwitchedOff | Health::NotSupported | Health::VersionMismatch
                )
            })
    }

    /// Whether switching it on is what it needs.
    pub fn is_switched_off(&self) -> bool {
        self.health.as_ref().is_some_and(|h| h.health == super::model::Health::SwitchedOff)
    }
}

/// The health cells of every row, each swapped into its place out of band.
#[derive(Template)]
#[template(path = "sandbox/connections/_health_cells.html")]
pub struct HealthCellsPartial {
    pub cells: Vec<HealthCellPartial>,
}

async fn connections_page(st: &AppState, caller: &PageCaller, req: &HttpRequest) -> Result<ConnectionsPage, PageError> {
    let pending = tombstones::pending(st, &caller.org_id).await.map_err(|e| ConnectionError::Internal(e.into()))?;
    let rows = service::list_with_known_health(st, caller)
        .await?
        .into_iter()
        .map(|(connection, health)| Row {
            health: HealthCellPartial::new(caller, connection.clone(), health, false),
            pending: pending.iter().find(|(id, _)| *id == connection.id).map(|(_, p)| p.clone()).unwrap_or_default(),
            connection,
        })
        .collect();
    Ok(ConnectionsPage {
        shell: Shell::new(caller, req, "sandboxes"),
        rows,
        can_manage: caller.role.can_manage_connections(),
        error: None,
    })
}

/// The table renders at once with the health that is known; hosts are asked afterwards.
pub async fn index(st: Data<AppState>, caller: PageCaller, req: HttpRequest) -> Result<HttpResponse, PageError> {
    let p = connections_page(&st, &caller, &req).await?;
    page(&p.shell, &p)
}

/// The table's poll: every row's health (hosts asked in parallel, each briefly, answers kept a
/// few seconds). A fragment only: without htmx it is the table.
pub async fn health(st: Data<AppState>, caller: PageCaller, req: HttpRequest) -> Result<HttpResponse, PageError> {
    if !crate::web::htmx::wants_fragment(&req) {
        return Ok(see_other(paths::SANDBOXES));
    }
    let cells = service::health_of_all(&st, &caller)
        .await?
        .into_iter()
        .map(|(connection, health)| HealthCellPartial::new(&caller, connection, Some(health), true))
        .collect();
    let mut res = render(&HealthCellsPartial { cells })?;
    res.headers_mut().insert(VARY, HeaderValue::from_static("HX-Request"));
    Ok(res)
}

pub async fn enable(st: Data<AppState>, caller: PageCaller, id: Path<String>) -> Result<HttpResponse, PageError> {
    let c = service::set_enabled(&st, &caller, &id, true).await?;
    Ok(redirect_with_flash(paths::SANDBOXES, "success", format!("Connection “{}” is switched on.", c.name)))
}

pub async fn disable(st: Data<AppState>, caller: PageCaller, id: Path<String>) -> Result<HttpResponse, PageError> {
    let c = service::set_enabled(&st, &caller, &id, false).await?;
    Ok(redirect_with_flash(
        paths::SANDBOXES,
        "success",
        format!("Connection “{}” is switched off: no new work starts there; its sandboxes are still destroyed when deleted.", c.name),
    ))
}

/// Asked before a host that is not working becomes the default.
#[derive(Template)]
#[template(path = "sandbox/connections/make_default.html")]
pub struct MakeDefaultPage {
    pub shell: Shell,
    pub connection: Connection,
    pub health: ConnectionHealth,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub struct MakeDefaultForm {
    /// `yes` once the person saw what is wrong with the host and still wants it.
    confirmed: String,
}

/// Makes a connection the default; a host that does not answer, refuses its key or is otherwise
/// not working is asked about first (a page that says what is wrong and what would run there).
pub async fn make_default(
    st: Data<AppState>,
    caller: PageCaller,
    id: Path<String>,
    form: Form<MakeDefaultForm>,
    req: HttpRequest,
) -> Result<HttpResponse, PageError> {
    if form.confirmed != "yes" {
        if let Some((connection, health)) = service::default_warning(&st, &caller, &id).await? {
            let p = MakeDefaultPage { shell: Shell::new(&caller, &req, "sandboxes"), connection, health };
            return page(&p.shell, &p);
        }
    }
    let c = service::make_default(&st, &caller, &id).await?;
    Ok(redirect_with_flash(paths::SANDBOXES, "success", format!("Connection “{}” is the default now.", c.name)))
}

/// The confirmation of a delete: what goes, and whether its key may go too.
#[derive(Template)]
#[template(path = "sandbox/connections/_delete_form.html")]
pub struct DeleteFormPartial {
    pub csrf_token: String,
    pub preview: DeletePreview,
}

impl DeleteFormPartial {
    pub fn action(&self) -> String {
        paths::connection_delete(&self.preview.connection.id)
    }
    /// “a”, “b”
    pub fn names(&self, names: &[String]) -> String {
        super::delete::names(names)
    }
}

#[derive(Template)]
#[template(path = "sandbox/connections/_delete_dialog.html")]
pub struct DeleteDialogPartial {
    pub form: DeleteFormPartial,
}

#[derive(Template)]
#[template(path = "sandbox/connections/delete_page.html")]
pub struct DeletePage {
    pub shell: Shell,
    pub form: DeleteFormPartial,
}

/// The delete confirmation: a dialog for htmx, else a page.
pub async fn delete_form(
    st: Data<AppState>,
    caller: PageCaller,
    req: HttpRequest,
    id: Path<String>,
) -> Result<HttpResponse, PageError> {
    let preview = service::delete_preview(&st, &caller, &id).await?;
    let form = DeleteFormPartial { csrf_token: caller.csrf_token.clone(), preview };
    if crate::web::htmx::wants_fragment(&req) {
        return render(&DeleteDialogPartial { form });
    }
    let p = DeletePage { shell: Shell::new(&caller, &req, "sandboxes"), form };
    page(&p.shell, &p)
}

/// What the delete confirmation posts.
#[derive(Deserialize, Default)]
#[serde(default)]
pub struct DeleteForm {
    /// The "also delete its key" checkbox (`1` when ticked).
    delete_key: String,
    /// The count of sandboxes that may still run at the host, typed again to confirm.
    forget_sandboxes: String,
}

pub async fn delete(
    st: Data<AppState>,
    caller: PageCaller,
    req: HttpRequest,
    id: Path<String>,
    form: Form<DeleteForm>,
) -> Result<HttpResponse, PageError> {
    let with_key = matches!(form.delete_key.trim(), "1" | "on" | "true" | "yes");
    let forget = form.forget_sandboxes.trim().parse::<i64>().ok();
    match service::delete(&st, &caller, &id, with_key, forget).await {
        Ok(d) => {
            let key = match d.key {
                KeyOutcome::Kept => String::new(),
                KeyOutcome::Deleted(name) => format!(" Its key “{name}” was deleted from the vault too."),
                KeyOutcome::StillUsed(name, users) => {
                    format!(" Its key “{name}” stays in the vault: {} uses it.", super::delete::names(&users))
                }
            };
            let message = format!("Connection “{}” deleted.{key}", d.connection.name);
            Ok(redirect_with_flash(paths::SANDBOXES, "success", message))
        }
        Err(ConnectionError::InUse(message) | ConnectionError::SandboxesLeft { message, .. }) => {
            let p = ConnectionsPage { error: Some(message), ..connections_page(&st, &caller, &req).await? };
            crate::web::page_status(StatusCode::CONFLICT, &p.shell, &p)
        }
        Err(e) => Err(e.into()),
    }
}
