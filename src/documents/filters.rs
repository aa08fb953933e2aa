//! How `/documents` orders and narrows files: `sort=newest|name|size` and
//! `type=images|documents|data|code` (by extension), each parsed from the query and said in words.

use std::cmp::Ordering;

use super::model::FileItem;

/// The order of a group's rows and of search hits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Sort {
    /// Most recently changed first (the default).
    #[default]
    Newest,
    /// By file name, ignoring case.
    Name,
    /// Largest first.
    Size,
}

impl Sort {
    pub const ALL: [Sort; 3] = [Sort::Newest, Sort::Name, Sort::Size];

    pub fn parse(s: &str) -> Option<Sort> {
        Sort::ALL.into_iter().find(|k| k.as_str() == s)
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Sort::Newest => "newest",
            Sort::Name => "name",
            Sort::Size => "size",
        }
    }
    pub fn label(self) -> &'static str {
        match self {
            Sort::Newest => "Newest first",
            Sort::Name => "Name",
            Sort::Size => "Largest first",
        }
    }
    /// Compares two files in this order; ties broken by path, then workspace.
    pub fn cmp(self, a: &FileItem, b: &FileItem) -> Ordering {
        let first = match self {
            Sort::Newest => b.modified_at.as_deref().cmp(&a.modified_at.as_deref()),
            Sort::Name => a.name.to_lowercase().cmp(&b.name.to_lowercase()),
            Sort::Size => b.size.unwrap_or(0).cmp(&a.size.unwrap_or(0)),
        };
        first.then_with(|| a.path.cmp(&b.path)).then_with(|| a.workspace_id.cmp(&b.workspace_id))
    }
}

/// What kind of file a `type` filter keeps, by extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Type {
    Images,
    Documents,
    Data,
    Code,
}

const IMAGES: &[&str] = &["png", "jpg", "jpeg", "gif", "webp", "svg", "bmp", "tif", "tiff", "heic", "avif", "ico"];
const DOCUMENTS: &[&str] =
    &["pdf", "md", "markdown", "txt", "rtf", "doc", "docx", "odt", "ppt", "pptx", "odp", "html", "htm", "epub", "tex"];
const DATA: &[&str] = &[
    "csv", "tsv", "json", "jsonl", "ndjson", "xml", "yaml", "yml", "toml", "parquet", "xls", "xlsx", "ods", "sqlite",
    "db", "avro", "arrow",
];
const CODE: &[&str] = &[
    "py", "rs", "js", "mjs", "cjs", "ts", "tsx", "jsx", "go", "java", "kt", "c", "h", "cc", "cpp", "hpp", "cs", "rb",
    "php", "swift", "scala", "sh", "bash", "zsh", "ps1", "sql", "r", "lua", "pl", "css", "scss", "ipynb", "vue",
    "svelte",
];

impl Type {
    pub const ALL: [Type; 4] = [Type::Images, Type::Documents, Type::Data, Type::Code];

    pub fn parse(s: &str) -> Option<Type> {
        Type::ALL.into_iter().find(|t| t.as_str() == s)
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Type::Images => "images",
            Type::Documents => "documents",
            Type::Data => "data",
            Type::Code => "code",
        }
    }
    pub fn label(self) -> &'static str {
        match self {
            Type::Images => "Images",
            Type::Documents => "Documents",
            Type::Data => "Data",
            Type::Code => "Code",
        }
    }
    /// The files counted, in words: "1 image", "12 code files".
    pub fn nouns(self) -> (&'static str, &'static str) {
        match self {
            Type::Images => ("image", "images"),
            Type::Documents => ("document", "documents"),
            Type::Data => ("data file", "data files"),
            Type::Code => ("code file", "code files"),
        }
    }
    fn extensions(self) -> &'static [&'static str] {
        match self {
            Type::Images => IMAGES,
            Type::Documents => DOCUMENTS,
            Type::Data => DATA,
            Type::Code => CODE,
        }
    }
    /// Whether the path's extension (any case) is of this type (nothing allocated).
    pub fn admits(self, path: &str) -> bool {
        let name = path.rsplit('/').next().unwrap_or(path);
        match name.rsplit_once('.') {
            Some((stem, ext)) if !stem.is_empty() => self.extensions().iter().any(|e| e.eq_ignore_ascii_case(ext)),
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_type_is_known_by_its_extension_in_any_case() {
        assert!(Type::Images.admits("charts/Growth.PNG"));
        assert!(Type::Documents.admits("report.md") && Type::Documents.admits("a/b.pdf"));
        assert!(Type::Data.admits("squares.csv") && Type::Data.admits("config.json"));
        assert!(Type::Code.admits("src/app.py") && !Type::Code.admits("README"));
        assert!(!Type::Images.admits(".png") && !Type::Data.admits("csv"));
        assert_eq!(Type::parse("code"), Some(Type::Code));
        assert_eq!((Type::parse("videos"), Sort::parse("oldest")), (None, None));
    }
}
