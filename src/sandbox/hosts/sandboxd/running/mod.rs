//! sandboxd on the Running tab: a session's close (and its confirmation) and the orphans' listing.

pub mod orphans;
