//! The seeder's data: repeatable, pinned, and written only to a fresh database.

use super::*;

fn options(dir: &Path, name: &str, agents: u32, rand_seed: u64) -> SeedOptions {
    SeedOptions {
        db_path: dir.join(name),
        session_secret: "s".into(),
        agents,
        project_slug: "bench".into(),
        rand_seed,
    }
}

/// Every row of every table, in a stable order.
fn dump(path: &Path) -> Vec<String> {
    crate::store::seed::every_row(path).unwrap()
}

#[test]
fn the_same_seed_gives_the_same_data() {
    let dir = tempfile::tempdir().unwrap();
    let a = seed(&options(dir.path(), "a.db", 40, 7)).unwrap();
    let b = seed(&options(dir.path(), "b.db", 40, 7)).unwrap();
    let c = seed(&options(dir.path(), "c.db", 40, 8)).unwrap();
    assert_eq!(
        dump(&dir.path().join("a.db")),
        dump(&dir.path().join("b.db"))
    );
    assert_ne!(
        dump(&dir.path().join("a.db")),
        dump(&dir.path().join("c.db"))
    );
    let same = |d: &SeedDocument| SeedDocument {
        db_path: String::new(),
        seeded_at: String::new(),
        ..d.clone()
    };
    assert_eq!(same(&a), same(&b));
    assert_ne!(a.project_id, c.project_id);
}

/// SHA-256 of every row and of the document (less its path and time),
/// for the rand seed 42 at 30 agents.
fn digest(doc: &SeedDocument, db: &Path) -> String {
    use sha2::{Digest as _, Sha256};
    let mut hasher = Sha256::new();
    for row in dump(db) {
        hasher.update(row.as_bytes());
        hasher.update(b"\n");
    }
    let doc = SeedDocument {
        db_path: String::new(),
        seeded_at: String::new(),
        ..doc.clone()
    };
    hasher.update(serde_json::to_vec(&doc).unwrap());
    hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Pins the data itself, not only its repeatability: a change to the
/// seeder that moves a single draw, row or token changes the digest.
/// Benchmarks and budgets compare figures across seeds written by
/// different builds, so the data must not drift.
#[test]
fn the_data_of_a_seed_is_pinned() {
    let dir = tempfile::tempdir().unwrap();
    let doc = seed(&options(dir.path(), "hub.db", 30, 42)).unwrap();
    assert_eq!(
        digest(&doc, &dir.path().join("hub.db")),
        "c22ccd34f1fd0ab2f020f7ffb975b299ab07c8df69365aa0bf0f42e55f0eee83"
    );
}

#[test]
fn the_document_records_the_distribution_generated() {
    let dir = tempfile::tempdir().unwrap();
    let doc = seed(&options(dir.path(), "hub.db", 25, 42)).unwrap();
    for counts in [&doc.phase_counts, &doc.activity_counts, &doc.creator_counts] {
        assert_eq!(counts.values().sum::<u32>(), 25);
    }
    assert_eq!(doc.creator_counts.len(), 4, "every creator appears");
    assert!(doc.creator_counts.contains_key(&doc.member_user_id));
    let text = serde_json::to_string(&doc).unwrap();
    for field in [
        "projectId",
        "otherProjectId",
        "memberToken",
        "adminEmail",
        "phaseCounts",
        "randSeed",
        "seededAt",
        "dbPath",
    ] {
        assert!(text.contains(&format!("\"{field}\"")), "{field}");
    }
    assert!(
        !text.contains("\"s\""),
        "the session secret is not recorded"
    );
}

#[test]
fn a_non_empty_database_is_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("used.db");
    std::fs::write(&path, b"not empty").unwrap();
    let err = seed(&options(dir.path(), "used.db", 5, 42)).unwrap_err();
    assert!(matches!(err, SeedError::NotEmpty(_)), "{err}");
    assert_eq!(std::fs::read(&path).unwrap(), b"not empty");

    seed(&options(dir.path(), "hub.db", 5, 42)).unwrap();
    let before = dump(&dir.path().join("hub.db"));
    assert!(matches!(
        seed(&options(dir.path(), "hub.db", 5, 1)),
        Err(SeedError::NotEmpty(_))
    ));
    assert_eq!(dump(&dir.path().join("hub.db")), before);
}

#[cfg(unix)]
#[test]
fn the_seed_document_is_readable_by_its_owner_only() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let fresh = dir.path().join("seed.json");
    let existing = dir.path().join("old.json");
    std::fs::write(&existing, "old").unwrap();
    std::fs::set_permissions(&existing, std::fs::Permissions::from_mode(0o644)).unwrap();
    for (db, out) in [("a.db", &fresh), ("b.db", &existing)] {
        let doc = seed_to_file(&options(dir.path(), db, 3, 42), out).unwrap();
        let mode = std::fs::metadata(out).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{}", out.display());
        let text = std::fs::read_to_string(out).unwrap();
        assert!(text.contains(&doc.owner_token));
    }
}

#[test]
fn bad_options_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = options(dir.path(), "hub.db", 5, 42);
    o.project_slug = "Not A Slug".into();
    assert!(matches!(seed(&o), Err(SeedError::BadSlug)));
    o.project_slug = "ok".into();
    o.agents = MAX_AGENTS + 1;
    assert!(matches!(seed(&o), Err(SeedError::TooManyAgents)));
    assert!(!dir.path().join("hub.db").exists());
}
