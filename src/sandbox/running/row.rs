//! One row of the Running tab (and of `GET /api/v1/sandbox-sessions`) for every host kind: where
//! it runs, whose it is (from our workspace rows), and what its host reports of it (`H`: a
//! sandboxd session's [`super::model::SessionFacts`], a Daytona sandbox's
//! [`crate::sandbox::hosts::daytona::running::model::SandboxFacts`]). The kind's part is only how
//! its rows are listed and what its host reports; the row, its words, its links
//! (`running/pages.rs`) and its partial (`_row.html`) are written once. Its own file, so that the
//! kinds' listings and the tab's model do not import each other.

use std::ops::{Deref, DerefMut};

use serde::Serialize;

use super::whose::Whose;
use crate::sandbox::workspaces::sessions::SessionOwner;

/// A sandboxd session or a Daytona sandbox of this organization.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct RunningRow<H> {
    /// The connection whose host holds it.
    pub connection_id: String,
    /// What its host reports of it.
    #[serde(flatten)]
    pub on_host: H,
    /// Whose it is, from the workspace row that opened it; null when no workspace of this
    /// organization names it (opened by hand, or its row deleted).
    pub workspace: Option<SessionOwner>,
}

impl<H> RunningRow<H> {
    pub fn new(connection_id: &str, on_host: H) -> Self {
        RunningRow { connection_id: connection_id.to_string(), on_host, workspace: None }
    }
}

/// The host's report reads as the row's own fields (`row.session_id`).
impl<H> Deref for RunningRow<H> {
    type Target = H;
    fn deref(&self) -> &H {
        &self.on_host
    }
}

impl<H> DerefMut for RunningRow<H> {
    fn deref_mut(&mut self) -> &mut H {
        &mut self.on_host
    }
}

impl<H> Whose for RunningRow<H> {
    fn owner(&self) -> Option<&SessionOwner> {
        self.workspace.as_ref()
    }
}

/// What a host kind's row shows (implemented on `RunningRow` of its report), as the row partial
/// shows it.
pub trait OnHost {
    /// What Close names in its path: a sandboxd session's key, a Daytona sandbox's id.
    fn id(&self) -> &str;

    /// How the page names the kind's rows: their class, the data attribute carrying
    /// [`Self::id`], and their Close button's class (scripts and tests find rows by them).
    const HTML: RowHtml;

    /// [`Self::HTML`], for the row partial.
    fn html(&self) -> &RowHtml {
        &Self::HTML
    }

    /// The agent cell's hover: what the host calls it.
    fn hover(&self) -> String;

    /// The kind's cells after whose it is, each naming its column (`usage`: memory sampled;
    /// `engine`: the Docker engine asked too; by reference, as a template passes them).
    fn cells(&self, usage: &bool, engine: &bool) -> Vec<Cell>;

    /// Whether the host keeps a live activity of it (sandboxd's event ring): then Activity is that
    /// and the operation log and the files are links of their own; else Activity is the log.
    fn live_activity(&self) -> bool;

    /// The connection it belongs to when it is listed under another: no action is offered.
    fn owned_by(&self) -> Option<&str> {
        None
    }

    /// Nothing here names it any more ("Close and delete files" purges it).
    fn orphaned(&self) -> bool {
        false
    }

    /// Whether Close deletes it already (a Daytona `run` scope's sandbox): then no "Close and
    /// delete files" is offered beside it.
    fn close_deletes(&self) -> bool {
        false
    }

    /// What Close does, in words (the actions' hover); empty where Close says it itself.
    fn close_words(&self) -> &'static str {
        ""
    }
}

/// See [`OnHost::html`].
pub struct RowHtml {
    pub row_class: &'static str,
    pub id_attribute: &'static str,
    pub close_class: &'static str,
}

/// One cell of a row: its column's name, its class and what it shows.
pub struct Cell {
    pub column: &'static str,
    pub class: &'static str,
    pub shown: Shown,
}

impl Cell {
    pub fn new(column: &'static str, class: &'static str, shown: Shown) -> Self {
        Cell { column, class, shown }
    }
}

/// What a cell shows.
pub enum Shown {
    Text(String),
    /// A badge of this colour class.
    Badge(&'static str, String),
    /// Words with their hover.
    Hover(String, String),
    /// A time's parts (`4 min`, `50 s`), each kept on one line, so a narrow cell wraps only
    /// between them.
    Parts(Vec<String>),
    /// Nothing known: a muted dash.
    Unknown,
}
