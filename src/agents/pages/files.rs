//! The textarea format of an agent's skills and manifest files.

use crate::agents::manifest::WorkspaceFile;

/// The textarea format of an agent's skills and manifest files: each file starts with a line
/// `--- path` and the lines below it, up to the next such line, are its content (trailing blank
/// lines dropped, ending in one newline). A path ending in `/` is an empty folder.
pub fn parse_files(text: &str) -> Result<Vec<WorkspaceFile>, String> {
    let text = text.replace("\r\n", "\n");
    let mut files = Vec::new();
    let mut current: Option<(String, Vec<&str>)> = None;
    for (n, line) in text.split('\n').enumerate() {
        if line.trim_end() == "---" || line.starts_with("--- ") {
            if let Some(done) = current.take() {
                files.push(file_of(done)?);
            }
            let path = line.trim_end().strip_prefix("---").unwrap_or_default().trim();
            if path.is_empty() {
                return Err(format!("Line {}: write the file's path after “--- ”.", n + 1));
            }
            current = Some((path.to_string(), Vec::new()));
        } else if let Some((_, lines)) = current.as_mut() {
            lines.push(line);
        } else if !line.trim().is_empty() {
            return Err(format!("Line {}: start each file with a line “--- path”.", n + 1));
        }
    }
    if let Some(done) = current.take() {
        files.push(file_of(done)?);
    }
    Ok(files)
}

fn file_of((path, mut lines): (String, Vec<&str>)) -> Result<WorkspaceFile, String> {
    while lines.last().is_some_and(|l| l.trim().is_empty()) {
        lines.pop();
    }
    if let Some(folder) = path.strip_suffix('/') {
        if !lines.is_empty() {
            return Err(format!("{path} ends in / so it is a folder, and a folder has no content."));
        }
        return Ok(WorkspaceFile { path: folder.to_string(), content: String::new(), is_dir: true });
    }
    let content = if lines.is_empty() { String::new() } else { format!("{}\n", lines.join("\n")) };
    Ok(WorkspaceFile { path, content, is_dir: false })
}

/// Files in the textarea format ([`parse_files`] reads it back).
pub fn files_text(files: &[WorkspaceFile]) -> String {
    let mut out = String::new();
    for f in files {
        if f.is_dir {
            out.push_str(&format!("--- {}/\n", f.path));
        } else {
            out.push_str(&format!("--- {}\n{}", f.path, f.content));
            if !f.content.is_empty() && !f.content.ends_with('\n') {
                out.push('\n');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{files_text, parse_files};
    use crate::agents::manifest::WorkspaceFile;

    fn file(path: &str, content: &str) -> WorkspaceFile {
        WorkspaceFile { path: path.into(), content: content.into(), is_dir: false }
    }

    #[test]
    fn files_and_folders_are_read_from_the_textarea() {
        let text = "--- review/SKILL.md\r\n# Review\r\n\r\nRead the diff.\r\n\r\n--- data/\r\n--- empty.txt\r\n";
        let files = parse_files(text).expect("parses");
        assert_eq!(
            files,
            vec![
                file("review/SKILL.md", "# Review\n\nRead the diff.\n"),
                WorkspaceFile { path: "data".into(), content: String::new(), is_dir: true },
                file("empty.txt", ""),
            ]
        );
        assert_eq!(parse_files("").expect("empty"), vec![]);
        assert_eq!(parse_files("\n  \n").expect("blank"), vec![]);
    }

    #[test]
    fn the_textarea_reads_back_what_it_shows() {
        let files =
            vec![file("a.md", "one\ntwo\n"), WorkspaceFile { path: "d".into(), content: String::new(), is_dir: true }];
        assert_eq!(files_text(&files), "--- a.md\none\ntwo\n--- d/\n");
        assert_eq!(parse_files(&files_text(&files)).expect("round trip"), files);
    }

    #[test]
    fn problems_name_the_line() {
        assert!(parse_files("hello\n--- a.md\n").unwrap_err().contains("Line 1"));
        assert!(parse_files("--- a.md\nx\n---\n").unwrap_err().contains("Line 3"));
        assert!(parse_files("--- d/\ncontent\n").unwrap_err().contains("folder"));
    }
}
