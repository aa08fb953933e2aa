//! Memory figures of a process, from `/proc/<pid>/status` (Linux).

/// A KiB field of `/proc/<pid>/status` (`VmRSS`: resident now, `VmHWM`: the peak so far);
/// `pid` is `"self"` for this process. 0 when it cannot be read.
pub fn status_kib(pid: &str, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}
