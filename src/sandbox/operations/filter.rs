//! The operation log's query, as typed (URL pairs, so `op` may repeat) and as the store applies
//! it. Every refused value is reported at once, by its field; nothing a person types reaches the
//! store unchecked.

use super::cursor::Cursor;
use crate::sandbox::log::model::Operation;
use crate::validate::FieldErrors;

pub const LIMIT_DEFAULT: u32 = 50;
pub const LIMIT_MAX: u32 = 200;
const Q_MAX: usize = 200;
const SESSION_KEY_MAX: usize = 512;
const TIME_HELP: &str =
    "Write a UTC time like 2026-12-02, 2026-12-02 14:30, 2026-12-02T14:30:05Z, or epoch milliseconds.";

/// How a parameter's value is written and checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Value {
    /// Text of at most this many characters, no control characters, compared whole.
    Text(usize),
    /// A UUID, compared whole.
    Id,
    /// Text the target or the detail contains, at most this many characters, any case.
    Search(usize),
    /// Operations, the parameter repeated or comma-separated.
    Ops,
    /// `true` or `false`: only the failures.
    Failures,
    /// A UTC time or epoch milliseconds: the first (`end: false`) or last millisecond meant.
    Time { end: bool },
    /// Rows a page (the page's, not a filter).
    Limit,
    /// Where a page starts (the page's, not a filter).
    Cursor,
}

/// Where the Activity page keeps a parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnPage {
    /// A control of its own, which shows its refusal beside it.
    Control,
    /// A checkbox: a refused value (typed in the URL) is listed under the form.
    Checkbox,
    /// No control: kept as a hidden field (a link from a session, a run, a conversation), a
    /// refused value listed under the form.
    Hidden,
    /// The page's own (`limit`, `cursor`): in its links, not in its form.
    Paging,
}

/// One parameter of the log's query, described once: the API's and the page's query parameter
/// (`FilterInput`), its OpenAPI description (`api.rs`), how it is checked (`Filter`), the column
/// an equality filter compares (`sandbox/log/store.rs`), whether it narrows a search (the
/// planner's choice in `sandbox/log/sqlite_store.rs` and `postgres_store.rs`) and where the Activity page keeps it (`pages.rs`).
pub struct Param {
    pub key: &'static str,
    /// The OpenAPI description.
    pub doc: &'static str,
    pub value: Value,
    /// An equality filter: the column of the log it compares (`o.<column> = value`).
    pub column: Option<&'static str>,
    /// The planner's list: whether a value may name few rows (one session, one run, failures
    /// only), so that a search's page may be far down the term's matches. On SQLite such a search
    /// is not read from the search index in time order but probed, and a common term walked to
    /// along the filter's own index (`log::sqlite_store::reads_index_in_time_order`). PostgreSQL walks a common
    /// term along the organization's rows only without an equality filter (a `column`), whose
    /// statistics tell it how many rows the value names (`log::postgres_store::walks`).
    pub narrows: bool,
    pub on_page: OnPage,
    /// Its typed value in [`FilterInput`] (all but `op`, which repeats).
    typed: Option<Field>,
}

/// A field of [`FilterInput`], read and written.
#[derive(Clone, Copy)]
struct Field {
    get: fn(&FilterInput) -> &String,
    set: fn(&mut FilterInput) -> &mut String,
}

macro_rules! typed {
    ($field:ident) => {{
        fn get(i: &FilterInput) -> &String {
            &i.$field
        }
        fn set(i: &mut FilterInput) -> &mut String {
            &mut i.$field
        }
        Some(Field { get, set })
    }};
}

/// The log's filters, in the order a URL and a refusal list them. An empty value filters nothing;
/// every one given applies (AND).
pub const FILTERS: [Param; 11] = [
    Param {
        key: "q",
        doc: "Text the target (path or command) or the detail contains, any case; `%`, `_` and `\\` are \
              literal. At most 200 characters.",
        value: Value::Search(Q_MAX),
        column: None,
        narrows: false,
        on_page: OnPage::Control,
        typed: typed!(q),
    },
    Param {
        key: "op",
        doc: "Only these operations: `read`, `write`, `ls`, `mkdir`, `remove`, `execute`; repeat the \
              parameter or separate with commas.",
        value: Value::Ops,
        column: None,
        narrows: false,
        on_page: OnPage::Control,
        typed: None,
    },
    Param {
        key: "failed_only",
        doc: "`true`: only the operations that failed (a command: anything but exit 0).",
        value: Value::Failures,
        column: None,
        narrows: true,
        on_page: OnPage::Checkbox,
        typed: typed!(failed_only),
    },
    Param {
        key: "session_key",
        doc: "One host session's rows (its key, as the Running tab shows it).",
        value: Value::Text(SESSION_KEY_MAX),
        column: Some("session_key"),
        narrows: true,
        on_page: OnPage::Hidden,
        typed: typed!(session_key),
    },
    Param {
        key: "connection_id",
        doc: "One connection's (host's) rows (a UUID).",
        value: Value::Id,
        column: Some("connection_id"),
        narrows: true,
        on_page: OnPage::Control,
        typed: typed!(connection_id),
    },
    Param {
        key: "agent_id",
        doc: "One agent's rows (a UUID).",
        value: Value::Id,
        column: Some("agent_id"),
        narrows: true,
        on_page: OnPage::Control,
        typed: typed!(agent_id),
    },
    Param {
        key: "workspace_id",
        doc: "One workspace's rows (a UUID).",
        value: Value::Id,
        column: Some("workspace_id"),
        narrows: true,
        on_page: OnPage::Hidden,
        typed: typed!(workspace_id),
    },
    Param {
        key: "run_id",
        doc: "One run's rows (a UUID).",
        value: Value::Id,
        column: Some("run_id"),
        narrows: true,
        on_page: OnPage::Hidden,
        typed: typed!(run_id),
    },
    Param {
        key: "conversation_id",
        doc: "One conversation's rows (a UUID).",
        value: Value::Id,
        column: Some("conversation_id"),
        narrows: true,
        on_page: OnPage::Hidden,
        typed: typed!(conversation_id),
    },
    Param {
        key: "since",
        doc: "From this time on (inclusive): epoch milliseconds, or a UTC time written `2026-12-02`, \
              `2026-12-02T14:30`, `2026-12-02T14:30:05` or RFC 3339.",
        value: Value::Time { end: false },
        column: None,
        narrows: false,
        on_page: OnPage::Control,
        typed: typed!(since),
    },
    Param {
        key: "until",
        doc: "Until this time (inclusive, to the end of the day, minute or second written), in the \
              same forms as `since`.",
        value: Value::Time { end: true },
        column: None,
        narrows: false,
        on_page: OnPage::Control,
        typed: typed!(until),
    },
];

/// The page's own parameters beside the filters (not the export's).
pub const PAGING: [Param; 2] = [
    Param {
        key: "limit",
        doc: "Rows a page, 1 to 200 (default 50). Not used by the export.",
        value: Value::Limit,
        column: None,
        narrows: false,
        on_page: OnPage::Paging,
        typed: typed!(limit),
    },
    Param {
        key: "cursor",
        doc: "Where the page starts: a previous answer's `next_cursor`, `prev_cursor` or \
              `poll_cursor`, as given. Not used by the export.",
        value: Value::Cursor,
        column: None,
        narrows: false,
        on_page: OnPage::Paging,
        typed: typed!(cursor),
    },
];

/// Every parameter: the filters, then the page's.
pub fn params() -> impl Iterator<Item = &'static Param> {
    FILTERS.iter().chain(PAGING.iter())
}

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
            let Some(param) = params().find(|p| p.key == k.as_ref()) else { continue };
            match param.typed {
                Some(field) => *(field.set)(&mut f) = v.into_owned(),
                None => f.op.extend(v.split(',').map(str::trim).filter(|s| !s.is_empty()).map(String::from)),
            }
        }
        f
    }

    /// The typed value of a parameter with one (all but `op`: empty).
    pub fn typed(&self, param: &Param) -> &str {
        param.typed.map_or("", |field| (field.get)(self).as_str())
    }

    /// The filters (not the page: no `limit`, no `cursor`) as URL pairs, in [`FILTERS`]' order.
    pub fn pairs(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        for p in &FILTERS {
            let mut put = |v: &str| {
                if !v.trim().is_empty() {
                    out.push((p.key, v.trim().to_string()));
                }
            };
            match p.value {
                Value::Ops => self.op.iter().for_each(|op| put(op)),
                Value::Failures => put(if is_on(&self.failed_only) { "true" } else { "" }),
                _ => put(self.typed(p)),
            }
        }
        out
    }
}

fn is_on(raw: &str) -> bool {
    matches!(raw.trim(), "true" | "1" | "on" | "yes")
}

/// An equality filter given: the column of the log it compares, and the value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Equal {
    pub key: &'static str,
    pub column: &'static str,
    pub value: String,
}

/// The filters the store applies, all of them at once.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    /// The equality filters given, in [`FILTERS`]' order.
    pub equal: Vec<Equal>,
    /// The operations let through (empty: all).
    pub ops: Vec<&'static str>,
    pub failed_only: bool,
    /// Lower-cased text the target or the detail contains.
    pub q: Option<String>,
    /// Epoch milliseconds, inclusive.
    pub since: Option<i64>,
    /// Epoch milliseconds, inclusive.
    pub until: Option<i64>,
    /// The keys of the filters given.
    given: Vec<&'static str>,
}

impl Filter {
    /// Whether a filter of the planner's list is given ([`Param::narrows`]).
    pub fn is_narrowed(&self) -> bool {
        FILTERS.iter().any(|p| p.narrows && self.given.contains(&p.key))
    }

    /// Whether an equality filter is given ([`Param::column`]).
    pub fn has_equality(&self) -> bool {
        !self.equal.is_empty()
    }

    /// The value of the equality filter `key`, if given.
    pub fn equal(&self, key: &str) -> Option<&str> {
        self.equal.iter().find(|e| e.key == key).map(|e| e.value.as_str())
    }
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
    let mut f = Filter::default();
    for p in &FILTERS {
        let raw = input.typed(p);
        let given = match p.value {
            Value::Text(max) => text(errors, p.key, raw, max),
            Value::Id => id(errors, p.key, raw),
            Value::Search(max) => {
                f.q = text(errors, p.key, raw, max).map(|q| q.to_lowercase());
                f.q.clone()
            }
            Value::Ops => {
                for raw in &input.op {
                    match operation(raw.trim()) {
                        Some(o) if !f.ops.contains(&o.as_str()) => f.ops.push(o.as_str()),
                        Some(_) => {}
                        None => {
                            errors.add(p.key, "Choose operations from read, write, ls, mkdir, remove and execute.");
                            break;
                        }
                    }
                }
                (!f.ops.is_empty()).then(String::new)
            }
            Value::Failures => {
                f.failed_only = match raw.trim() {
                    "" | "false" | "0" | "off" | "no" => false,
                    v if is_on(v) => true,
                    _ => {
                        errors.add(p.key, "Use true or false.");
                        false
                    }
                };
                f.failed_only.then(String::new)
            }
            Value::Time { end } => {
                let t = time(errors, p.key, raw, end);
                if end {
                    f.until = t;
                } else {
                    f.since = t;
                }
                t.map(|t| t.to_string())
            }
            Value::Limit | Value::Cursor => None,
        };
        let Some(value) = given else { continue };
        f.given.push(p.key);
        if let Some(column) = p.column {
            f.equal.push(Equal { key: p.key, column, value });
        }
    }
    if let (Some(s), Some(u)) = (f.since, f.until) {
        if u < s {
            errors.add("until", "The end is before the start.");
        }
    }
    f
}

fn time(errors: &mut FieldErrors, field: &str, raw: &str, end: bool) -> Option<i64> {
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
        assert_eq!(fields("q=a%00b&session_key=%07"), ["q", "session_key"]);
        assert_eq!(fields("since=soon&until=%00"), ["since", "until"]);
        assert_eq!(fields("since=2026-12-03&until=2026-12-02"), ["until"]);
        assert_eq!(fields("failed_only=maybe"), ["failed_only"]);
        assert!(fields("limit=200&op=read,execute&failed_only=true&q=50%25").is_empty());
    }

    #[test]
    fn every_parameter_described_is_read_from_a_query_and_every_filter_written_back() {
        let uuid = "0b8f5e2a-3c1d-4e5f-8a9b-1c2d3e4f5a6b";
        for p in params() {
            let value = match p.value {
                Value::Id => uuid,
                Value::Ops => "read",
                Value::Failures => "true",
                Value::Time { .. } => "2026-12-02",
                Value::Limit => "7",
                _ => "abc",
            };
            let input = FilterInput::from_query(&format!("{}={value}", p.key));
            assert_ne!(input, FilterInput::default(), "{} is not read", p.key);
            let parsed = parse(&input);
            if p.value != Value::Cursor {
                assert!(parsed.is_ok(), "{} refused: {parsed:?}", p.key);
            }
            let pairs = input.pairs();
            assert_eq!(pairs.iter().any(|(k, _)| *k == p.key), p.on_page != OnPage::Paging, "{} in the URL", p.key);
            if p.column.is_some() {
                assert_eq!(parsed.ok().and_then(|q| q.filter.equal(p.key).map(String::from)), Some(value.to_string()));
            }
        }
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
