//! The layers of `src/` point one way (README.md, Architecture; docs/architecture.md). This reads the sources as text,
//! builds the graph of which file imports which (following `pub use` re-exports to the file that
//! defines a name, and `super::` inside an inline `mod name { … }` to the right module), and fails
//! naming the offending files when a rule is broken. The last test proves each rule fails on the
//! shapes it forbids.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// One source file: its module path (`sandbox::workspaces::service`) and text.
struct Source {
    module: String,
    file: String,
    text: String,
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

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The text without comments, string contents (raw strings included) and `#[cfg(test)] mod tests`
/// at a file's end (its `super::` is one level deeper, and tests may reach anywhere).
/// A file's text before its `#[cfg(test)] mod tests`.
fn without_tests(text: &str) -> &str {
    match text.find("#[cfg(test)]\nmod tests") {
        Some(i) => &text[..i],
        None => text,
    }
}

fn code_of(text: &str) -> String {
    let text = without_tests(text);
    let mut out = String::with_capacity(text.len());
    let b: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < b.len() {
        let prev = if i > 0 { Some(b[i - 1]) } else { None };
        // `r"…"`, `r#"…"#`, `br#"…"#`: up to the same number of `#` after a quote.
        let raw_start =
            b[i] == 'r' && (prev.is_none_or(|c| !is_ident(c)) || (prev == Some('b') && (i < 2 || !is_ident(b[i - 2]))));
        if raw_start {
            let mut j = i + 1;
            while b.get(j) == Some(&'#') {
                j += 1;
            }
            if b.get(j) == Some(&'"') {
                let hashes = j - i - 1;
                let mut k = j + 1;
                while k < b.len() && !(b[k] == '"' && (1..=hashes).all(|h| b.get(k + h) == Some(&'#'))) {
                    k += 1;
                }
                out.push_str("\"\"");
                i = k + 1 + hashes;
                continue;
            }
        }
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

/// The inline modules of a file's code (`mod lean { … }`): the byte range of each body, and
/// whether it is `#[cfg(test)]`.
fn inline_modules(code: &str) -> Vec<(usize, usize, bool)> {
    let mut out = Vec::new();
    // For each open brace: where it opened and, for a module's, whether it is a test module.
    let mut open: Vec<(usize, Option<bool>)> = Vec::new();
    for (i, c) in code.char_indices() {
        match c {
            '{' => {
                let before = code[..i].trim_end();
                let name_len = before.chars().rev().take_while(|c| is_ident(*c)).map(char::len_utf8).sum::<usize>();
                let rest = before[..before.len() - name_len].trim_end();
                let is_mod = name_len > 0
                    && rest.ends_with("mod")
                    && rest[..rest.len() - 3].chars().last().is_none_or(|c| !is_ident(c));
                let is_test = is_mod && {
                    // The item's attributes and visibility: back to the previous item's end.
                    let head = &rest[..rest.len() - 3];
                    let start = head.rfind([';', '{', '}']).map_or(0, |p| p + 1);
                    head[start..].contains("#[cfg(test)]")
                };
                open.push((i, is_mod.then_some(is_test)));
            }
            '}' => {
                if let Some((start, Some(is_test))) = open.pop() {
                    out.push((start, i, is_test));
                }
            }
            _ => {}
        }
    }
    out
}

/// A path as the file's own module reads it, given how many inline modules enclose it; none when
/// it names something inside the file itself, or outside the crate.
fn from_file_module(path: &str, depth: usize) -> Option<String> {
    if depth == 0 {
        return Some(path.to_string());
    }
    let segs: Vec<&str> = path.split("::").collect();
    match segs.first().copied() {
        Some("crate") | Some("$crate") => Some(path.to_string()),
        Some("super") => {
            let supers = segs.iter().take_while(|s| **s == "super").count();
            if supers < depth {
                return None;
            }
            let rest = &segs[depth..];
            Some(if supers == depth { format!("self::{}", rest.join("::")) } else { rest.join("::") })
        }
        // `self::…` and a bare name inside an inline module: the module itself, or another crate.
        _ => None,
    }
}

/// Paths a file names: its `use` trees and every inline `crate::…`/`super::…` path, each as the
/// file's module reads it (inside `mod x { … }`, `super::` is the file itself). Nothing inside a
/// `#[cfg(test)]` module.
fn paths_in(code: &str) -> Vec<String> {
    let mods = inline_modules(code);
    let at = |offset: usize| -> Option<usize> {
        let enclosing: Vec<_> = mods.iter().filter(|(s, e, _)| *s < offset && offset < *e).collect();
        if enclosing.iter().any(|(_, _, is_test)| *is_test) {
            return None;
        }
        Some(enclosing.len())
    };
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(i) = code[from..].find("use ") {
        let at_use = from + i;
        from = at_use + 4;
        let before = code[..at_use].chars().last();
        if before.is_some_and(is_ident) {
            continue;
        }
        let after = &code[at_use + 4..];
        let Some(end) = after.find(';') else { break };
        let tree = &after[..end];
        if tree.contains('\n') && !tree.contains('{') {
            continue;
        }
        let Some(depth) = at(at_use) else { continue };
        out.extend(expand(tree).iter().filter_map(|p| from_file_module(p, depth)));
    }
    for start in ["crate::", "super::"] {
        let mut from = 0;
        while let Some(i) = code[from..].find(start) {
            let at_path = from + i;
            from = at_path + start.len();
            let prev = code[..at_path].chars().last();
            // `pub(in crate::a)` names where an item is seen, not what it uses.
            if prev.is_some_and(|c| is_ident(c) || c == ':') || code[..at_path].trim_end().ends_with("(in") {
                continue;
            }
            let path: String = code[at_path..].chars().take_while(|c| is_ident(*c) || *c == ':').collect();
            // `crate::a::{b, c}` is a use tree: its expansion above already counted it.
            if code[at_path + path.len()..].starts_with('{') {
                continue;
            }
            let Some(depth) = at(at_path) else { continue };
            out.extend(from_file_module(path.trim_end_matches(':'), depth));
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

struct Graph {
    modules: BTreeSet<String>,
    /// `pub use` re-exports: (module, name) → the module the name comes from.
    reexports: BTreeMap<(String, String), String>,
    edges: BTreeMap<String, BTreeSet<String>>,
    files: BTreeMap<String, String>,
    /// Each module's code (comments and string contents left out), for the rules on text.
    code: BTreeMap<String, String>,
    /// The `mod.rs` files that register a capability's routes (`web::ServiceConfig`).
    routes: BTreeSet<String>,
    /// Each module's text as written (strings kept), its test module left out.
    raw: BTreeMap<String, String>,
}

impl Graph {
    fn build() -> Graph {
        let root = crate::support::source_files::repo_root().join("src");
        let paths = crate::support::source_files::source_files();
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
        Graph::of(sources)
    }

    /// A graph of files given as (path under `src/`, text): the rules' own test.
    fn of_files(files: &[(&str, &str)]) -> Graph {
        Graph::of(
            files
                .iter()
                .map(|(rel, text)| Source {
                    module: module_of(rel),
                    file: format!("src/{rel}"),
                    text: text.to_string(),
                })
                .collect(),
        )
    }

    fn of(sources: Vec<Source>) -> Graph {
        let modules: BTreeSet<String> = sources.iter().map(|s| s.module.clone()).collect();
        let files = sources.iter().map(|s| (s.module.clone(), s.file.clone())).collect();
        let mut g = Graph {
            modules,
            reexports: BTreeMap::new(),
            edges: BTreeMap::new(),
            files,
            code: BTreeMap::new(),
            routes: BTreeSet::new(),
            raw: sources.iter().map(|s| (s.module.clone(), without_tests(&s.text).to_string())).collect(),
        };
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
        for (module, found, code) in &parsed {
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
            let file = g.file(module);
            if file.ends_with("/mod.rs") && code.contains("ServiceConfig") {
                g.routes.insert(module.clone());
            }
            g.code.insert(module.clone(), code.clone());
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

    fn deps(&self, module: &str) -> BTreeSet<String> {
        self.edges.get(module).cloned().unwrap_or_default()
    }

    /// Strongly connected components with more than one module (Tarjan): every import loop.
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
        t.out.sort();
        t.out
    }

    /// The HTTP layer (docs/architecture.md, "The layers"): `web/`, the entry points (`main.rs`,
    /// `lib.rs`, `startup.rs`, `cli.rs`, the top-level `api.rs`), every `pages` and `api` module
    /// (and `*_api`, and what sits under a `pages/` folder), and a capability's `mod.rs` that
    /// registers its routes. Everything else is the service layer or below it.
    fn is_http(&self, module: &str) -> bool {
        let segs: Vec<&str> = module.split("::").collect();
        let last = segs.last().copied().unwrap_or_default();
        is_web(module)
            || matches!(module, "" | "startup" | "cli" | "api")
            || matches!(last, "pages" | "api")
            || last.ends_with("_api")
            || segs[..segs.len() - 1].contains(&"pages")
            || self.routes.contains(module)
    }

    /// The files below the HTTP layer that reach it, directly or through other files: each with
    /// the shortest chain of imports that does.
    fn reaching_the_http_layer(&self) -> Vec<String> {
        let mut out = Vec::new();
        for m in self.edges.keys().filter(|m| !self.is_http(m)) {
            let mut came_from: BTreeMap<String, String> = BTreeMap::new();
            let mut queue = VecDeque::from([m.clone()]);
            let mut hit = None;
            while let Some(v) = queue.pop_front() {
                if self.is_http(&v) {
                    hit = Some(v);
                    break;
                }
                for w in self.deps(&v) {
                    if w != *m && !came_from.contains_key(&w) {
                        came_from.insert(w.clone(), v.clone());
                        queue.push_back(w);
                    }
                }
            }
            if let Some(mut v) = hit {
                let mut chain = vec![self.file(&v)];
                while let Some(prev) = came_from.get(&v) {
                    chain.push(self.file(prev));
                    v = prev.clone();
                }
                chain.reverse();
                out.push(chain.join(" → "));
            }
        }
        out
    }

    /// Files that import another capability's SQL (`store.rs`, `*_store.rs`).
    fn reaching_into_another_store(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (m, deps) in &self.edges {
            for d in deps.iter().filter(|d| is_store(d) && capability(d) != capability(m)) {
                out.push(format!("{} reaches into {}", self.file(m), self.file(d)));
            }
        }
        out
    }

    /// Modules of `agents` below its pages that import `sandbox::workspaces` (which sits above
    /// agents: the workspaces service calls the agents services, never the reverse).
    fn agents_reaching_up_into_workspaces(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (m, deps) in self.edges.iter().filter(|(m, _)| in_folder(m, "agents") && !self.is_http(m)) {
            for d in deps.iter().filter(|d| in_folder(d, "sandbox::workspaces")) {
                out.push(format!("{} imports {}", self.file(m), self.file(d)));
            }
        }
        out
    }

    /// Vocabulary modules that import anything of the crate outside `vocabulary`.
    fn vocabulary_reaching_out(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (m, deps) in self.edges.iter().filter(|(m, _)| in_folder(m, "vocabulary")) {
            for d in deps.iter().filter(|d| !in_folder(d, "vocabulary")) {
                out.push(format!("{} imports {}", self.file(m), self.file(d)));
            }
        }
        out
    }

    /// Files other than stores (and `db.rs`, which owns the pool) that run SQL.
    fn sql_outside_stores(&self) -> Vec<String> {
        let markers = ["sqlx::query", "sqlx::raw_sql", "query_as::<", "query_scalar::<"];
        self.code
            .iter()
            .filter(|(m, code)| !is_store(m) && m.as_str() != "db" && markers.iter().any(|s| code.contains(s)))
            .map(|(m, _)| self.file(m))
            .collect()
    }

    /// Files outside the seam of host kinds (`sandbox/hosts/`) that decide by a kind without
    /// naming every kind (issue 48): a `matches!` or `if let` on `ConnectionKind::`, a comparison
    /// with one, or a `match` whose arms name one and end in `_ =>`. A new kind compiles past
    /// each of those and silently takes a branch; an exhaustive `match` (or a question the seam
    /// answers) stops the compiler instead.
    fn deciding_by_kind_outside_the_seam(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (m, code) in &self.code {
            if in_folder(m, "sandbox::hosts") {
                continue;
            }
            let partial =
                ["matches!", "if let", "let Some(ConnectionKind", "== ConnectionKind::", "!= ConnectionKind::"]
                    .iter()
                    .any(|marker| {
                        code.match_indices(marker).any(|(i, _)| {
                            let rest = &code[i..];
                            let stmt = &rest[..rest.find(['{', ';']).unwrap_or(rest.len())];
                            stmt.contains("ConnectionKind::")
                        })
                    });
            if partial || code.match_indices("match ").any(|(i, _)| match_falls_through_on_a_kind(&code[i..])) {
                out.push(self.file(m));
            }
        }
        out
    }

    /// Files outside the seam that name a kind (`ConnectionKind::Sandboxd`, `::Daytona`) in a
    /// `match` arm's pattern or a comparison: the seam decides by kind, the capabilities call it
    /// (issue 48). Naming a kind as a value (the local token is sandboxd's) is not deciding.
    fn naming_a_kind_in_an_arm_outside_the_seam(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (m, code) in &self.code {
            if in_folder(m, "sandbox::hosts") {
                continue;
            }
            let arm = ["ConnectionKind::Sandboxd", "ConnectionKind::Daytona"].iter().any(|kind| {
                code.match_indices(kind).any(|(i, _)| {
                    let after = code[i + kind.len()..].trim_start_matches([')', ' ', '\n']);
                    let before = code[..i].trim_end_matches(['(', ' ', '\n']);
                    after.starts_with("=>")
                        || after.starts_with('|')
                        || after.starts_with("==")
                        || after.starts_with("!=")
                        || before.ends_with('|')
                        || before.ends_with("==")
                        || before.ends_with("!=")
                })
            });
            if arm {
                out.push(self.file(m));
            }
        }
        out
    }

    /// `file imports file` for each kind folder of `sandbox/hosts/` that imports another kind's
    /// folder: each kind's code stands on its own, what two kinds share lives below them.
    fn kind_folders_importing_each_other(&self) -> Vec<String> {
        let folder = |m: &str| KIND_FOLDERS.iter().find(|k| in_folder(m, &format!("sandbox::hosts::{k}"))).copied();
        let mut out = Vec::new();
        for m in self.code.keys() {
            let Some(own) = folder(m) else { continue };
            for d in self.deps(m) {
                if folder(&d).is_some_and(|other| other != own) {
                    out.push(format!("{} imports {}", self.file(m), self.file(&d)));
                }
            }
        }
        out
    }

    /// Files that name another kind's client error, or any kind's where every kind meets: Daytona's
    /// code (a module named for it) never names `SandboxdError`, sandboxd's (`sandbox/hosts/sandboxd/`, a
    /// module named for it) never `DaytonaError`, and the recorder, the workspace's error and
    /// backend, the error table and the seam name neither (they decide on
    /// `hosts::error::HostError`). Connections', Running's and Documents' errors hold the neutral
    /// error too; each keeps a `From<SandboxdError>` for sandboxd-only callers' `?`.
    fn naming_another_kinds_error(&self) -> Vec<String> {
        let shared = [
            "sandbox::hosts::kind",
            "sandbox::hosts::error",
            "sandbox::hosts::state",
            "sandbox::workspaces::recorded",
            "sandbox::workspaces::error",
            "sandbox::workspaces::backend",
            "web::error",
            "web::error_cases",
        ];
        let mut out = Vec::new();
        for (m, code) in &self.code {
            let is_shared = shared.iter().any(|s| m == s || in_folder(m, s)) || m == "sandbox::hosts";
            let daytona = m.contains("daytona");
            let sandboxd = m.contains("sandboxd");
            let sandboxd_error = |c: &str| {
                c.match_indices("SandboxdError").any(|(i, _)| !c[i + 13..].starts_with(|c: char| c.is_alphanumeric()))
            };
            if ((daytona || is_shared) && sandboxd_error(code))
                || ((sandboxd || is_shared) && code.contains("DaytonaError"))
            {
                out.push(self.file(m));
            }
        }
        out
    }

    /// Files outside the seam that spell where a workspace lives themselves: a `Carrier` of their
    /// own, or a workspace's `backend` compared with a host kind's word (`"sandboxd"`,
    /// `'daytona'`, …) instead of asking `hosts::kind::Placement`.
    fn spelling_a_placement_outside_the_seam(&self) -> Vec<String> {
        let words = ["\"sandboxd\"", "\"daytona\"", "'sandboxd'", "'daytona'"];
        let mut out = Vec::new();
        for (m, raw) in &self.raw {
            if in_folder(m, "sandbox::hosts") {
                continue;
            }
            let compares = raw.lines().any(|l| l.contains("backend") && words.iter().any(|w| l.contains(w)));
            if compares || raw.contains("enum Carrier") {
                out.push(self.file(m));
            }
        }
        out
    }

    /// HTTP-layer files outside `web/` that choose a sign-in refusal's status (401, 429) or its
    /// `Retry-After` themselves instead of taking them from the table in `web/error.rs`.
    fn choosing_refusal_statuses(&self) -> Vec<String> {
        let markers = ["StatusCode::UNAUTHORIZED", "StatusCode::TOO_MANY_REQUESTS", "RETRY_AFTER"];
        self.code
            .iter()
            .filter(|(m, code)| self.is_http(m) && !is_web(m) && markers.iter().any(|s| code.contains(s)))
            .map(|(m, _)| self.file(m))
            .collect()
    }

    /// `file NAME` of every `static` (a `thread_local!` one too) whose type can change after
    /// start-up (a lock, a cell, an atomic, a lazily set value) and that [`STATICS_ALLOWED`] does
    /// not name: state of that kind belongs to one `AppState`.
    fn statics_holding_state(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (m, code) in &self.code {
            for (name, ty) in statics_in(code) {
                let holds_state = STATE_TYPES.iter().any(|t| ty.contains(t));
                let entry = format!("{} {name}", self.file(m));
                if holds_state && !STATICS_ALLOWED.iter().any(|(file, n, _)| entry == format!("{file} {n}")) {
                    out.push(entry);
                }
            }
        }
        out
    }
}

/// Types a `static` holds state with.
const STATE_TYPES: [&str; 9] =
    ["Mutex", "RwLock", "RefCell", "Cell<", "OnceCell", "OnceLock", "LazyLock", "Atomic", "Notify"];

/// The statics that may hold state, each with why it is the process's and not one console's
/// (docs/architecture.md, "Process-wide statics"). Everything else lives in `AppState`.
const STATICS_ALLOWED: [(&str, &str, &str); 11] = [
    ("src/db.rs", "SQLITE_MIGRATIONS", "the migrations compiled into the binary"),
    ("src/db.rs", "POSTGRES_MIGRATIONS", "the migrations compiled into the binary"),
    ("src/sandbox/log/sqlite_store.rs", "KEPT", "statement strings built once from constants"),
    ("src/sandbox/log/postgres_store.rs", "KEPT", "statement strings built once from constants"),
    ("src/instruments.rs", "HANDLE", "the Prometheus recorder, global by design (`metrics` has one)"),
    ("src/instruments.rs", "SEEN", "the label sets set on that global recorder"),
    ("src/audit/store.rs", "SEQ", "an order within the process, like the clock it starts from"),
    (
        "src/sandbox/hosts/sandboxd/client/mod.rs",
        "THREAD_HTTP",
        "a per-thread HTTP client: connections, no caller's data",
    ),
    (
        "src/sandbox/hosts/sandboxd/client/transport.rs",
        "IDLE",
        "per-thread idle connections by address, no caller's data",
    ),
    (
        "src/sandbox/hosts/sandboxd/client/transport.rs",
        "UNPOOLED",
        "an HTTP client that keeps no connection: its settings only, no caller's data",
    ),
    ("src/web/edge.rs", "SHAPES", "per-thread route patterns by path shape: the binary's route table"),
];

/// `(name, type)` of each `static` item in `code` (not a `'static` lifetime).
fn statics_in(code: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (i, _) in code.match_indices("static ") {
        if code[..i].chars().next_back().is_some_and(|c| is_ident(c) || c == '\'') {
            continue;
        }
        let rest = &code[i + "static ".len()..];
        let rest = rest.strip_prefix("mut ").unwrap_or(rest);
        let Some(colon) = rest.find(':') else { continue };
        let name = rest[..colon].trim();
        if name.is_empty() || !name.chars().all(is_ident) {
            continue;
        }
        let ty = &rest[colon + 1..];
        let end = ty.find(['=', ';']).unwrap_or(ty.len());
        out.push((name.to_string(), ty[..end].trim().to_string()));
    }
    out
}

/// Whether the `match` at the start of `code` has an arm whose pattern names a
/// `ConnectionKind::` and a catch-all arm (`_ =>`, `_ if`): its own arms only, not those of a
/// `match` nested inside a `{ … }` arm body.
fn match_falls_through_on_a_kind(code: &str) -> bool {
    let patterns = arm_patterns(code);
    let names_a_kind = patterns.iter().any(|p| p.contains("ConnectionKind::"));
    let catch_all = patterns.iter().any(|p| p.trim() == "_" || p.trim().starts_with("_ if "));
    names_a_kind && catch_all
}

/// The patterns of the arms of the `match` at the start of `code`: its own arms only, not those
/// of a `match` nested inside a `{ … }` arm body.
fn arm_patterns(code: &str) -> Vec<String> {
    let Some(open) = code.find('{') else { return Vec::new() };
    // The match's arms at its own brace level; `,` between arms only outside parentheses.
    let (mut braces, mut parens) = (0usize, 0usize);
    let mut arms: Vec<String> = vec![String::new()];
    for c in code[open..].chars() {
        match c {
            '{' => braces += 1,
            '}' => {
                braces -= 1;
                if braces == 0 {
                    break;
                }
                if braces == 1 {
                    arms.push(String::new());
                }
                continue;
            }
            '(' | '[' => parens += 1,
            ')' | ']' => parens = parens.saturating_sub(1),
            ',' if braces == 1 && parens == 0 => {
                arms.push(String::new());
                continue;
            }
            _ => {}
        }
        if braces == 1 && c != '{' {
            arms.last_mut().expect("one arm").push(c);
        }
    }
    arms.iter().filter(|a| a.contains("=>")).filter_map(|a| a.split("=>").next()).map(str::to_string).collect()
}

/// `file fn` of each `match` whose arms name a kind (`ConnectionKind::`) or a value a kind made
/// (`StoredFiles::`): the places a new kind stops the compiler, since every such `match` names
/// every kind (the rules above).
fn matches_on_a_kind(g: &Graph) -> Vec<String> {
    let mut out = Vec::new();
    for (m, code) in &g.code {
        for (i, _) in code.match_indices("match ") {
            if code[..i].chars().next_back().is_some_and(is_ident) {
                continue;
            }
            let patterns = arm_patterns(&code[i..]);
            if !patterns.iter().any(|p| p.contains("ConnectionKind::") || p.contains("StoredFiles::")) {
                continue;
            }
            let within = code[..i].rfind("fn ").map_or("", |f| {
                let rest = &code[f + 3..];
                &rest[..rest.find(|c: char| !is_ident(c)).unwrap_or(rest.len())]
            });
            out.push(format!("{} {within}", g.file(m)));
        }
    }
    out
}

/// Every place a kind added to `ConnectionKind` stops the compiler until it is handled: the
/// questions of the seam and one function per capability's decision in `hosts/dispatch/` (the
/// `StoredFiles` reads once `StoredFiles` has the kind's variant). The list `hosts/kind.rs` and
/// docs/developing.md ("Adding a host kind") give.
const PLACES_A_KIND_IS_HANDLED: [&str; 26] = [
    "src/sandbox/hosts/dispatch/connections.rs check_runtime",
    "src/sandbox/hosts/dispatch/connections.rs form_words",
    "src/sandbox/hosts/dispatch/connections.rs probe",
    "src/sandbox/hosts/dispatch/connections.rs probe_saved",
    "src/sandbox/hosts/dispatch/destroy.rs destroy",
    "src/sandbox/hosts/dispatch/doctor.rs checks",
    "src/sandbox/hosts/dispatch/orphans.rs list",
    "src/sandbox/hosts/dispatch/running.rs closing",
    "src/sandbox/hosts/dispatch/running.rs close",
    "src/sandbox/hosts/dispatch/stored_files.rs of",
    "src/sandbox/hosts/dispatch/stored_files.rs listings",
    "src/sandbox/hosts/dispatch/stored_files.rs read_bytes",
    "src/sandbox/hosts/dispatch/stored_files.rs read_text",
    "src/sandbox/hosts/dispatch/stored_files.rs archive",
    "src/sandbox/hosts/dispatch/workspaces.rs backend",
    "src/sandbox/hosts/kind.rs all",
    "src/sandbox/hosts/kind.rs as_str",
    "src/sandbox/hosts/kind.rs label",
    "src/sandbox/hosts/kind.rs default_address",
    "src/sandbox/hosts/kind.rs has_sessions",
    "src/sandbox/hosts/kind.rs has_sandboxes_section",
    "src/sandbox/hosts/kind.rs host_has_identity",
    "src/sandbox/hosts/kind.rs takes_local_token",
    "src/sandbox/hosts/kind.rs is_provider_api",
    "src/sandbox/hosts/kind.rs creates_before_opened",
    "src/sandbox/hosts/kind.rs key_letter",
];

/// The folders of `sandbox/hosts/`, one per host kind (and `state`, the placement without a host).
const KIND_FOLDERS: [&str; 3] = ["sandboxd", "daytona", "state"];

fn is_web(module: &str) -> bool {
    in_folder(module, "web")
}

/// `module` is `folder` or inside it.
fn in_folder(module: &str, folder: &str) -> bool {
    module == folder || module.starts_with(&format!("{folder}::"))
}

fn is_store(module: &str) -> bool {
    let last = module.rsplit("::").next().unwrap_or_default();
    last == "store" || last.ends_with("_store")
}

/// The capability a module belongs to: `sandbox::workspaces::store` → `sandbox::workspaces`. A
/// kind folder's piece of a capability (`sandbox::hosts::<kind>::<capability>`, named after the
/// capability it serves: `workspaces`, `connections`, `running`, `tombstones`, `documents`,
/// `snapshots`, `doctor`)
/// belongs to that capability, so it may use that capability's store as the capability's own
/// files do, and no other.
fn capability(module: &str) -> String {
    let segs: Vec<&str> = module.split("::").collect();
    if let ["sandbox", "hosts", kind, piece, ..] = segs[..] {
        if KIND_FOLDERS.contains(&kind) {
            return match piece {
                "documents" => "documents".into(),
                "workspaces" | "connections" | "running" | "tombstones" | "snapshots" | "doctor" => {
                    format!("sandbox::{piece}")
                }
                _ => format!("sandbox::hosts::{kind}"),
            };
        }
    }
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
fn nothing_below_the_http_layer_reaches_it_not_even_through_another_file() {
    // A service, store, model or any other module of the service layer never reaches `web`, a
    // page, an API module or a routes `mod.rs`: not itself, and not through a model it returns.
    let g = Graph::build();
    let offenders = g.reaching_the_http_layer();
    assert!(offenders.is_empty(), "below the HTTP layer, these reach it:\n{}", offenders.join("\n"));
}

#[test]
fn no_file_reaches_into_another_capabilitys_store() {
    let g = Graph::build();
    let offenders = g.reaching_into_another_store();
    assert!(offenders.is_empty(), "layering broken:\n{}", offenders.join("\n"));
}

#[test]
fn the_low_layers_import_no_pages_api_service_or_web_module() {
    let g = Graph::build();
    let mut offenders = Vec::new();
    for low in ["state", "access", "config", "db", "validate", "words", "cache"] {
        for d in g.deps(low) {
            let last = d.rsplit("::").next().unwrap_or_default();
            if is_web(&d) || matches!(last, "pages" | "api" | "service") || d.contains("::pages::") {
                offenders.push(format!("{} imports {}", g.file(low), g.file(&d)));
            }
        }
    }
    offenders.extend(g.vocabulary_reaching_out());
    assert!(offenders.is_empty(), "{}", offenders.join("\n"));
}

#[test]
fn agents_below_their_pages_import_nothing_of_the_workspaces() {
    let g = Graph::build();
    let offenders = g.agents_reaching_up_into_workspaces();
    assert!(offenders.is_empty(), "agents reach up into sandbox/workspaces:\n{}", offenders.join("\n"));
}

#[test]
fn the_import_graph_has_no_loop() {
    let g = Graph::build();
    let loops: Vec<Vec<String>> = g.loops().into_iter().map(|c| c.iter().map(|m| g.file(m)).collect()).collect();
    assert!(loops.is_empty(), "import loops: {loops:#?}");
}

#[test]
fn sql_lives_only_in_stores() {
    let g = Graph::build();
    let offenders = g.sql_outside_stores();
    assert!(offenders.is_empty(), "SQL outside a store.rs: {offenders:?}");
}

/// The operation log's tables are read and written only by the log store (`src/sandbox/log/`),
/// whose reads run on the `Reader` that only `LogStore::reader` makes, after settling: so no file
/// can read the log without settling it first (docs/architecture.md).
#[test]
fn only_the_log_store_names_the_log_tables_in_sql() {
    let root = crate::support::source_files::repo_root().join("src");
    let markers =
        ["FROM sandbox_operations", "INTO sandbox_operations", "JOIN sandbox_operations", "UPDATE sandbox_operations"];
    let mut offenders = Vec::new();
    for p in crate::support::source_files::source_files() {
        let rel = p.strip_prefix(&root).expect("under src").to_string_lossy().replace('\\', "/");
        if rel.starts_with("sandbox/log/") {
            continue;
        }
        let text = std::fs::read_to_string(&p).expect("read");
        let code = text.split("#[cfg(test)]\nmod tests").next().unwrap_or_default();
        if code.lines().filter(|l| !l.trim_start().starts_with("//")).any(|l| markers.iter().any(|m| l.contains(m))) {
            offenders.push(format!("src/{rel}"));
        }
    }
    assert!(offenders.is_empty(), "SQL on the operation log outside src/sandbox/log/: {offenders:?}");
}

#[test]
fn pages_take_sign_in_refusal_statuses_from_the_error_table() {
    let g = Graph::build();
    let offenders = g.choosing_refusal_statuses();
    assert!(offenders.is_empty(), "these pick 401/429 or Retry-After themselves: {offenders:?}");
}

#[test]
fn only_the_seam_of_host_kinds_decides_by_a_kind_without_naming_every_kind() {
    let g = Graph::build();
    let offenders = g.deciding_by_kind_outside_the_seam();
    assert!(
        offenders.is_empty(),
        "these decide by a ConnectionKind with a comparison, matches!, if let or a `_ =>` arm; \
         match every kind, or ask the seam (src/sandbox/hosts/kind.rs): {offenders:?}"
    );
}

#[test]
fn only_the_seam_names_a_kind_in_a_match_arm_or_a_comparison() {
    let offenders = Graph::build().naming_a_kind_in_an_arm_outside_the_seam();
    assert!(
        offenders.is_empty(),
        "these files decide by a kind outside src/sandbox/hosts/: call a function of hosts/dispatch/ \
         (one exhaustive match there, the kind's code in its folder): {offenders:?}"
    );
}

/// A new kind fails to compile until every capability handles it (issue 48): each `match` on a
/// kind names every kind (the two tests above, and a kind is not `PartialEq`), so the places it
/// stops at are exactly these matches; the list here is the one `hosts/kind.rs` and
/// docs/developing.md give, and cannot drift from the code. Followed with a throwaway variant:
/// docs/developing.md, "Adding a host kind".
#[test]
fn a_new_kind_stops_the_compiler_at_exactly_the_places_listed() {
    let mut found = matches_on_a_kind(&Graph::build());
    let mut expected: Vec<String> = PLACES_A_KIND_IS_HANDLED.iter().map(|p| p.to_string()).collect();
    found.sort();
    expected.sort();
    let unlisted: Vec<&String> = found.iter().filter(|p| !expected.contains(p)).collect();
    let gone: Vec<&String> = expected.iter().filter(|p| !found.contains(p)).collect();
    assert!(
        found == expected,
        "the matches on a kind are not the places listed (not listed: {unlisted:?}; listed, not found: \
         {gone:?}): update PLACES_A_KIND_IS_HANDLED, the list in src/sandbox/hosts/kind.rs and \
         docs/developing.md (\"Adding a host kind\") together"
    );
}

#[test]
fn kind_folders_do_not_import_each_other() {
    let offenders = Graph::build().kind_folders_importing_each_other();
    assert!(
        offenders.is_empty(),
        "a kind's folder imports another kind's: move what both need below them: {offenders:?}"
    );
}

#[test]
fn each_kind_reports_its_failures_as_the_host_neutral_error_outside_its_own_code() {
    let g = Graph::build();
    let offenders = g.naming_another_kinds_error();
    assert!(
        offenders.is_empty(),
        "these name another kind's client error, or a kind's error where every kind meets; convert it \
         into hosts::error::HostError in the kind's own code: {offenders:?}"
    );
}

#[test]
fn where_a_workspace_lives_is_spelled_once_in_the_seam() {
    let g = Graph::build();
    let offenders = g.spelling_a_placement_outside_the_seam();
    assert!(
        offenders.is_empty(),
        "these spell where a workspace lives themselves (a kind's word beside `backend`, or a Carrier); \
         ask hosts::kind::Placement: {offenders:?}"
    );
}

#[test]
fn no_static_holds_state_but_the_allowed_ones() {
    let g = Graph::build();
    let offenders = g.statics_holding_state();
    assert!(
        offenders.is_empty(),
        "these statics hold state one console should own: move it into AppState (a bounded cache), \
         or argue it into STATICS_ALLOWED and docs/architecture.md: {offenders:?}"
    );
    // Each allowed static is still there (the list does not outlive what it allows).
    for (file, name, _) in STATICS_ALLOWED {
        let module = module_of(file.trim_start_matches("src/"));
        let found = g.code.get(&module).is_some_and(|code| statics_in(code).iter().any(|(n, _)| n == name));
        assert!(found, "{file} has no static {name} any more: take it off STATICS_ALLOWED");
    }
}

#[test]
fn the_graph_reader_sees_the_imports_it_checks() {
    // The checks above pass trivially if the reader finds nothing: prove it finds known edges.
    let g = Graph::build();
    let deps = |m: &str| g.deps(m);
    assert!(deps("startup").contains("state"), "startup → state: {:?}", deps("startup"));
    assert!(deps("state").contains("config"), "state → config: {:?}", deps("state"));
    assert!(deps("web::guard").contains("access"), "web::guard → access: {:?}", deps("web::guard"));
    let workspaces = deps("sandbox::workspaces::service");
    assert!(workspaces.contains("sandbox::snapshots::lifecycle"), "workspaces → snapshots: {workspaces:?}");
    // `pub use` is followed to the file that defines the name.
    assert!(deps("state").contains("docker::engine"), "state → docker::engine: {:?}", deps("state"));
    assert!(g.is_http("sandbox::running") && g.is_http("agents::pages::delete") && !g.is_http("agents::check"));
    assert_eq!(
        expand("crate::a::{b, c::{d, e as f}, self}"),
        vec!["crate::a::b", "crate::a::c::d", "crate::a::c::e", "crate::a"]
    );
}

#[test]
fn each_rule_fails_on_the_shapes_it_forbids() {
    // The shapes the rules were written against (issue 27): two sibling services calling each
    // other, a service reaching `web` through a model, a service importing a page module, agents
    // importing a workspaces file, SQL in a service, a page choosing 401 itself, and an inline
    // module whose `super::` must not count as its file's parent.
    let g = Graph::of_files(&[
        ("sandbox/snapshots/service.rs", "use crate::sandbox::workspaces::service as workspaces;"),
        ("sandbox/workspaces/service.rs", "use crate::sandbox::snapshots::service as snapshots;"),
        ("sandbox/workspaces/key.rs", "pub enum Scope {}"),
        ("sandbox/workspaces/store.rs", ""),
        ("sandbox/running/model.rs", "use crate::web::paths;"),
        ("sandbox/running/mod.rs", "pub fn routes(cfg: &mut web::ServiceConfig) {}"),
        ("dashboard/service.rs", "use crate::sandbox::running::model::HostSessions;"),
        ("web/paths.rs", ""),
        ("agents/service.rs", "fn f() { let s = super::pages::manifest_rows::env_secrets(v); }"),
        ("agents/pages/manifest_rows.rs", ""),
        ("agents/model.rs", "use crate::sandbox::workspaces::key::Scope;"),
        ("agents/store.rs", "fn f() { crate::sandbox::workspaces::store::get(c); }"),
        ("auth/service.rs", "fn f() { sqlx::query(\"SELECT pg_advisory_xact_lock(1)\"); }"),
        ("auth/pages.rs", "fn f() { let s = StatusCode::UNAUTHORIZED; }"),
        ("vocabulary/scope.rs", "use crate::agents::model::Agent;"),
        ("sandbox/running/orphans.rs", "fn f(k: ConnectionKind) { match k { ConnectionKind::Daytona => a(), _ => b() } }"),
        ("sandbox/doctor.rs", "fn f(c: &Connection) { if matches!(c.kind, ConnectionKind::Daytona) { a() } }"),
        (
            "documents/files.rs",
            "fn f(k: Option<ConnectionKind>) -> u8 { match k { Some(ConnectionKind::Daytona) => { match x { _ => 1 } }\n \
             Some(ConnectionKind::Sandboxd) | None => 2, } }",
        ),
        ("sandbox/hosts/kind.rs", "fn f(k: ConnectionKind) { match k { ConnectionKind::Daytona => 1, _ => 2 } }"),
        ("sandbox/hosts/daytona/workspaces/files.rs", "fn f(e: SandboxdError) {}"),
        ("sandbox/hosts/daytona/client/labels.rs", "struct SandboxdErrorKind;"),
        ("sandbox/hosts/sandboxd/workspaces/files.rs", "fn f(e: SandboxdError) { \"backend\" }"),
        ("sandbox/workspaces/recorded.rs", "fn f(e: &DaytonaError) {}"),
        ("sandbox/hosts/daytona/connections.rs", "fn f(e: DaytonaError) {}"),
        ("sandbox/snapshots/keep.rs", "fn f(w: &W) -> bool { w.backend == \"daytona\" }"),
        ("sandbox/connections/service.rs", "fn f() { keys::purpose_for(ConnectionKind::Sandboxd) }"),
        ("sandbox/hosts/daytona/running/mod.rs", "use crate::sandbox::hosts::sandboxd::client::SandboxdClient;"),
        ("sandbox/workspaces/carrier.rs", "pub enum Carrier { Container, Document }"),
        ("sandbox/hosts/sandboxd/client/mod.rs", "use transport::lean;"),
        ("sandbox/hosts/sandboxd/client/error.rs", ""),
        (
            "sandbox/hosts/sandboxd/client/transport.rs",
            "use super::error::E;\npub(super) struct Answer;\npub(super) mod lean {\n    use super::Answer;\n    \
             use crate::sandbox::hosts::sandboxd::client::error::E;\n    pub(in crate::sandbox::hosts::sandboxd::client) const MAX: u8 = 4;\n    #[cfg(test)]\n    mod tests {\n        use super::super::super::mod_x;\n    }\n}\n",
        ),
    ]);
    assert_eq!(g.loops(), vec![vec!["sandbox::snapshots::service".to_string(), "sandbox::workspaces::service".into()]]);
    assert_eq!(
        g.reaching_the_http_layer(),
        vec![
            "src/agents/service.rs → src/agents/pages/manifest_rows.rs",
            "src/dashboard/service.rs → src/sandbox/running/model.rs → src/web/paths.rs",
            "src/sandbox/running/model.rs → src/web/paths.rs",
        ]
    );
    assert_eq!(
        g.agents_reaching_up_into_workspaces(),
        vec![
            "src/agents/model.rs imports src/sandbox/workspaces/key.rs",
            "src/agents/store.rs imports src/sandbox/workspaces/store.rs",
        ]
    );
    assert_eq!(
        g.reaching_into_another_store(),
        vec!["src/agents/store.rs reaches into src/sandbox/workspaces/store.rs"]
    );
    assert_eq!(g.vocabulary_reaching_out(), vec!["src/vocabulary/scope.rs imports src/agents/model.rs"]);
    assert_eq!(g.sql_outside_stores(), vec!["src/auth/service.rs"]);
    assert_eq!(g.choosing_refusal_statuses(), vec!["src/auth/pages.rs"]);
    // A catch-all or a `matches!` on a kind outside the seam; not an exhaustive match with a `_`
    // inside an arm's body, and not the seam itself.
    assert_eq!(g.deciding_by_kind_outside_the_seam(), vec!["src/sandbox/doctor.rs", "src/sandbox/running/orphans.rs"]);
    // A kind's own error in its own code is fine; another kind's, or any in the shared recorder, not.
    assert_eq!(
        g.naming_another_kinds_error(),
        vec!["src/sandbox/hosts/daytona/workspaces/files.rs", "src/sandbox/workspaces/recorded.rs"]
    );
    // A kind in an arm or a comparison outside the seam (the exhaustive match of orphans.rs
    // too), not a kind named as a value, and not in the seam.
    assert_eq!(
        g.naming_a_kind_in_an_arm_outside_the_seam(),
        vec!["src/documents/files.rs", "src/sandbox/running/orphans.rs"]
    );
    // Every match naming a kind, with the function it is in: the nested `match x` without a
    // kind is not one.
    assert_eq!(
        matches_on_a_kind(&g),
        vec!["src/documents/files.rs f", "src/sandbox/hosts/kind.rs f", "src/sandbox/running/orphans.rs f"]
    );
    assert_eq!(
        g.spelling_a_placement_outside_the_seam(),
        vec!["src/sandbox/snapshots/keep.rs", "src/sandbox/workspaces/carrier.rs"]
    );
    assert_eq!(
        g.kind_folders_importing_each_other(),
        vec!["src/sandbox/hosts/daytona/running/mod.rs imports src/sandbox/hosts/sandboxd/client/mod.rs"]
    );
    // Inside `mod lean { … }`, `super::Answer` is the transport file itself: no edge to the client's
    // `mod.rs`, so no loop with it; neither is `pub(in crate::sandbox::hosts::sandboxd::client)`, a visibility, and
    // what its test module names is not read.
    assert_eq!(
        g.deps("sandbox::hosts::sandboxd::client::transport"),
        BTreeSet::from(["sandbox::hosts::sandboxd::client::error".to_string()])
    );
    // A static holding state (a lock, a thread-local cell, a lazily built cache) outside the
    // allowed ones; not a `'static` lifetime, a constant, a `task_local!` value or an allowed one.
    let g = Graph::of_files(&[
        (
            "sandbox/connections/daytona.rs",
            "fn f() { static CLIENTS: OnceLock<Mutex<HashMap<String, u8>>> = OnceLock::new(); }",
        ),
        ("tokens/cache.rs", "pub static AUTH_CACHE: LazyLock<TtlCache<String, u8>> = LazyLock::new(f);"),
        (
            "sandbox/workspaces/daytona/root.rs",
            "thread_local! {\n    static ROOTS: RefCell<HashMap<String, u8>> = RefCell::new(HashMap::new());\n}",
        ),
        (
            "web/edge.rs",
            "thread_local! {\n    static SHAPES: RefCell<HashMap<String, u8>> = RefCell::new(HashMap::new());\n}",
        ),
        ("audit/store.rs", "fn f() { static SEQ: LazyLock<AtomicI64> = LazyLock::new(g); }"),
        ("sandbox/log/sqlite_store.rs", "pub static DIALECT: Dialect = Dialect { a: 1 };\nfn f(s: &'static str) {}"),
        ("web/context.rs", "tokio::task_local! {\n    pub static REQUEST: RequestContext;\n}"),
    ]);
    assert_eq!(
        g.statics_holding_state(),
        vec![
            "src/sandbox/connections/daytona.rs CLIENTS",
            "src/sandbox/workspaces/daytona/root.rs ROOTS",
            "src/tokens/cache.rs AUTH_CACHE",
        ]
    );
}
