//! What Documents answers: workspaces the caller may see, their files grouped, tiles, a tree.

use serde::Serialize;

use crate::vocabulary::scope::Scope;

/// Who put a file there, as far as a path tells (docs/design.md §9: a host records no author).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum AddedBy {
    /// Under `uploads/`: attached by a person.
    Person,
    /// Anywhere else: written by the agent.
    Agent,
}

impl AddedBy {
    pub fn of(path: &str) -> AddedBy {
        if path == "uploads" || path.starts_with("uploads/") {
            AddedBy::Person
        } else {
            AddedBy::Agent
        }
    }
    pub fn words(self) -> &'static str {
        match self {
            AddedBy::Person => "attached by a person",
            AddedBy::Agent => "by the agent",
        }
    }
}

/// What a file is, from its extension: how it is previewed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum FileKind {
    Image,
    Pdf,
    Text,
    Other,
}

/// One file of a workspace (excluded folders never appear).
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct FileItem {
    /// The workspace that holds it.
    pub workspace_id: String,
    /// Workspace-relative, no leading slash.
    pub path: String,
    /// The last part of the path.
    pub name: String,
    /// Bytes.
    pub size: Option<u64>,
    /// When it last changed: an ISO-8601 UTC date and time (to fractions of seconds), as the host
    /// reports it (for a `state` workspace's file, when it was written; null for one written
    /// before the console kept that).
    pub modified_at: Option<String>,
    /// `image`, `pdf`, `text` or `other`, from the extension: how it is previewed.
    pub kind: FileKind,
    /// `person` (under `uploads/`: attached) or `agent` (anywhere else).
    pub added_by: AddedBy,
    /// For a file attached through the console: the person who attached it (their e-mail), while
    /// they are a member of the organization; null otherwise (docs/design.md §4).
    pub added_by_name: Option<String>,
}

impl FileItem {
    /// Who put it there, in words, naming the person who attached it when known.
    pub fn added_by_words(&self) -> String {
        added_by_words(self.added_by, self.added_by_name.as_deref())
    }
}

/// "attached by mia@example.com", else the words of `added_by`.
pub fn added_by_words(added_by: AddedBy, name: Option<&str>) -> String {
    match (added_by, name) {
        (AddedBy::Person, Some(name)) => format!("attached by {name}"),
        _ => added_by.words().to_string(),
    }
}

/// A file drawn as a tile: a scaled-down image, the first lines of a text, or a glyph.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Tile {
    /// The file drawn.
    pub file: FileItem,
    /// The agent whose workspace holds it.
    pub agent_name: Option<String>,
    /// A `data:image/webp;base64,…` thumbnail (at most 160×128), for at most 24 images per request.
    pub thumbnail: Option<String>,
    /// The first 8 lines (at most 200 characters) of a text file.
    pub text_preview: Option<String>,
    /// What is drawn without a thumbnail or text: `image`, `pdf`, `text` or `file`.
    pub glyph: String,
}

/// A top-level folder as one row: its counts and first files.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct FolderRow {
    /// The folder's name.
    pub name: String,
    /// Workspace-relative (a top-level folder: its name).
    pub path: String,
    /// Files listed under it (excluded items not counted).
    pub file_count: u64,
    /// Their bytes together.
    pub size: u64,
    /// Its first few files, by path.
    pub first_files: Vec<FileItem>,
    /// The newest change of a file under it: an ISO-8601 UTC date and time (to fractions of
    /// seconds), as a file's `modified_at`; null when none says.
    pub modified_at: Option<String>,
}

impl FolderRow {
    /// It holds more files than its row names.
    pub fn has_more(&self) -> bool {
        self.file_count > self.first_files.len() as u64
    }
}

/// How complete a workspace's listing is.
#[derive(Debug, Clone, Default, Serialize, utoipa::ToSchema)]
pub struct ListingStatus {
    /// Every file is listed.
    pub complete: bool,
    /// The host's limits (6 levels, 2,000 entries) cut the listing.
    pub limited: bool,
    /// A folder did not answer and was skipped.
    pub incomplete: bool,
    /// The workspace could not be read at all, and why.
    pub unreadable: Option<String>,
    /// What the page says, in plain words, when not every file is listed.
    pub note: Option<String>,
}

/// A workspace as Documents shows it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct WorkspaceSummary {
    /// The workspace's id.
    pub id: String,
    /// `sandboxd` or `state`.
    pub backend: String,
    /// `run`, `conversation`, `channel`, `user` or `agent`.
    pub scope: Scope,
    /// What kind of workspace it is, in words (the scope's, or e.g. a recovery copy's).
    pub kind_label: String,
    /// The scope in words ("whoever is in this conversation", …).
    pub access_label: String,
    /// For `user` scope only: the person's e-mail, or a channel sender's platform id. Plain text.
    pub owner_name: Option<String>,
    /// The agent whose workspace it is; null once the agent was deleted.
    pub agent_id: Option<String>,
    /// That agent's name.
    pub agent_name: Option<String>,
    /// The conversation it belongs to (its own for `conversation` and `channel` scope, its run's
    /// for `run` scope); null for the others.
    pub conversation_id: Option<String>,
    /// That conversation's title.
    pub conversation_title: Option<String>,
    /// The heading: the conversation's title, or the agent and scope for a workspace without one.
    pub title: String,
    /// "stored" (in this console's database) or "on host <connection name>".
    pub location: String,
    /// Last change of the workspace row, milliseconds since the epoch.
    pub updated_at: i64,
    /// For `state`: bytes used (each file's path and bytes); null for `sandboxd`.
    pub used_bytes: Option<u64>,
    /// For `state`: the storage limit in bytes (`AGENTICOS_STATE_LIMIT_BYTES`); null for `sandboxd`.
    pub limit_bytes: Option<u64>,
    /// For a recovery copy (what a run's finish could not merge into a shared `state` workspace):
    /// the id of the workspace it is a copy of; null for every other workspace.
    pub recovery_of: Option<String>,
}

/// One workspace's group on the All files page.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct WorkspaceGroup {
    /// The workspace and how it is shown.
    pub workspace: WorkspaceSummary,
    /// Loose files (at the top level) and attachments (under `uploads/`).
    pub files: Vec<FileItem>,
    /// Each other top-level folder.
    pub folders: Vec<FolderRow>,
    /// Files listed (excluded ones not counted).
    pub file_count: u64,
    /// Their bytes together.
    pub size: u64,
    /// Whether every file is listed, and if not why.
    pub listing: ListingStatus,
}

/// What one request cost.
#[derive(Debug, Clone, Default, Serialize, utoipa::ToSchema)]
pub struct Cost {
    /// Requests sent to sandbox hosts for this answer (listings and reads).
    pub host_requests: u64,
    /// Images read from a host to make thumbnails (at most 24).
    pub image_reads: u64,
    /// Time spent waiting for hosts' listings (sent as `Server-Timing`, not in the body).
    #[serde(skip)]
    pub host_time: std::time::Duration,
}

/// `GET /api/v1/documents`.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct DocumentsPage {
    /// The newest files of this page's workspaces.
    pub tiles: Vec<Tile>,
    /// Newest workspace first.
    pub groups: Vec<WorkspaceGroup>,
    /// With `q`: every matching file, flat.
    pub hits: Option<Vec<Tile>>,
    /// Pass as `cursor` for the next workspaces; null on the last page.
    pub next_cursor: Option<String>,
    /// With `q`, `who` or `type`: what the filter read and found; null without one.
    pub reach: Option<Reach>,
    /// What this answer asked of sandbox hosts.
    pub cost: Cost,
}

/// What a filter (`q`, `who`, `type`) covers: every workspace the caller may see, the most
/// recently changed first, up to 500; and what it found there.
#[derive(Debug, Clone, Default, Serialize, utoipa::ToSchema)]
pub struct Reach {
    /// Workspaces whose files were read (all the caller may see, up to 500).
    pub searched: u64,
    /// Workspaces the caller may see.
    pub visible: u64,
    /// Files that pass the filter, in every workspace read.
    pub files: u64,
    /// Workspaces holding at least one of them (the others' groups are left out).
    pub workspaces: u64,
    /// With `q`: hits listed in `hits` (at most 200, in the chosen order).
    pub hits_shown: u64,
}

impl Reach {
    /// Fewer workspaces were read than the caller may see (the 500 cap).
    pub fn is_cut(&self) -> bool {
        self.searched < self.visible
    }
}

/// One node of a workspace's tree (folders first, then by name), in drawing order.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct TreeNode {
    /// Workspace-relative.
    pub path: String,
    /// The last part of the path.
    pub name: String,
    /// 0 at the top level.
    pub depth: u32,
    /// A folder (true) or a file.
    pub is_dir: bool,
    /// A folder's files, all levels below it; 1 for a file.
    pub file_count: u64,
    /// Bytes (a folder's: its files together).
    pub size: u64,
    /// A file's last change: an ISO-8601 UTC date and time (to fractions of seconds); null for
    /// folders and `state` files.
    pub modified_at: Option<String>,
    /// A file's kind (`image`, `pdf`, `text`, `other`); null for folders.
    pub kind: Option<FileKind>,
    /// `person` under `uploads/`, else `agent`.
    pub added_by: AddedBy,
    /// For a file attached through the console: the person who attached it (their e-mail), while
    /// they are a member of the organization; null otherwise.
    pub added_by_name: Option<String>,
}

impl TreeNode {
    /// Who put it there, in words, naming the person who attached it when known.
    pub fn added_by_words(&self) -> String {
        added_by_words(self.added_by, self.added_by_name.as_deref())
    }
}

/// `GET /api/v1/documents/workspaces/{id}`.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct WorkspaceDocuments {
    /// The workspace and how it is shown.
    pub workspace: WorkspaceSummary,
    /// Its folders and files in drawing order (excluded items left out).
    pub tree: Vec<TreeNode>,
    /// Files listed.
    pub file_count: u64,
    /// Their bytes together.
    pub size: u64,
    /// Whether every file is listed, and if not why.
    pub listing: ListingStatus,
    /// The newest files as tiles.
    pub tiles: Vec<Tile>,
    /// What this answer asked of sandbox hosts.
    pub cost: Cost,
}
