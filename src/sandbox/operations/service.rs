//! The operation log: one organization's recorded workspace operations, paged by keyset,
//! filtered in SQL, for operators and above.

use super::cursor::{Cursor, Direction};
use super::error::OperationsError;
use super::filter::{self, Filter, FilterInput, PageQuery, OPERATIONS};
use super::model::{OperationItem, OperationsPage, Total, COUNT_CAP};
use super::store::{self, Narrowing};
use crate::access::Caller;
use crate::db::Conn;
use crate::state::AppState;

pub type Result<T> = std::result::Result<T, OperationsError>;

pub fn authorize(caller: &Caller) -> Result<()> {
    if caller.role.can_see_sandboxes() {
        Ok(())
    } else {
        Err(OperationsError::Forbidden)
    }
}

/// A page of the log as `input` asks: newest first, its cursors, the bounded total.
pub async fn page(st: &AppState, caller: &Caller, input: &FilterInput) -> Result<OperationsPage> {
    authorize(caller)?;
    let query = filter::parse(input).map_err(OperationsError::Invalid)?;
    read_page(st, caller, &query).await
}

/// The filters alone, checked (the export's).
pub fn export_filter(caller: &Caller, input: &FilterInput) -> Result<Filter> {
    authorize(caller)?;
    filter::parse_filter(input).map_err(OperationsError::Invalid)
}

async fn read_page(st: &AppState, caller: &Caller, query: &PageQuery) -> Result<OperationsPage> {
    let org = caller.org_id.as_str();
    let limit = query.limit;
    let mut c = st.db.conn().await?;
    let narrowing = narrowing(st, &mut c, org, &query.filter).await?;
    let narrowing = narrowing.as_ref();
    // A narrowed search's first page comes with its count (PostgreSQL: one read of the candidates).
    let counted = match (narrowing, &query.cursor) {
        (Some(n), None) => store::first_page_counted(&mut c, org, &query.filter, n, limit + 1).await?,
        _ => None,
    };
    let (mut rows, counted) = match counted {
        Some((rows, n)) => (rows, Some(n)),
        None => (store::page(&mut c, org, &query.filter, narrowing, query.cursor.as_ref(), limit + 1).await?, None),
    };
    let more = rows.len() > limit as usize;
    rows.truncate(limit as usize);
    let backward = matches!(query.cursor.as_ref().map(|c| c.direction), Some(Direction::Before));
    if backward {
        rows.reverse();
    }
    // Older rows follow when this page read forward and found more, or read backward from a
    // position (whose older rows are the page it came from); newer rows, the other way round.
    let (has_older, has_newer) = match &query.cursor {
        None => (more, false),
        Some(c) if c.direction == Direction::After => (more, true),
        Some(_) => (!rows.is_empty(), more),
    };
    let (first, last) = (rows.first(), rows.last());
    let next_cursor = last.filter(|_| has_older).map(|r| Cursor::after(r.time, &r.id).encode());
    let prev_cursor = first.filter(|_| has_newer).map(|r| Cursor::before(r.time, &r.id).encode());
    let poll_cursor = match first {
        Some(r) => Some(Cursor::before(r.time, &r.id).encode()),
        // An empty page of new rows keeps asking from where it was.
        None if backward => query.cursor.as_ref().map(Cursor::encode),
        None => None,
    };
    // A first page that holds every match needs no count.
    let total = if query.cursor.is_none() && !more {
        Total::of(rows.len() as u64)
    } else if let Some(n) = counted {
        Total::of(n)
    } else {
        Total::of(store::count(&mut c, org, &query.filter, narrowing, None).await?)
    };
    let first_position = match (first, query.cursor.is_some()) {
        (None, _) => None,
        (Some(_), false) => Some(1),
        (Some(r), true) => {
            let newer =
                store::count(&mut c, org, &query.filter, narrowing, Some(&Cursor::before(r.time, &r.id))).await?;
            (newer <= COUNT_CAP).then_some(newer + 1)
        }
    };
    drop(c);
    Ok(OperationsPage {
        items: rows,
        total_label: total.label(),
        total,
        first_position,
        limit,
        next_cursor,
        prev_cursor,
        poll_cursor,
        vocabulary: vocabulary(st, org).await?,
        retention_days: st.config.sandboxd.operation_retention_days,
    })
}

/// The rows newer than `cursor` that match, newest first (the console's "new rows" poll).
pub async fn newer(st: &AppState, caller: &Caller, input: &FilterInput) -> Result<OperationsPage> {
    authorize(caller)?;
    let query = filter::parse(input).map_err(OperationsError::Invalid)?;
    if !matches!(query.cursor.as_ref().map(|c| c.direction), Some(Direction::Before)) {
        return Err(OperationsError::Invalid(crate::validate::FieldErrors::one(
            "cursor",
            "Use the page's poll cursor.",
        )));
    }
    read_page(st, caller, &query).await
}

/// What a search is narrowed by ([`store::search_narrowing`]), from the cache when it was asked
/// within the minute.
async fn narrowing(st: &AppState, c: &mut Conn, org_id: &str, f: &Filter) -> Result<Option<Narrowing>> {
    let Some(q) = f.q.as_deref() else { return Ok(None) };
    if let Some(known) = st.operation_searches.get(org_id, q) {
        return Ok(known);
    }
    let found = store::search_narrowing(c, org_id, f).await?;
    st.operation_searches.put(org_id, q, found.clone());
    Ok(found)
}

/// Which operations the organization's log holds, in the usual order (cached a minute).
pub async fn vocabulary(st: &AppState, org_id: &str) -> Result<Vec<String>> {
    if let Some(v) = st.operation_vocabulary.get(org_id) {
        return Ok(v);
    }
    let mut c = st.db.conn().await?;
    let mut ops = Vec::new();
    for op in OPERATIONS {
        if store::has_operation(&mut c, org_id, op.as_str()).await? {
            ops.push(op.as_str().to_string());
        }
    }
    st.operation_vocabulary.put(org_id, ops.clone());
    Ok(ops)
}

/// A batch of the export: up to `n` rows older than `after` (or the newest), newest first.
pub async fn batch(
    st: &AppState,
    org_id: &str,
    f: &Filter,
    after: Option<&Cursor>,
    n: u32,
) -> Result<Vec<OperationItem>> {
    let mut c = st.db.conn().await?;
    let narrowing = narrowing(st, &mut c, org_id, f).await?;
    Ok(store::page(&mut c, org_id, f, narrowing.as_ref(), after, n).await?)
}
