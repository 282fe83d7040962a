//! The README opens with a map of the crate's folders, one line each: the
//! map names every folder and nothing that is not one.

use std::collections::BTreeSet;
use std::path::Path;

fn folders(root: &Path, under: &Path, out: &mut BTreeSet<String>) {
    for entry in std::fs::read_dir(root.join(under)).expect("a readable folder") {
        let entry = entry.expect("a folder entry");
        let name = entry.file_name().to_string_lossy().into_owned();
        if !entry.file_type().expect("a file type").is_dir() || name.starts_with('.') {
            continue;
        }
        let path = under.join(&name);
        out.insert(format!("{}/", path.display()));
        folders(root, &path, out);
    }
}

#[test]
fn the_readme_opens_with_a_map_of_every_folder() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).expect("README.md");
    let map = readme
        .strip_prefix("# hub-example\n\n```text\n")
        .and_then(|rest| rest.split_once("\n```\n"))
        .map(|(map, _)| map)
        .expect("the README opens with its folder map in a text block");
    let mut listed = BTreeSet::new();
    for line in map.lines() {
        let (folder, what) = line.split_once(' ').expect("a folder, then what it holds");
        assert!(!what.trim().is_empty(), "{folder} says what it holds");
        assert!(listed.insert(folder.to_string()), "{folder} listed once");
    }
    let mut tree = BTreeSet::new();
    folders(root, Path::new(""), &mut tree);
    tree.retain(|folder| !folder.starts_with("target/"));
    assert_eq!(listed, tree, "the map and the folders");
}
