//! The operation log's query, as typed (URL pairs, so `op` may repeat) and as the store applies
//! it. Every refused value is reported at once, by its field; nothing a person types reaches the
//! store unchecked.

use super::cursor::Cursor;
use crate::sandbox::recording::Operation;
use crate::validate::FieldErrors;

pub const LIMIT_DEFAULT: u32 = 50;
pub const LIMIT_MAX: u32 = 200;
const Q_MAX: usize = 200;
const SESSION_KEY_MAX: usize = 512;
const TIME_HELP: &str =
    "Write a UTC time like 2026-12-02, 2026-12-02 14:30, 2026-12-02T14:30:05Z, or epoch milliseconds.";

/// The query as typed; an empty value filters nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FilterInput {
    pub session_key: String,
    pub workspace_id: String,
    pub connection_id: String,
    pub agent_id: String,
    pub run_id: String,
    pub conversation_id: String,
    /// Each `op` given (repeated, or comma-separated).
    pub op: Vec<String>,
    pub failed_only: String,
    pub q: String,
    pub since: String,
    pub until: String,
    pub limit: String,
    pub cursor: String,
}

impl FilterInput {
    /// From a query string's pairs; unknown keys are someone else's (`format`) or ignored.
    pub fn from_query(query: &str) -> FilterInput {
        let mut f = FilterInput::default();
        for (k, v) in url::form_urlencoded::parse(query.as_bytes()) {
            let v = v.into_owned();
            match k.as_ref() {
                "session_key" => f.session_key = v,
                "workspace_id" => f.workspace_id = v,
                "connection_id" => f.connection_id = v,
                "agent_id" => f.agent_id = v,
                "run_id" => f.run_id = v,
                "conversation_id" => f.conversation_id = v,
                "op" => f.op.extend(v.split(',').map(str::trim).filter(|s| !s.is_empty()).map(String::from)),
                "failed_only" => f.failed_only = v,
                "q" => f.q = v,
                "since" => f.since = v,
                "until" => f.until = v,
                "limit" => f.limit = v,
                "cursor" => f.cursor = v,
                _ => {}
            }
        }
        f
    }

    /// The filters (not the page: no `limit`, no `cursor`) as URL pairs, in a fixed order.
    pub fn pairs(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        let mut put = |k: &'static str, v: &str| {
            if !v.trim().is_empty() {
                out.push((k, v.trim().to_string()));
            }
        };
        put("q", &self.q);
        for op in &self.op {
            put("op", op);
        }
        put("failed_only", if is_on(&self.failed_only) { "true" } else { "" });
        put("session_key", &self.session_key);
        put("connection_id", &self.connection_id);
        put("agent_id", &self.agent_id);
        put("workspace_id", &self.workspace_id);
        put("run_id", &self.run_id);
        put("conversation_id", &self.conversation_id);
        put("since", &self.since);
        put("until", &self.until);
        out
    }
}

fn is_on(raw: &str) -> bool {
    matches!(raw.trim(), "true" | "1" | "on" | "yes")
}

/// The filters the store applies, all of them at once.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    pub session_key: Option<String>,
    pub workspace_id: Option<String>,
    pub connection_id: Option<String>,
    pub agent_id: Option<String>,
    pub run_id: Option<String>,
    pub conversation_id: Option<String>,
    /// The operations let through (empty: all).
    pub ops: Vec<&'static str>,
    pub failed_only: bool,
    /// Lower-cased text the target or the detail contains.
    pub q: Option<String>,
    /// Epoch milliseconds, inclusive.
    pub since: Option<i64>,
    /// Epoch milliseconds, inclusive.
    pub until: Option<i64>,
}

/// A page to read: the filters, how many rows, from where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageQuery {
    pub filter: Filter,
    pub limit: u32,
    pub cursor: Option<Cursor>,
}

fn text(errors: &mut FieldErrors, field: &str, raw: &str, max: usize) -> Option<String> {
    let v = raw.trim();
    if v.chars().any(char::is_control) {
        errors.add(field, "Cannot contain control characters.");
        None
    } else if v.chars().count() > max {
        errors.add(field, format!("Write at most {max} characters."));
        None
    } else {
        (!v.is_empty()).then(|| v.to_string())
    }
}

fn id(errors: &mut FieldErrors, field: &str, raw: &str) -> Option<String> {
    let v = raw.trim();
    if v.is_empty() {
        return None;
    }
    match uuid::Uuid::parse_str(v) {
        Ok(u) if v.len() == 36 => Some(u.hyphenated().to_string()),
        _ => {
            errors.add(field, "Not an id: write the UUID it has in the console or the API.");
            None
        }
    }
}

pub fn operation(raw: &str) -> Option<Operation> {
    OPERATIONS.iter().copied().find(|o| o.as_str() == raw)
}

pub const OPERATIONS: [Operation; 6] =
    [Operation::Read, Operation::Write, Operation::Ls, Operation::Mkdir, Operation::Remove, Operation::Execute];

/// The filters alone (what the export takes).
pub fn parse_filter(input: &FilterInput) -> Result<Filter, FieldErrors> {
    let mut errors = FieldErrors::new();
    let filter = filter_into(&mut errors, input);
    errors.into_result()?;
    Ok(filter)
}

/// The filters, the page size and the cursor.
pub fn parse(input: &FilterInput) -> Result<PageQuery, FieldErrors> {
    let mut errors = FieldErrors::new();
    let filter = filter_into(&mut errors, input);
    let raw = input.limit.trim();
    let limit = if raw.is_empty() {
        LIMIT_DEFAULT
    } else {
        match raw.parse::<u32>() {
            Ok(n) if (1..=LIMIT_MAX).contains(&n) && raw.len() <= 3 => n,
            _ => {
                errors.add("limit", format!("Ask for 1 to {LIMIT_MAX} rows a page."));
                0
            }
        }
    };
    let raw = input.cursor.trim();
    let cursor = if raw.is_empty() {
        None
    } else {
        let c = Cursor::decode(raw);
        if c.is_none() {
            errors.add("cursor", "Not a cursor of this log: use `next_cursor` or `prev_cursor` as given.");
        }
        c
    };
    errors.into_result()?;
    Ok(PageQuery { filter, limit, cursor })
}

fn filter_into(errors: &mut FieldErrors, input: &FilterInput) -> Filter {
    let session_key = text(errors, "session_key", &input.session_key, SESSION_KEY_MAX);
    let workspace_id = id(errors, "workspace_id", &input.workspace_id);
    let connection_id = id(errors, "connection_id", &input.connection_id);
    let agent_id = id(errors, "agent_id", &input.agent_id);
    let run_id = id(errors, "run_id", &input.run_id);
    let conversation_id = id(errors, "conversation_id", &input.conversation_id);
    let mut ops = Vec::new();
    for raw in &input.op {
        match operation(raw.trim()) {
            Some(o) if !ops.contains(&o.as_str()) => ops.push(o.as_str()),
            Some(_) => {}
            None => {
                errors.add("op", "Choose operations from read, write, ls, mkdir, remove and execute.");
                break;
            }
        }
    }
    let failed_only = match input.failed_only.trim() {
        "" | "false" | "0" | "off" | "no" => false,
        v if is_on(v) => true,
        _ => {
            errors.add("failed_only", "Use true or false.");
            false
        }
    };
    let q = text(errors, "q", &input.q, Q_MAX).map(|q| q.to_lowercase());
    let mut time = |field: &str, raw: &str, end: bool| {
        if raw.contains('\0') {
            errors.add(field, TIME_HELP);
            return None;
        }
        match crate::audit::filter::parse_time(raw.trim(), end) {
            Ok(t) => t,
            Err(()) => {
                errors.add(field, TIME_HELP);
                None
            }
        }
    };
    let since = time("since", &input.since, false);
    let until = time("until", &input.until, true);
    if let (Some(s), Some(u)) = (since, until) {
        if u < s {
            errors.add("until", "The end is before the start.");
        }
    }
    Filter {
        session_key,
        workspace_id,
        connection_id,
        agent_id,
        run_id,
        conversation_id,
        ops,
        failed_only,
        q,
        since,
        until,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(query: &str) -> Vec<String> {
        match parse(&FilterInput::from_query(query)) {
            Ok(_) => Vec::new(),
            Err(e) => e.0.into_iter().map(|e| e.field).collect(),
        }
    }

    #[test]
    fn every_refused_value_is_named() {
        assert_eq!(fields("limit=0"), ["limit"]);
        assert_eq!(fields("limit=201"), ["limit"]);
        assert_eq!(fields("limit=-1"), ["limit"]);
        assert_eq!(fields("limit=0050"), ["limit"]);
        assert_eq!(fields("cursor=abc"), ["cursor"]);
        assert_eq!(fields("agent_id=x&run_id=%00"), ["agent_id", "run_id"]);
        assert_eq!(fields("op=read&op=eat"), ["op"]);
        assert_eq!(fields("q=a%00b&session_key=%07"), ["session_key", "q"]);
        assert_eq!(fields("since=soon&until=%00"), ["since", "until"]);
        assert_eq!(fields("since=2026-12-03&until=2026-12-02"), ["until"]);
        assert_eq!(fields("failed_only=maybe"), ["failed_only"]);
        assert!(fields("limit=200&op=read,execute&failed_only=true&q=50%25").is_empty());
    }

    #[test]
    fn ops_repeat_or_are_listed_and_the_query_is_kept_in_order() {
        let input = FilterInput::from_query("op=read&op=write,execute&op=read&q=Make%20Build&failed_only=on");
        let p = parse(&input).expect("valid");
        assert_eq!(p.filter.ops, ["read", "write", "execute"]);
        assert_eq!(p.filter.q.as_deref(), Some("make build"));
        assert!(p.filter.failed_only);
        assert_eq!(p.limit, LIMIT_DEFAULT);
        let pairs: Vec<_> = input.pairs().into_iter().map(|(k, _)| k).collect();
        assert_eq!(pairs, ["q", "op", "op", "op", "op", "failed_only"]);
    }
}
