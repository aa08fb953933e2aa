//! The shell scripts of the file operations the host hands back ([`super::shell`] runs them):
//! each takes its path as an argument, never spliced into its text, and reports a path error by
//! its exit status, the client library's (100 + the Linux errno).

// Exit statuses of the scripts below: 100 + the Linux errno, as the client library's, outside the
// small codes `sh`, `base64` and `dd` use themselves.
/// EPERM: the path leads to the workspace root (or above it).
pub(super) const EXIT_ROOT: i32 = 101;
/// ENOENT.
pub(super) const EXIT_NOT_FOUND: i32 = 102;
/// EACCES.
pub(super) const EXIT_PERMISSION: i32 = 113;
/// EEXIST.
pub(super) const EXIT_EXISTS: i32 = 117;
/// ENOTDIR.
pub(super) const EXIT_NOT_DIRECTORY: i32 = 120;
/// EISDIR.
pub(super) const EXIT_IS_DIRECTORY: i32 = 121;
/// EINVAL: a device, a pipe or a socket.
pub(super) const EXIT_NOT_REGULAR: i32 = 122;

/// Walks up from `$p` to the first folder that exists: a file on the way is 120, a folder the
/// sandbox's user may not write in 113.
pub(super) const CHECK_PARENTS: &str = r#"while [ -n "$p" ]; do
  if [ -d "$p" ]; then [ -w "$p" ] || exit 113; break; fi
  if [ -e "$p" ] || [ -L "$p" ]; then exit 120; fi
  p=${p%/*}
done"#;

/// Defines `missing`: exits 120 when a file stands on the way to `$1` (as the native routes
/// answer then), else 102.
pub(super) const MISSING: &str = r#"missing() {
  p=${1%/*}
  while [ -n "$p" ]; do
    if [ -d "$p" ]; then exit 102; fi
    if [ -e "$p" ]; then exit 120; fi
    p=${p%/*}
  done
  exit 102
}
"#;

/// `$1`: what it describes, following a link. Prints `d <link>` or `f <link> <size>`, `<link>`
/// being `l` for a link, `-` otherwise.
pub(super) const STAT_SCRIPT: &str = r#"if [ -L "$1" ]; then l=l; else l=-; fi
if [ -d "$1" ]; then echo "d $l"
elif [ -f "$1" ]; then [ -r "$1" ] || exit 113; s=$(wc -c < "$1") || exit 1; echo "f $l" $s
elif [ -e "$1" ]; then exit 122
else missing "$1"; fi"#;

/// `$1` the file, `$2` the most it may hold, `$3` the first block, `$4` how many. Prints the
/// file's size, then (unless over `$2`) those blocks, base64-encoded.
pub(super) const READ_SCRIPT: &str = r#"[ -d "$1" ] && exit 121
if [ ! -f "$1" ]; then [ -e "$1" ] && exit 122; missing "$1"; fi
[ -r "$1" ] || exit 113
s=$(wc -c < "$1") || exit 1
echo $s
[ $s -gt "$2" ] && exit 0
dd if="$1" bs=65536 skip="$3" count="$4" 2>/dev/null | base64"#;

/// The start of every write command: `$1` the target, followed if it is a link (`dest`), then
/// checked: a folder is 121, a special file 122, a file on the way 120.
pub(super) const WRITE_CHECKS: &str = r#"dest=$1
if [ -L "$dest" ]; then dest=$(readlink -f -- "$dest") && [ -n "$dest" ] || exit 1; fi
[ -d "$dest" ] && exit 121
if [ -e "$dest" ]; then [ -f "$dest" ] || exit 122; [ -w "$dest" ] || exit 113; fi
parent=${dest%/*}
[ -n "$parent" ] || parent=/
p=$parent
"#;

/// After [`WRITE_CHECKS`]: `$2` the write's id, `$3` `new` or `more`, then base64 to decode
/// into the staged part (in the sandbox's temporary folder).
pub(super) const STAGE_SCRIPT: &str = r#"staged=${TMPDIR:-/tmp}/.agenticos-$2.part
mode=$3
shift 3
if [ "$mode" = new ]; then
  printf '%s' "$@" | base64 -d > "$staged" || { rm -f -- "$staged"; exit 1; }
else
  printf '%s' "$@" | base64 -d >> "$staged" || { rm -f -- "$staged"; exit 1; }
fi"#;

/// After [`WRITE_CHECKS`]: `$2` the write's id, `$3` `staged` when the staged part comes first,
/// then the last base64 to decode. Writes the whole file beside its target (a copy of an
/// existing one first, to keep its mode) and renames it over the target.
pub(super) const FINISH_SCRIPT: &str = r#"staged=${TMPDIR:-/tmp}/.agenticos-$2.part
t=$parent/.agenticos-$2.tmp
has_staged=$3
shift 3
trap 'rm -f -- "$t" "$staged"' EXIT
mkdir -p -- "$parent" || exit 1
if [ -f "$dest" ]; then cp -- "$dest" "$t" || exit 1; fi
{
  if [ "$has_staged" = staged ]; then cat -- "$staged" || exit 1; fi
  printf '%s' "$@" | base64 -d || exit 1
} > "$t" || exit 1
mv -f -- "$t" "$dest""#;

/// `$1` a staged part to remove after a failed write, by the write's id.
pub(super) const DISCARD_SCRIPT: &str = r#"rm -f -- "${TMPDIR:-/tmp}/.agenticos-$1.part""#;

/// `$1` the folder to make, with its parents; a file (or a link to none) in its place is 117.
pub(super) const MKDIR_SCRIPT: &str = r#"if [ -e "$1" ] || [ -L "$1" ]; then [ -d "$1" ] && exit 0; exit 117; fi
p=${1%/*}
"#;

/// `$1` what to remove (a link itself, a folder with everything in it), `$2` the workspace
/// root: a path that leads to the root or above it is 101.
pub(super) const REMOVE_SCRIPT: &str = r#"[ -e "$1" ] || [ -L "$1" ] || missing "$1"
name=${1##*/}
real=$(cd -P -- "${1%/*}" && pwd -P) || exit 1
root=$(cd -P -- "$2" && pwd -P) || exit 1
[ "$real" = / ] && real=
case "$root/" in "$real/$name/"*) exit 101;; esac
rm -rf -- "$1""#;

/// Lists `$1` one entry a record (`<kind>/<size>/<name>` then NUL; kind `d`, `f` or `l` for a
/// link, not followed).
pub(super) const LS_SCRIPT: &str = r#"[ -e "$1" ] || [ -L "$1" ] || missing "$1"; [ -d "$1" ] || exit 120; cd -- "$1" || exit 113
for f in * .[!.]* ..?*; do
  [ -e "$f" ] || [ -L "$f" ] || continue
  if [ -L "$f" ]; then t=l; s=; elif [ -d "$f" ]; then t=d; s=; else t=f; s=$(wc -c < "$f" | tr -d ' '); fi
  printf '%s/%s/%s\0' "$t" "$s" "$f"
done"#;
