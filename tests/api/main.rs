//! The one integration-test binary: drives the real HTTP surface on SQLite and PostgreSQL.

mod browser;
mod helpers;

mod account;
mod accounts;
mod agents_pages;
mod api_tokens;
mod architecture;
mod audit_log;
mod browser_accounts;
mod browser_flows;
mod catalog_files;
mod cli;
mod cli_sandbox;
mod csrf;
mod edge;
mod forms;
mod health;
mod invitations;
mod isolation;
mod key_binding;
mod members;
mod openapi;
mod peer;
mod rest_client;
mod sandbox_connections;
mod sandbox_policy;
mod sandbox_running;
mod sandboxd_client;
mod templates;
mod validation;
mod vault;
mod workspaces;
mod workspaces_lifecycle;
