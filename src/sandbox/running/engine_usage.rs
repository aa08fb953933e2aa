//! Live usage from this deployment's Docker engine (docs/operating.md, "The Docker engine"): when the
//! Running tab samples usage, each session container of a host on this machine gets its CPU, and
//! its memory where the host reported none. Bounded (a deadline per container, a few at a time);
//! a container that does not answer keeps "—".

use crate::sandbox::connections::address;
use crate::sandbox::connections::model::Connection;
use crate::sandbox::hosts::sandboxd::client::is_session_id;
use crate::state::AppState;

use super::model::RunningSession;

/// The name sandboxd gives a session's container (`SANDBOXD_PERSIST_CONTAINERS`).
pub fn container_name(session_id: &str) -> String {
    format!("sandboxd-{session_id}")
}

/// Whether the connection's host runs on this machine: one of this deployment's own sandboxd
/// addresses (`SANDBOXD_LOCAL_ADDRESSES`), or a loopback address. Only then are its sessions'
/// containers looked for on the engine.
pub fn is_on_this_machine(st: &AppState, conn: &Connection) -> bool {
    let Some(raw) = conn.address.as_deref() else { return false };
    let raw = raw.trim_end_matches('/');
    if st.config.sandboxd.local_addresses.iter().any(|a| a == raw) {
        return true;
    }
    address::parse(raw).ok().and_then(|u| u.host_str().map(str::to_owned)).is_some_and(|host| {
        host == "localhost"
            || host.trim_matches(['[', ']']).parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
    })
}

/// Fills CPU (and memory where missing) of `sessions` from the engine; nothing without one.
pub async fn fill(st: &AppState, conn: &Connection, sessions: &mut [RunningSession]) {
    let Some(engine) = &st.docker else { return };
    if !is_on_this_machine(st, conn) {
        return;
    }
    let names: Vec<String> =
        sessions.iter().filter(|s| is_session_id(&s.session_id)).map(|s| container_name(&s.session_id)).collect();
    if names.is_empty() {
        return;
    }
    let usage = engine.usage_of_all(names).await;
    for s in sessions {
        let Some(u) = usage.get(&container_name(&s.session_id)) else { continue };
        if s.memory_bytes.is_none() {
            s.memory_bytes = u.memory_bytes;
            s.memory_limit_bytes = u.memory_limit_bytes;
        }
        s.cpu_percent = u.cpu_percent;
    }
}
