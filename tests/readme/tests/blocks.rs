//! Every README of the workspace with a Rust block is compiled as a
//! doctest (included whole with `#[doc = include_str!(..)]` by some crate),
//! and no block is left out with `ignore`: `no_run` compiles a block that
//! cannot run.

use std::fs;
use std::path::{Path, PathBuf};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// The files under `dir` whose name passes `wanted`, build output and
/// hidden directories left out.
fn files(dir: &Path, wanted: &dyn Fn(&Path) -> bool, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy();
        if name.starts_with('.') || name == "target" || name == "node_modules" {
            continue;
        }
        if path.is_dir() {
            files(&path, wanted, out);
        } else if wanted(&path) {
            out.push(path);
        }
    }
}

/// The info strings of `markdown`'s fenced Rust blocks (`rust`,
/// `rust,no_run`, ...), and of unlabelled ones, which rustdoc takes for
/// Rust too.
fn rust_fences(markdown: &str) -> Vec<String> {
    let mut fences = Vec::new();
    let mut open = false;
    for line in markdown.lines() {
        let Some(info) = line.trim_start().strip_prefix("```") else {
            continue;
        };
        if !open {
            let info = info.trim();
            let lang = info.split(',').next().unwrap_or("");
            if lang.is_empty() || lang == "rust" {
                fences.push(info.to_owned());
            }
        }
        open = !open;
    }
    fences
}

/// The fences of `fences` that rustdoc skips (`ignore`).
fn ignored(fences: &[String]) -> Vec<&str> {
    fences
        .iter()
        .map(String::as_str)
        .filter(|info| info.split(',').any(|attr| attr.trim() == "ignore"))
        .collect()
}

/// The files the workspace's Rust sources include as documentation.
fn included_docs(root: &Path) -> Vec<PathBuf> {
    let mut sources = Vec::new();
    files(
        root,
        &|p| p.extension().is_some_and(|e| e == "rs"),
        &mut sources,
    );
    let mut docs = Vec::new();
    for source in sources {
        let text = fs::read_to_string(&source).unwrap_or_default();
        for piece in text.split("#[doc = include_str!(\"").skip(1) {
            let Some((relative, _)) = piece.split_once('"') else {
                continue;
            };
            if let Ok(path) = source.parent().unwrap().join(relative).canonicalize() {
                docs.push(path);
            }
        }
    }
    docs
}

#[test]
fn every_readme_s_rust_blocks_are_compiled_and_none_is_ignored() {
    let root = workspace();
    let mut readmes = Vec::new();
    files(
        &root,
        &|p| p.file_name().is_some_and(|n| n == "README.md"),
        &mut readmes,
    );
    let included = included_docs(&root);
    let mut checked = 0;
    for readme in readmes {
        let fences = rust_fences(&fs::read_to_string(&readme).unwrap());
        if fences.is_empty() {
            continue;
        }
        let name = readme.strip_prefix(&root).unwrap().display().to_string();
        assert!(
            included.contains(&readme.canonicalize().unwrap()),
            "{name} has Rust blocks but no crate compiles it: include it in tests/readme/src/lib.rs"
        );
        let skipped = ignored(&fences);
        assert!(
            skipped.is_empty(),
            "{name} has blocks marked {skipped:?}: mark one `no_run` when it cannot run"
        );
        checked += 1;
    }
    assert!(
        checked >= 4,
        "only {checked} READMEs with Rust blocks found"
    );
}

#[test]
fn fences_are_read_as_rustdoc_reads_them() {
    let markdown = "```rust\na\n```\n```toml\n[x]\n```\n```\nb\n```\n  ```rust,no_run\nc\n  ```\n```sh\nd\n```\n";
    assert_eq!(rust_fences(markdown), ["rust", "", "rust,no_run"]);
    let skipped =
        rust_fences("```rust,ignore\na\n```\n```rust, ignore\nb\n```\n```rust,no_run\nc\n```\n");
    assert_eq!(ignored(&skipped), ["rust,ignore", "rust, ignore"]);
}
