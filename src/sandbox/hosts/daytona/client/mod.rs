//! The Daytona client: the only code in the product that talks to Daytona (its main API and each
//! sandbox's toolbox). What the API does is in `docs/daytona.md`; its documents are vendored in
//! `tests/peer/daytona/specs/` (`api.json`, `toolbox.json`).
//!
//! Rules this module keeps:
//!
//! - The key travels only as `Authorization: Bearer <key>` (marked sensitive), and only to the
//!   configured API URL and to a sandbox's `toolboxProxyUrl` exactly as the API returned it; a
//!   `toolboxProxyUrl` on another scheme than the API's (or with user info) is refused
//!   ([`DaytonaError::ToolboxRefused`]). No redirect is ever followed: one is an error.
//! - Error messages never name an address or the key: members and the model may read them.
//! - Error bodies are optional: the status decides, the body only adds Daytona's words.

mod admin;
mod bulk;
mod error;
mod exec_output;
mod http;
pub mod labels;
mod multipart;
mod multipart_read;
mod sandboxes;
mod toolbox;
mod wire;

pub use admin::DaytonaConfig;
pub use bulk::{Fetched, BULK_BYTES, BULK_FILES, BULK_IN_FLIGHT};
pub use error::{DaytonaError, Side};
pub use http::{DaytonaClient, Timeouts, DEFAULT_API_URL};
pub use sandboxes::LIST_PAGE;
pub use toolbox::{sh_command, shell_quote, Toolbox};
pub use wire::*;
