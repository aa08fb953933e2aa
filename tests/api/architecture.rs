//! The layers of `src/` point one way (README.md, Architecture; docs/architecture.md). This reads the sources as text,
//! builds the graph of which file imports which (following `pub use` re-exports to the file that
//! defines a name), and fails naming the offending files when a rule is broken.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// One source file: its module path (`sandbox::workspaces::service`) and text.
struct Source {
    module: String,
    file: String,
    text: String,
}

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir).expect("read src").flatten().map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            collect(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

fn module_of(rel: &str) -> String {
    let mut parts: Vec<&str> = rel.trim_end_matches(".rs").split('/').collect();
    if parts.last() == Some(&"mod") {
        parts.pop();
    }
    if parts == ["lib"] || parts == ["main"] {
        return String::new();
    }
    parts.join("::")
}

/// The text without comments, string contents and `#[cfg(test)]` modules (their `super::` is
/// one level deeper, and tests may reach anywhere).
fn code_of(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(i) => &text[..i],
        None => text,
    };
    let mut out = String::with_capacity(text.len());
    let b: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < b.len() {
        if b[i] == '/' && b.get(i + 1) == Some(&'/') {
            while i < b.len() && b[i] != '\n' {
                i += 1;
            }
        } else if b[i] == '/' && b.get(i + 1) == Some(&'*') {
            i += 2;
            while i + 1 < b.len() && !(b[i] == '*' && b[i + 1] == '/') {
                i += 1;
            }
            i += 2;
        } else if b[i] == '"' {
            out.push('"');
            i += 1;
            while i < b.len() && b[i] != '"' {
                if b[i] == '\\' {
                    i += 1;
                }
                i += 1;
            }
            out.push('"');
            i += 1;
        } else if b[i] == '\'' && b.get(i + 2) == Some(&'\'') {
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    out
}

/// Expands a use tree (`a::{b, c::{d, e}}`) into its full paths.
fn expand(tree: &str) -> Vec<String> {
    let tree: String = tree.replace(" as ", "@").chars().filter(|c| !c.is_whitespace()).collect();
    let Some(open) = tree.find('{') else {
        return vec![tree.split('@').next().unwrap_or_default().to_string()];
    };
    let prefix = &tree[..open];
    let inner = &tree[open + 1..tree.len().saturating_sub(1)];
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&inner[start..]);
    parts
        .into_iter()
        .filter(|p| !p.is_empty())
        .flat_map(|p| {
            expand(p).into_iter().map(|s| {
                if s == "self" {
                    prefix.trim_end_matches("::").to_string()
                } else {
                    format!("{prefix}{s}")
                }
            })
        })
        .collect()
}

struct Graph {
    modules: BTreeSet<String>,
    /// `pub use` re-exports: (module, name) → the module the name comes from.
    reexports: BTreeMap<(String, String), String>,
    edges: BTreeMap<String, BTreeSet<String>>,
    files: BTreeMap<String, String>,
}

/// Paths a file names: its `use` trees and every inline `crate::…`/`super::…` path.
fn paths_in(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find("use ") {
        let before = rest[..i].chars().last();
        let after = &rest[i + 4..];
        rest = after;
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let Some(end) = after.find(';') else { break };
        let tree = &after[..end];
        if tree.contains('\n') && !tree.contains('{') {
            continue;
        }
        for p in expand(tree) {
            out.push(p);
        }
    }
    let text = code;
    for start in ["crate::", "super::"] {
        let mut from = 0;
        while let Some(i) = text[from..].find(start) {
            let at = from + i;
            from = at + start.len();
            let prev = text[..at].chars().last();
            if prev.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let path: String =
                text[at..].chars().take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':').collect();
            // `crate::a::{b, c}` is a use tree: its expansion above already counted it.
            if text[at + path.len()..].starts_with('{') {
                continue;
            }
            out.push(path.trim_end_matches(':').to_string());
        }
    }
    out
}

fn absolute(module: &str, path: &str, modules: &BTreeSet<String>) -> Option<String> {
    let mut segs: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
    let mut base: Vec<String> = if module.is_empty() { vec![] } else { module.split("::").map(String::from).collect() };
    // A file `a/b.rs` is module `a::b`; its `super` is `a`. A `mod.rs` is its folder's module.
    match segs.first().copied() {
        Some("crate") | Some("$crate") => {
            segs.remove(0);
            base.clear();
        }
        Some("super") => {
            while segs.first() == Some(&"super") {
                segs.remove(0);
                base.pop();
            }
        }
        Some("self") => {
            segs.remove(0);
        }
        Some(first) => {
            // `use child::X` inside a module names its child module; anything else is external.
            let child = if module.is_empty() { first.to_string() } else { format!("{module}::{first}") };
            if !modules.contains(&child) {
                return None;
            }
        }
        None => return None,
    }
    base.extend(segs.into_iter().map(String::from));
    Some(base.join("::"))
}

impl Graph {
    fn build() -> Graph {
        let root = src_dir();
        let mut paths = Vec::new();
        collect(&root, &mut paths);
        let sources: Vec<Source> = paths
            .iter()
            .map(|p| {
                let rel = p.strip_prefix(&root).expect("under src").to_string_lossy().replace('\\', "/");
                Source {
                    module: module_of(&rel),
                    file: format!("src/{rel}"),
                    text: std::fs::read_to_string(p).expect("read"),
                }
            })
            .collect();
        let modules: BTreeSet<String> = sources.iter().map(|s| s.module.clone()).collect();
        let files = sources.iter().map(|s| (s.module.clone(), s.file.clone())).collect();
        let mut g = Graph { modules, reexports: BTreeMap::new(), edges: BTreeMap::new(), files };
        let parsed: Vec<(String, Vec<String>, String)> = sources
            .iter()
            .map(|s| {
                let code = code_of(&s.text);
                (s.module.clone(), paths_in(&code), code)
            })
            .collect();
        // Re-exports first: `pub use x::Name;` makes `module::Name` point at x's module.
        for (module, _, code) in &parsed {
            for line in code.split(';') {
                let t = line.trim();
                let Some(tree) = t.strip_prefix("pub use ") else { continue };
                for p in expand(tree) {
                    let Some(abs) = absolute(module, &p, &g.modules) else { continue };
                    let name = abs.rsplit("::").next().unwrap_or_default().to_string();
                    if let Some(target) = g.owner(&abs) {
                        g.reexports.insert((module.clone(), name), target);
                    }
                }
            }
        }
        for (module, found, _) in &parsed {
            let mut deps = BTreeSet::new();
            for p in found {
                let Some(abs) = absolute(module, p, &g.modules) else { continue };
                if let Some(target) = g.resolve(&abs) {
                    if &target != module && !target.is_empty() {
                        deps.insert(target);
                    }
                }
            }
            g.edges.insert(module.clone(), deps);
        }
        g
    }

    /// The longest module prefix of an absolute path.
    fn owner(&self, abs: &str) -> Option<String> {
        let segs: Vec<&str> = abs.split("::").collect();
        (1..=segs.len()).rev().map(|n| segs[..n].join("::")).find(|m| self.modules.contains(m))
    }

    /// The module that defines what `abs` names, following re-exports.
    fn resolve(&self, abs: &str) -> Option<String> {
        let owner = self.owner(abs)?;
        let rest = abs[owner.len()..].trim_start_matches("::");
        let name = rest.split("::").next().unwrap_or_default();
        match self.reexports.get(&(owner.clone(), name.to_string())) {
            Some(target) if target != &owner => Some(target.clone()),
            _ => Some(owner),
        }
    }

    fn file(&self, module: &str) -> String {
        self.files.get(module).cloned().unwrap_or_else(|| module.to_string())
    }

    /// Strongly connected components with more than one module (Tarjan).
    fn loops(&self) -> Vec<Vec<String>> {
        struct T<'a> {
            g: &'a Graph,
            index: BTreeMap<String, usize>,
            low: BTreeMap<String, usize>,
            stack: Vec<String>,
            on: BTreeSet<String>,
            next: usize,
            out: Vec<Vec<String>>,
        }
        fn visit(t: &mut T, v: &str) {
            t.index.insert(v.to_string(), t.next);
            t.low.insert(v.to_string(), t.next);
            t.next += 1;
            t.stack.push(v.to_string());
            t.on.insert(v.to_string());
            let deps: Vec<String> = t.g.edges.get(v).map(|d| d.iter().cloned().collect()).unwrap_or_default();
            for w in deps {
                if !t.index.contains_key(&w) {
                    visit(t, &w);
                    let lw = t.low[&w];
                    let lv = t.low[v];
                    t.low.insert(v.to_string(), lv.min(lw));
                } else if t.on.contains(&w) {
                    let iw = t.index[&w];
                    let lv = t.low[v];
                    t.low.insert(v.to_string(), lv.min(iw));
                }
            }
            if t.low[v] == t.index[v] {
                let mut comp = Vec::new();
                while let Some(w) = t.stack.pop() {
                    t.on.remove(&w);
                    let done = w == v;
                    comp.push(w);
                    if done {
                        break;
                    }
                }
                if comp.len() > 1 {
                    comp.sort();
                    t.out.push(comp);
                }
            }
        }
        let mut t = T {
            g: self,
            index: BTreeMap::new(),
            low: BTreeMap::new(),
            stack: Vec::new(),
            on: BTreeSet::new(),
            next: 0,
            out: Vec::new(),
        };
        for m in self.edges.keys() {
            if !t.index.contains_key(m) {
                visit(&mut t, m);
            }
        }
        t.out
    }
}

fn is_capability_store_or_service(module: &str) -> bool {
    module.ends_with("::service") || module.ends_with("::store")
}

/// The capability a module belongs to: `sandbox::workspaces::store` → `sandbox::workspaces`.
fn capability(module: &str) -> String {
    let segs: Vec<&str> = module.split("::").collect();
    let n = if segs.first() == Some(&"sandbox") { 2 } else { 1 };
    segs[..n.min(segs.len())].join("::")
}

#[test]
fn only_the_entry_points_import_startup() {
    let g = Graph::build();
    let offenders: Vec<String> = g
        .edges
        .iter()
        .filter(|(m, deps)| !matches!(m.as_str(), "startup" | "cli" | "") && deps.contains("startup"))
        .map(|(m, _)| g.file(m))
        .collect();
    assert!(offenders.is_empty(), "these files import crate::startup: {offenders:?}");
}

#[test]
fn services_and_stores_import_no_web_module_and_no_other_capabilitys_store() {
    let g = Graph::build();
    let mut offenders = Vec::new();
    for (m, deps) in &g.edges {
        for d in deps {
            if is_capability_store_or_service(m) && (d == "web" || d.starts_with("web::")) {
                offenders.push(format!("{} imports {}", g.file(m), g.file(d)));
            }
            // No file of one capability (pages, API, service, store) reaches into another's SQL.
            if d.ends_with("::store") && capability(d) != capability(m) {
                offenders.push(format!("{} reaches into {}", g.file(m), g.file(d)));
            }
        }
    }
    assert!(offenders.is_empty(), "layering broken:\n{}", offenders.join("\n"));
}

#[test]
fn the_low_layers_import_no_pages_api_service_or_web_module() {
    let g = Graph::build();
    let mut offenders = Vec::new();
    for low in ["state", "access", "config", "db"] {
        for d in g.edges.get(low).into_iter().flatten() {
            let last = d.rsplit("::").next().unwrap_or_default();
            if d == "web"
                || d.starts_with("web::")
                || matches!(last, "pages" | "api" | "service")
                || d.contains("::pages::")
            {
                offenders.push(format!("{} imports {}", g.file(low), g.file(d)));
            }
        }
    }
    assert!(offenders.is_empty(), "{}", offenders.join("\n"));
}

#[test]
fn the_import_graph_has_no_loop_of_more_than_two_files() {
    let g = Graph::build();
    let big: Vec<Vec<String>> =
        g.loops().into_iter().filter(|c| c.len() > 2).map(|c| c.iter().map(|m| g.file(m)).collect()).collect();
    assert!(big.is_empty(), "import loops: {big:#?}");
}

#[test]
fn the_graph_reader_sees_the_imports_it_checks() {
    // The checks above pass trivially if the reader finds nothing: prove it finds known edges.
    let g = Graph::build();
    let deps = |m: &str| g.edges.get(m).cloned().unwrap_or_default();
    assert!(deps("startup").contains("state"), "startup → state: {:?}", deps("startup"));
    assert!(deps("state").contains("config"), "state → config: {:?}", deps("state"));
    assert!(deps("web::guard").contains("access"), "web::guard → access: {:?}", deps("web::guard"));
    assert!(g.loops().iter().all(|c| c.len() >= 2));
    assert_eq!(
        expand("crate::a::{b, c::{d, e as f}, self}"),
        vec!["crate::a::b", "crate::a::c::d", "crate::a::c::e", "crate::a"]
    );
}
