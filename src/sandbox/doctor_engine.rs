//! `agenticos doctor`'s engine section (docs/operating.md, "The Docker engine"): each sandboxd container the
//! Docker engine runs, its image tag against `catalog/sandboxd.version` (a drifted tag is a
//! problem), its restarts and its health. Only the engine is asked; no container is.

use std::fmt::Write as _;

use crate::docker::doctor::ContainerView;
use crate::state::AppState;

/// What the engine showed, or why it could not be read.
#[derive(Debug, Clone)]
pub enum EngineSection {
    Read(Vec<ContainerView>),
    Unreadable(String),
}

impl EngineSection {
    /// The section, or none when this deployment reads no engine.
    pub async fn of(st: &AppState) -> Option<EngineSection> {
        let engine = st.docker.as_ref()?;
        Some(match engine.sandboxd_views(&st.config.docker.sandboxd_image, &st.sandboxd_version).await {
            Ok(views) => EngineSection::Read(views),
            Err(e) => EngineSection::Unreadable(e.to_string()),
        })
    }

    /// Whether nothing in it is a problem (an engine that does not answer is one).
    pub fn is_healthy(&self) -> bool {
        match self {
            EngineSection::Read(views) => !views.iter().any(ContainerView::is_problem),
            EngineSection::Unreadable(_) => false,
        }
    }

    /// The section's lines, after the connections.
    pub fn render(&self, image_name: &str, pin: &str) -> String {
        let mut out = format!("Docker engine: sandboxd containers ({image_name}, pinned {pin})\n");
        match self {
            EngineSection::Unreadable(why) => {
                let _ = writeln!(out, "  ✗ {why}");
            }
            EngineSection::Read(views) if views.is_empty() => {
                out.push_str("  - the engine runs no container of this image\n")
            }
            EngineSection::Read(views) => {
                for v in views {
                    out.push_str(&v.render());
                }
                let drifted = views.iter().filter(|v| v.is_problem()).count();
                let _ = writeln!(
                    out,
                    "  {}: {} fine, {drifted} with a problem",
                    crate::words::count(views.len(), "container", "containers"),
                    views.len() - drifted
                );
            }
        }
        out
    }
}
