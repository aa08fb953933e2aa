//! The operation log: one organization's recorded workspace operations, paged by keyset,
//! filtered in SQL, for operators and above.

use super::batches;
use super::cache::SearchKind;
use super::cursor::{Cursor, Direction, Rank};
use super::error::OperationsError;
use super::filter::{self, Filter, FilterInput, PageQuery, OPERATIONS};
use super::model::{OperationItem, OperationsPage, Total, COUNT_CAP};
use super::segments::Range;
use super::timeline::{self, Bars, Timeline};
use crate::access::Caller;
use crate::sandbox::log::model::{Narrowing, DEFAULT_PAGE};
use crate::sandbox::log::Reader;
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
    let mut log = st.log.reader().await?;
    let narrowing = narrowing(st, &mut log, org, &query.filter, limit + 1).await?;
    let cursor = query.cursor.as_ref();
    // One statement: the page, and what arrived above a ranked cursor's top row.
    let (mut rows, arrived) = log.page(org, &query.filter, narrowing.as_ref(), cursor, limit + 1).await?;
    drop(log);
    let more = rows.len() > limit as usize;
    rows.truncate(limit as usize);
    let backward = matches!(cursor.map(|c| c.direction), Some(Direction::Before));
    if backward {
        rows.reverse();
    }
    // Older rows follow when this page read forward and found more, or read backward from a
    // position (whose older rows are the page it came from); newer rows, the other way round.
    let (has_older, has_newer) = match cursor {
        None => (more, false),
        Some(c) if c.direction == Direction::After => (more, true),
        Some(_) => (!rows.is_empty(), more),
    };
    let ranks = Ranks::of(cursor, &rows, arrived);
    let (first, last) = (rows.first(), rows.last());
    let next_cursor =
        last.filter(|_| has_older).map(|r| Cursor::after(r.time, &r.id).ranked(ranks.rank(rows.len() - 1)).encode());
    let prev_cursor = first.filter(|_| has_newer).map(|r| Cursor::before(r.time, &r.id).ranked(ranks.rank(0)).encode());
    let poll_cursor = match first {
        Some(r) => Some(Cursor::before(r.time, &r.id).ranked(ranks.rank(0)).encode()),
        // An empty page of new rows keeps asking from where it was.
        None if backward => cursor.map(Cursor::encode),
        None => None,
    };
    // A page's position: the first page's is 1; a deep page's, its cursor's rank plus the rows
    // that arrived above the first page since. The total is what that tells: exact on the last
    // page, else "at least" through this page.
    let first_position = ranks.position(0);
    let total = match (first_position, rows.len()) {
        (Some(p), n) if n > 0 => Total::at_least(p + n as u64 - 1, has_older),
        (_, n) => Total::at_least(n as u64, has_older),
    };
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

/// The ranks of a page's rows (`cursor.rs`): counted from the first page's newest row, which a
/// ranked cursor carries on.
struct Ranks {
    /// The rank of the page's first (newest) row and the top row it is counted from.
    first: Option<(i64, i64, String)>,
    /// Rows that arrived above the top row since.
    arrived: u64,
}

impl Ranks {
    fn of(cursor: Option<&Cursor>, rows: &[OperationItem], arrived: u64) -> Ranks {
        let first = match (cursor, rows.first()) {
            (_, None) => None,
            (None, Some(r)) => Some((1, r.time, r.id.clone())),
            (Some(c), Some(_)) => c.rank.as_ref().filter(|_| arrived <= COUNT_CAP).map(|k| {
                let first = match c.direction {
                    Direction::After => k.rank + 1,
                    Direction::Before => k.rank - rows.len() as i64,
                };
                (first, k.top_created_at, k.top_id.clone())
            }),
        };
        Ranks { first, arrived }
    }

    /// The rank of the page's row `i` (0 the newest).
    fn rank(&self, i: usize) -> Option<Rank> {
        self.first.as_ref().map(|(first, top_created_at, top_id)| Rank {
            rank: first + i as i64,
            top_created_at: *top_created_at,
            top_id: top_id.clone(),
        })
    }

    /// The 1-based position of the page's row `i` among the matching rows now.
    fn position(&self, i: usize) -> Option<u64> {
        let rank = self.rank(i)?.rank + self.arrived as i64;
        u64::try_from(rank).ok().filter(|p| *p >= 1)
    }
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

/// What a search read `page` rows at a time is narrowed by ([`Reader::search_narrowing_for`]),
/// from the cache when it was asked within the minute.
async fn narrowing(st: &AppState, log: &mut Reader, org_id: &str, f: &Filter, page: u32) -> Result<Option<Narrowing>> {
    let Some(q) = f.q.as_deref() else { return Ok(None) };
    let kind = SearchKind { in_time_order: st.log.reads_index_in_time_order(f), page };
    if let Some(known) = st.operation_searches.get(org_id, q, kind) {
        return Ok(known);
    }
    let found = log.search_narrowing_for(org_id, f, page).await?;
    st.operation_searches.put(org_id, q, kind, found.clone());
    Ok(found)
}

/// Which operations the organization's log holds, in the usual order (cached a minute).
pub async fn vocabulary(st: &AppState, org_id: &str) -> Result<Vec<String>> {
    if let Some(v) = st.operation_vocabulary.get(org_id) {
        return Ok(v);
    }
    let mut log = st.log.reader().await?;
    let mut ops = Vec::new();
    for op in OPERATIONS {
        if log.has_operation(org_id, op.as_str()).await? {
            ops.push(op.as_str().to_string());
        }
    }
    st.operation_vocabulary.put(org_id, ops.clone());
    Ok(ops)
}

/// The timeline of the filters over their range (`timeline.rs`): the range is `since` to `until`
/// (or now), "any time" beginning at the organization's oldest row; `None` when the log holds
/// nothing in it to count from.
pub async fn timeline(st: &AppState, caller: &Caller, input: &FilterInput, now: i64) -> Result<Option<Timeline>> {
    timeline_capped(st, caller, input, now, timeline::CAP).await
}

/// [`timeline`] exact up to `cap` rows rather than [`timeline::CAP`] (the log bench compares caps).
pub async fn timeline_capped(
    st: &AppState,
    caller: &Caller,
    input: &FilterInput,
    now: i64,
    cap: u64,
) -> Result<Option<Timeline>> {
    authorize(caller)?;
    let f = filter::parse_filter(input).map_err(OperationsError::Invalid)?;
    let org = caller.org_id.as_str();
    let mut log = st.log.reader().await?;
    let from = match f.since {
        Some(s) => s,
        None => match log.oldest(org).await? {
            Some(t) => t,
            None => return Ok(None),
        },
    };
    let to = f.until.map_or(now, |u| u.min(now)).max(from);
    if f.until.is_some_and(|u| u < from) {
        return Ok(None);
    }
    let bars = Bars::over(from, to);
    let narrowing = narrowing(st, &mut log, org, &f, DEFAULT_PAGE).await?;
    let fetch = (cap + 1) as u32;
    let counted = log.timeline(org, &f, narrowing.as_ref(), (bars.start, bars.width), fetch).await?;
    Ok(Some(Timeline::of(from, to, bars, &counted, cap)))
}

/// The export's first batch: its newest [`batches::first_batch`] rows, newest first. The search's
/// narrowing is the one for [`batches::BATCH`] rows, the same for every batch of the export
/// ([`export_batch_within`]: any narrowing finds the same rows in the same order; this one keeps
/// the planner's choice of walk or index the same from batch to batch).
pub async fn export_first_batch(st: &AppState, org_id: &str, f: &Filter) -> Result<Vec<OperationItem>> {
    let mut log = st.log.reader().await?;
    let narrowing = narrowing(st, &mut log, org_id, f, batches::BATCH).await?;
    Ok(log.export_batch(org_id, f, narrowing.as_ref(), None, batches::first_batch(st.log.kind())).await?)
}

/// Up to `fetch` rows of the export within a range of time (`segments.rs`) after `after`: the
/// rows of `f` between `range`'s `since` and `until` (both included) in place of the filter's
/// own, the search narrowed as for the whole export ([`export_first_batch`]).
pub async fn export_batch_within(
    st: &AppState,
    org_id: &str,
    f: &Filter,
    range: Range,
    after: Option<&Cursor>,
    fetch: u32,
) -> Result<Vec<OperationItem>> {
    let mut log = st.log.reader().await?;
    let narrowing = narrowing(st, &mut log, org_id, f, batches::BATCH).await?;
    let mut within = f.clone();
    (within.since, within.until) = (range.since, Some(range.until));
    Ok(log.export_batch(org_id, &within, narrowing.as_ref(), after, fetch).await?)
}

/// Below what the export's ranges need not start (`segments.rs`): the filter's `since`, else
/// the organization's oldest row (`None`: it has none).
pub async fn export_floor(st: &AppState, org_id: &str, f: &Filter) -> Result<Option<i64>> {
    if let Some(since) = f.since {
        return Ok(Some(since));
    }
    Ok(st.log.reader().await?.oldest(org_id).await?)
}
