//! Fixtures several test files share. The harness they stand on lives beside this folder:
//! `helpers.rs` (an app per test and database, its client, `db_test!`), `peer.rs` (the real
//! sandboxd peer), `browser.rs` (headless Chromium), `s3_server.rs` and the `docker_*` harness.
//!
//! - [`org`]: the `Org` fixture (an organization with an owner's API token, connections, agents,
//!   conversations, runs and their workspaces) and the rows a run recorded.
//! - [`browser_sign_in`]: signing in through the real sign-in page of a browser.
//! - [`connections`]: connection rows no route writes any more (an old database's).
//! - [`console_process`]: a console as its own process (`agenticos serve`) on a test's database.
//! - [`documents`]: what a person sees on Documents.
//! - [`htmx`]: pages as htmx asks for them and reads them.
//! - [`metrics`]: `/metrics` on behind a token, a scrape, and workspace operations to count.
//! - [`recorder`]: a listener that records the requests that reach it.
//! - [`sandbox_hosts`]: a shared peer with small session caps, connections saved through the
//!   service, sessions opened at the host directly.
//! - [`smtp_sink`]: a local SMTP sink that keeps the mail the console sends.
//! - [`source_files`]: the files below a folder of this repository (`src/`, `templates/`, …).
//! - [`two_factor`]: an authenticator app: the codes of a secret, each step used once.
//! - [`tcp_relay`]: a loopback relay in front of the test's PostgreSQL that a test can cut.

pub(crate) mod browser_sign_in;
pub(crate) mod connections;
pub(crate) mod console_process;
pub(crate) mod documents;
pub(crate) mod htmx;
pub(crate) mod metrics;
pub(crate) mod org;
pub(crate) mod recorder;
pub(crate) mod sandbox_hosts;
pub(crate) mod smtp_sink;
pub(crate) mod source_files;
pub(crate) mod tcp_relay;
pub(crate) mod two_factor;

pub(crate) use org::{row, service_agent, urlencode, Org};
