//! The seeder: writes one project with an owner, a non-admin member, a
//! platform admin, groups, bindings, a delegation, access constraints, a
//! second small project and N synthetic agents into a fresh database, and
//! returns the seed document benchmarks read.
//!
//! Everything is drawn from a ChaCha PRNG seeded with `rand_seed` and dated
//! from a fixed epoch, so the same seed gives the same data byte for byte
//! (only `seededAt` and `dbPath` in the document vary).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rusqlite::{params, Transaction};
use serde::{Deserialize, Serialize};

use crate::db::{migrate, Db, DbError, OpenMode, PoolOptions};
use crate::model::{uuid_from_bytes, AgentActivity, AgentPhase};
use crate::tokens::{TokenSigner, TokenSubject};

/// 2026-01-01T00:00:00Z: every seeded time is an offset from here.
pub const SEED_EPOCH_MS: i64 = 1_767_225_600_000;
/// Seeded bearer tokens expire at 2100-01-01T00:00:00Z.
pub const TOKEN_EXPIRY_SECS: i64 = 4_102_444_800;
/// Agents in the second project.
pub const OTHER_PROJECT_AGENTS: u32 = 10;
/// Most agents one seed writes.
pub const MAX_AGENTS: u32 = 100_000;

/// What to seed.
#[derive(Debug, Clone)]
pub struct SeedOptions {
    /// The database file (must not exist or be empty).
    pub db_path: PathBuf,
    /// The Hub's session secret (tokens are signed with a key derived from it).
    pub session_secret: String,
    /// Agents in the main project.
    pub agents: u32,
    /// The main project's slug.
    pub project_slug: String,
    /// The PRNG seed.
    pub rand_seed: u64,
}

/// The seed document (`--out`). Read back with defaults for missing fields
/// and extra fields ignored, so the harness can read documents of other
/// versions (it checks the fields it needs).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SeedDocument {
    /// The main project.
    pub project_id: String,
    /// Its slug.
    pub project_slug: String,
    /// The second project (the member has no role there).
    pub other_project_id: String,
    /// The owner of both projects.
    pub owner_user_id: String,
    /// The owner's email.
    pub owner_email: String,
    /// The owner's bearer token.
    pub owner_token: String,
    /// The non-admin member of the main project.
    pub member_user_id: String,
    /// The member's email.
    pub member_email: String,
    /// The member's bearer token.
    pub member_token: String,
    /// The unscoped platform admin.
    pub admin_user_id: String,
    /// The admin's email.
    pub admin_email: String,
    /// The admin's bearer token.
    pub admin_token: String,
    /// Agents in the main project.
    pub agent_count: u32,
    /// Agents in the second project.
    pub other_agent_count: u32,
    /// The PRNG seed.
    pub rand_seed: u64,
    /// The database file.
    pub db_path: String,
    /// When the seed ran (RFC 3339).
    pub seeded_at: String,
    /// Main-project agents per phase.
    pub phase_counts: BTreeMap<String, u32>,
    /// Main-project agents per activity.
    pub activity_counts: BTreeMap<String, u32>,
    /// Main-project agents per creator user id.
    pub creator_counts: BTreeMap<String, u32>,
}

/// Why seeding failed.
#[derive(Debug, thiserror::Error)]
pub enum SeedError {
    /// The database file already holds data.
    #[error("database {0} is not empty; the seeder needs a fresh database (nothing was changed)")]
    NotEmpty(PathBuf),
    /// Too many agents asked for.
    #[error("--agents must be at most {MAX_AGENTS}")]
    TooManyAgents,
    /// The slug is not a valid project slug.
    #[error("--project-slug must be 1 to 48 lowercase letters, digits or '-'")]
    BadSlug,
    /// The database failed.
    #[error(transparent)]
    Db(#[from] DbError),
}

impl From<rusqlite::Error> for SeedError {
    fn from(e: rusqlite::Error) -> Self {
        SeedError::Db(DbError::Sql(e))
    }
}

const ADJECTIVES: [&str; 16] = [
    "amber", "brisk", "calm", "dusky", "eager", "fleet", "gentle", "hardy", "ivory", "jolly",
    "keen", "lucid", "mellow", "nimble", "olive", "plucky",
];
const NOUNS: [&str; 16] = [
    "otter", "falcon", "badger", "heron", "lynx", "marten", "osprey", "puffin", "quail", "raven",
    "stoat", "tern", "vole", "wren", "yak", "zebu",
];
const TEMPLATES: [&str; 4] = [
    "claude-default",
    "gemini-default",
    "codex-review",
    "docs-writer",
];
const HARNESSES: [&str; 3] = ["claude", "gemini", "codex"];
const MODELS: [&str; 4] = ["sonnet", "opus", "flash", "pro"];
/// Phase weights, in [`AgentPhase::ALL`] order.
const PHASE_WEIGHTS: [u32; 5] = [10, 10, 45, 25, 10];

fn pick<'a, T>(rng: &mut ChaCha8Rng, items: &'a [T]) -> &'a T {
    &items[rng.random_range(0..items.len())]
}

fn weighted(rng: &mut ChaCha8Rng, weights: &[u32]) -> usize {
    let total: u32 = weights.iter().sum();
    let mut roll = rng.random_range(0..total);
    for (i, w) in weights.iter().enumerate() {
        if roll < *w {
            return i;
        }
        roll -= w;
    }
    weights.len() - 1
}

fn new_id(rng: &mut ChaCha8Rng) -> String {
    uuid_from_bytes(rng.random())
}

fn valid_slug(slug: &str) -> bool {
    !slug.is_empty()
        && slug.len() <= 48
        && slug
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// Whether the file at `path` holds anything (a fresh database is missing or empty).
fn holds_data(path: &Path) -> bool {
    std::fs::metadata(path)
        .map(|m| m.len() > 0)
        .unwrap_or(false)
}

struct Seeded {
    user: String,
}

fn insert_user(
    tx: &Transaction<'_>,
    rng: &mut ChaCha8Rng,
    email: &str,
    name: &str,
    admin: bool,
) -> Result<Seeded, SeedError> {
    let id = new_id(rng);
    tx.execute(
        "INSERT INTO users (id, email, display_name, is_platform_admin, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
        params![id, email, name, admin, SEED_EPOCH_MS],
    )?;
    Ok(Seeded { user: id })
}

/// Seeds a fresh database and returns the seed document.
pub fn seed(options: &SeedOptions) -> Result<SeedDocument, SeedError> {
    if options.agents > MAX_AGENTS {
        return Err(SeedError::TooManyAgents);
    }
    if !valid_slug(&options.project_slug) {
        return Err(SeedError::BadSlug);
    }
    if holds_data(&options.db_path) {
        return Err(SeedError::NotEmpty(options.db_path.clone()));
    }
    let db = Db::open(
        &options.db_path,
        OpenMode::CreateIfMissing,
        PoolOptions::default(),
    )?;
    let mut conn = db.conn()?;
    // Checked again on the open file: a file created meanwhile is not ours to fill.
    let tables: i64 = conn.query_row("SELECT COUNT(*) FROM sqlite_master", [], |r| r.get(0))?;
    if tables > 0 {
        return Err(SeedError::NotEmpty(options.db_path.clone()));
    }
    migrate(&mut conn, SEED_EPOCH_MS)?;

    let mut rng = ChaCha8Rng::seed_from_u64(options.rand_seed);
    let slug = &options.project_slug;
    let signer = TokenSigner::from_session_secret(&options.session_secret);
    let tx = conn.transaction()?;

    let owner_email = format!("owner@{slug}.example.com");
    let member_email = format!("member@{slug}.example.com");
    let admin_email = format!("admin@{slug}.example.com");
    let owner = insert_user(&tx, &mut rng, &owner_email, "Olivia Owner", false)?;
    let member = insert_user(&tx, &mut rng, &member_email, "Max Member", false)?;
    let admin = insert_user(&tx, &mut rng, &admin_email, "Ada Admin", true)?;
    let dev1 = insert_user(
        &tx,
        &mut rng,
        &format!("dev1@{slug}.example.com"),
        "Dana Developer",
        false,
    )?;
    let dev2 = insert_user(
        &tx,
        &mut rng,
        &format!("dev2@{slug}.example.com"),
        "Deniz Developer",
        false,
    )?;
    let creators = [&owner.user, &member.user, &dev1.user, &dev2.user];

    let project_id = new_id(&mut rng);
    let other_project_id = new_id(&mut rng);
    for (id, pslug, name) in [
        (&project_id, slug.clone(), format!("Bench {slug}")),
        (
            &other_project_id,
            format!("{slug}-other"),
            format!("Bench {slug} (other)"),
        ),
    ] {
        tx.execute(
            "INSERT INTO projects (id, slug, name, created_by, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![id, pslug, name, owner.user, SEED_EPOCH_MS],
        )?;
    }
    let mut membership = tx.prepare(
        "INSERT INTO project_memberships (project_id, user_id, role, created_at) VALUES (?1, ?2, ?3, ?4)",
    )?;
    membership.execute(params![project_id, owner.user, "owner", SEED_EPOCH_MS])?;
    membership.execute(params![
        other_project_id,
        owner.user,
        "owner",
        SEED_EPOCH_MS
    ])?;
    for user in [&member.user, &dev1.user, &dev2.user] {
        membership.execute(params![project_id, user, "member", SEED_EPOCH_MS])?;
    }
    drop(membership);

    // Groups: everyone <- engineering <- <slug>-members.
    let everyone = new_id(&mut rng);
    let engineering = new_id(&mut rng);
    let members_group = new_id(&mut rng);
    for (id, gslug, name) in [
        (&everyone, "everyone".to_owned(), "Everyone".to_owned()),
        (
            &engineering,
            "engineering".to_owned(),
            "Engineering".to_owned(),
        ),
        (
            &members_group,
            format!("{slug}-members"),
            format!("{slug} members"),
        ),
    ] {
        tx.execute(
            "INSERT INTO groups (id, slug, name, created_at) VALUES (?1, ?2, ?3, ?4)",
            params![id, gslug, name, SEED_EPOCH_MS],
        )?;
    }
    tx.execute(
        "INSERT INTO group_parents (group_id, parent_id) VALUES (?1, ?2), (?3, ?4)",
        params![engineering, everyone, members_group, engineering],
    )?;
    let mut group_member = tx.prepare(
        "INSERT INTO group_members (group_id, principal_kind, principal_id, role) VALUES (?1, 'user', ?2, ?3)",
    )?;
    group_member.execute(params![engineering, owner.user, "manager"])?;
    for user in [&member.user, &dev1.user, &dev2.user] {
        group_member.execute(params![members_group, user, "member"])?;
    }
    drop(group_member);

    // Bindings: the owner owns both projects; the members group works in the main one.
    const OWNER_ROLE: &str = "00000000-0000-4000-8000-000000000002";
    const MEMBER_ROLE: &str = "00000000-0000-4000-8000-000000000003";
    let mut binding = tx.prepare(
        "INSERT INTO role_bindings (id, principal_kind, principal_id, role_id, scope_kind, scope_id, created_at)
         VALUES (?1, ?2, ?3, ?4, 'project', ?5, ?6)",
    )?;
    binding.execute(params![
        new_id(&mut rng),
        "user",
        owner.user,
        OWNER_ROLE,
        project_id,
        SEED_EPOCH_MS
    ])?;
    binding.execute(params![
        new_id(&mut rng),
        "user",
        owner.user,
        OWNER_ROLE,
        other_project_id,
        SEED_EPOCH_MS
    ])?;
    binding.execute(params![
        new_id(&mut rng),
        "group",
        members_group,
        MEMBER_ROLE,
        project_id,
        SEED_EPOCH_MS
    ])?;
    drop(binding);

    // The owner lets the member start and stop agents in the main project.
    tx.execute(
        "INSERT INTO delegation_edges (id, delegator_user_id, delegate_kind, delegate_id, project_id, actions, created_at)
         VALUES (?1, ?2, 'user', ?3, ?4, ?5, ?6)",
        params![
            new_id(&mut rng),
            owner.user,
            member.user,
            project_id,
            r#"["agent.start","agent.stop"]"#,
            SEED_EPOCH_MS
        ],
    )?;

    let mut constraint = tx.prepare(
        "INSERT INTO access_constraints (id, project_id, action, deny_phases, description) VALUES (?1, ?2, ?3, ?4, ?5)",
    )?;
    for project in [&project_id, &other_project_id] {
        for (action, phases, description) in [
            (
                "agent.message",
                r#"["created","stopped","error"]"#,
                "only live agents take messages",
            ),
            (
                "agent.attach",
                r#"["stopped","error"]"#,
                "attach needs a container",
            ),
            (
                "agent.delete",
                r#"["provisioning","running"]"#,
                "stop an agent before deleting it",
            ),
        ] {
            constraint.execute(params![
                new_id(&mut rng),
                project,
                action,
                phases,
                description
            ])?;
        }
    }
    drop(constraint);

    let mut phase_counts = BTreeMap::new();
    let mut activity_counts = BTreeMap::new();
    let mut creator_counts = BTreeMap::new();
    let mut agent = tx.prepare(
        "INSERT INTO agents (id, project_id, name, phase, activity, created_by, created_at, updated_at, config)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )?;
    let mut write_agent = |rng: &mut ChaCha8Rng,
                           project: &str,
                           index: u32,
                           creator: &str|
     -> Result<(AgentPhase, AgentActivity), SeedError> {
        let id = new_id(rng);
        let name = format!(
            "{}-{}-{index:05}",
            pick(rng, &ADJECTIVES),
            pick(rng, &NOUNS)
        );
        let phase = AgentPhase::ALL[weighted(rng, &PHASE_WEIGHTS)];
        let activity = *pick(rng, &AgentActivity::ALL);
        let created_at = SEED_EPOCH_MS + i64::from(index) * 60_000 + rng.random_range(0..60_000);
        let updated_at = created_at + rng.random_range(0..86_400_000);
        let config = serde_json::json!({
            "template": pick(rng, &TEMPLATES),
            "harness": pick(rng, &HARNESSES),
            "model": pick(rng, &MODELS),
            "branch": format!("agents/{name}"),
            "maxTurns": rng.random_range(10..200),
        })
        .to_string();
        agent.execute(params![
            id,
            project,
            name,
            phase.as_str(),
            activity.as_str(),
            creator,
            created_at,
            updated_at,
            config
        ])?;
        Ok((phase, activity))
    };
    for index in 0..options.agents {
        // Every creator appears once before the draw, so a small project has
        // them all and per-creator reads are the same at every size.
        let creator = if (index as usize) < creators.len() {
            creators[index as usize]
        } else {
            *pick(&mut rng, &creators)
        };
        let (phase, activity) = write_agent(&mut rng, &project_id, index, creator)?;
        *phase_counts.entry(phase.as_str().to_owned()).or_insert(0) += 1;
        *activity_counts
            .entry(activity.as_str().to_owned())
            .or_insert(0) += 1;
        *creator_counts.entry(creator.clone()).or_insert(0) += 1;
    }
    for index in 0..OTHER_PROJECT_AGENTS {
        write_agent(&mut rng, &other_project_id, index, &owner.user)?;
    }
    drop(agent);
    tx.commit()?;
    drop(conn);

    let token = |user: &str| signer.issue(&TokenSubject::User(user.to_owned()), TOKEN_EXPIRY_SECS);
    Ok(SeedDocument {
        owner_token: token(&owner.user),
        member_token: token(&member.user),
        admin_token: token(&admin.user),
        project_id,
        project_slug: slug.clone(),
        other_project_id,
        owner_user_id: owner.user,
        owner_email,
        member_user_id: member.user,
        member_email,
        admin_user_id: admin.user,
        admin_email,
        agent_count: options.agents,
        other_agent_count: OTHER_PROJECT_AGENTS,
        rand_seed: options.rand_seed,
        db_path: options.db_path.display().to_string(),
        seeded_at: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
        phase_counts,
        activity_counts,
        creator_counts,
    })
}

/// Seeds and writes the document to `out` (pretty JSON). The output's folder
/// is checked before the database is touched.
pub fn seed_to_file(options: &SeedOptions, out: &Path) -> Result<SeedDocument, SeedFileError> {
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        if !dir.is_dir() {
            return Err(SeedFileError::OutDir(dir.to_path_buf()));
        }
    }
    let doc = seed(options)?;
    let mut text = serde_json::to_string_pretty(&doc).expect("seed document serializes");
    text.push('\n');
    write_private(out, text.as_bytes()).map_err(|e| SeedFileError::Write(out.to_path_buf(), e))?;
    Ok(doc)
}

/// Writes `bytes` to `path`, readable and writable by its owner only (the
/// seed document holds bearer tokens): a new file is created with mode
/// 0600, an existing one is narrowed to it before anything is written.
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(path)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    }
    file.set_len(0)?;
    file.write_all(bytes)?;
    file.sync_all()
}

/// Why seeding to a file failed.
#[derive(Debug, thiserror::Error)]
pub enum SeedFileError {
    /// Seeding failed.
    #[error(transparent)]
    Seed(#[from] SeedError),
    /// The output folder does not exist.
    #[error("output folder {0} does not exist")]
    OutDir(PathBuf),
    /// The document could not be written.
    #[error("cannot write {0}: {1}")]
    Write(PathBuf, std::io::Error),
}

#[cfg(test)]
mod tests {
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
        let conn = rusqlite::Connection::open(path).unwrap();
        let tables: Vec<String> = conn
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let mut rows = Vec::new();
        for table in tables {
            let mut stmt = conn
                .prepare(&format!("SELECT * FROM {table} ORDER BY 1, 2"))
                .unwrap();
            let n = stmt.column_count();
            let mut q = stmt.query([]).unwrap();
            while let Some(row) = q.next().unwrap() {
                let values: Vec<String> = (0..n)
                    .map(|i| format!("{:?}", row.get_ref(i).unwrap()))
                    .collect();
                rows.push(format!("{table}: {}", values.join("|")));
            }
        }
        rows
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
}
