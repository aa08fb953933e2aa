//! The runtime catalog against a host's allowlist: what the connection dialog and the policy
//! panel mark each alias with.

pub use super::model::RuntimeMark;
use crate::sandbox::hosts::sandboxd::client::ServicePolicy;
use crate::state::AppState;

impl RuntimeMark {
    /// "offered by this host", "not on this host", "only on this host", or "" before a probe.
    pub fn mark(&self) -> &'static str {
        match (self.in_catalog, self.offered) {
            (_, None) => "",
            (true, Some(true)) => "offered by this host",
            (true, Some(false)) => "not on this host",
            (false, _) => "only on this host",
        }
    }

    /// The badge colour of [`RuntimeMark::mark`].
    pub fn mark_badge(&self) -> &'static str {
        match (self.in_catalog, self.offered) {
            (true, Some(true)) => "badge-green",
            (true, Some(false)) => "badge-red",
            _ => "badge-blue",
        }
    }

    /// "builds on first use" or "ready-made image".
    pub fn builds_words(&self) -> &'static str {
        if self.builds {
            "builds on first use"
        } else {
            "ready-made image"
        }
    }

    /// "base image X" for a runtime that builds, else "image X".
    pub fn image_words(&self) -> String {
        if self.builds {
            format!("base image {}", self.image)
        } else {
            format!("image {}", self.image)
        }
    }
}

/// The catalog's aliases, unmarked: what the dialog offers before any host is asked.
pub fn catalog_marks(st: &AppState) -> Vec<RuntimeMark> {
    st.catalog
        .entries()
        .iter()
        .map(|e| RuntimeMark {
            alias: e.alias.clone(),
            description: e.description.clone(),
            image: e.image_label().to_string(),
            builds: e.builds(),
            in_catalog: true,
            offered: None,
        })
        .collect()
}

/// The catalog marked against a host's allowlist, the host's own extra aliases appended.
pub fn marks_against(st: &AppState, policy: &ServicePolicy) -> Vec<RuntimeMark> {
    let offered: Vec<&str> = policy.runtimes.iter().map(|r| r.alias.as_str()).collect();
    let mut marks: Vec<RuntimeMark> = catalog_marks(st)
        .into_iter()
        .map(|mut m| {
            m.offered = Some(offered.contains(&m.alias.as_str()));
            m
        })
        .collect();
    for r in &policy.runtimes {
        if st.catalog.get(&r.alias).is_none() {
            marks.push(RuntimeMark {
                alias: r.alias.clone(),
                description: r.description.clone(),
                image: r.image.clone(),
                builds: r.builds,
                in_catalog: false,
                offered: Some(true),
            });
        }
    }
    marks
}
