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

use crate::auth::tokens::{TokenSigner, TokenSubject};
use crate::db::{migrate, postgres_url, Db, DbError, OpenMode, PoolOptions};
use crate::model::{uuid_from_bytes, AgentActivity, AgentPhase};

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
/// and extra fields ignored, so `hub-bench` can read documents of other
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

/// The role definitions the migrations create, by id.
const OWNER_ROLE: &str = "00000000-0000-4000-8000-000000000002";
const MEMBER_ROLE: &str = "00000000-0000-4000-8000-000000000003";

/// Seeds a fresh database and returns the seed document.
///
/// One step per entity, in a fixed order: every step draws from the same
/// PRNG, so the order is part of the data.
///
/// A `postgres://` URL as the path seeds that PostgreSQL database instead
/// (it must hold no table yet): the same rows, drawn the same way, are
/// written to an in-memory SQLite database first and then copied over in
/// one transaction, so both dialects get the same data byte for byte.
pub fn seed(options: &SeedOptions) -> Result<SeedDocument, SeedError> {
    check_options(options)?;
    if let Some(url) = postgres_url(&options.db_path) {
        if crate::db::postgres::holds_tables(url)? {
            return Err(SeedError::NotEmpty(
                crate::db::postgres::redacted(url).into(),
            ));
        }
        let mut staging = rusqlite::Connection::open_in_memory()?;
        migrate(&mut staging, SEED_EPOCH_MS)?;
        let doc = seed_into(&mut staging, options)?;
        crate::db::postgres::copy_seeded(&staging, url, SEED_EPOCH_MS)?;
        return Ok(doc);
    }
    let db = open_fresh(&options.db_path)?;
    let mut conn = db.conn()?;
    let doc = seed_into(&mut conn, options)?;
    drop(conn);
    Ok(doc)
}

/// Seeds the migrated, empty database behind `conn`.
fn seed_into(
    conn: &mut rusqlite::Connection,
    options: &SeedOptions,
) -> Result<SeedDocument, SeedError> {
    let mut rng = ChaCha8Rng::seed_from_u64(options.rand_seed);
    let slug = &options.project_slug;
    let tx = conn.transaction()?;

    let users = seed_users(&tx, &mut rng, slug)?;
    let projects = seed_projects(&tx, &mut rng, slug, &users)?;
    let groups = seed_groups(&tx, &mut rng, slug, &users)?;
    seed_role_bindings(&tx, &mut rng, &users, &projects, &groups)?;
    seed_delegations(&tx, &mut rng, &users, &projects)?;
    seed_access_constraints(&tx, &mut rng, &projects)?;
    let distribution = seed_agents(&tx, &mut rng, options.agents, &users, &projects)?;
    tx.commit()?;

    Ok(document(options, users, projects, distribution))
}

/// Refuses options the seeder cannot honour, before any file is touched.
fn check_options(options: &SeedOptions) -> Result<(), SeedError> {
    if options.agents > MAX_AGENTS {
        return Err(SeedError::TooManyAgents);
    }
    if !valid_slug(&options.project_slug) {
        return Err(SeedError::BadSlug);
    }
    if holds_data(&options.db_path) {
        return Err(SeedError::NotEmpty(options.db_path.clone()));
    }
    Ok(())
}

/// Opens (creating) the database, checks it holds nothing and migrates it.
fn open_fresh(path: &Path) -> Result<Db, SeedError> {
    let db = Db::open(path, OpenMode::CreateIfMissing, PoolOptions::default())?;
    let mut conn = db.conn()?;
    // Checked again on the open file: a file created meanwhile is not ours to fill.
    let tables: i64 = conn.query_row("SELECT COUNT(*) FROM sqlite_master", [], |r| r.get(0))?;
    if tables > 0 {
        return Err(SeedError::NotEmpty(path.to_path_buf()));
    }
    migrate(&mut conn, SEED_EPOCH_MS)?;
    drop(conn);
    Ok(db)
}

/// A seeded user.
struct SeededUser {
    id: String,
    email: String,
}

/// The people of the data set.
struct Users {
    /// Owns both projects.
    owner: SeededUser,
    /// A non-admin member of the main project, through a group.
    member: SeededUser,
    /// An unscoped platform admin.
    admin: SeededUser,
    /// Two more members of the main project, agent creators.
    developers: [SeededUser; 2],
}

impl Users {
    /// The users agents are created by, each at least once.
    fn creators(&self) -> [&String; 4] {
        [
            &self.owner.id,
            &self.member.id,
            &self.developers[0].id,
            &self.developers[1].id,
        ]
    }

    /// The main project's members besides its owner.
    fn members(&self) -> [&String; 3] {
        [
            &self.member.id,
            &self.developers[0].id,
            &self.developers[1].id,
        ]
    }
}

fn insert_user(
    tx: &Transaction<'_>,
    rng: &mut ChaCha8Rng,
    email: String,
    name: &str,
    admin: bool,
) -> Result<SeededUser, SeedError> {
    let id = new_id(rng);
    tx.execute(
        "INSERT INTO users (id, email, display_name, is_platform_admin, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
        params![id, email, name, admin, SEED_EPOCH_MS],
    )?;
    Ok(SeededUser { id, email })
}

/// The owner, the member, the admin and two developers.
fn seed_users(tx: &Transaction<'_>, rng: &mut ChaCha8Rng, slug: &str) -> Result<Users, SeedError> {
    let email = |name: &str| format!("{name}@{slug}.example.com");
    Ok(Users {
        owner: insert_user(tx, rng, email("owner"), "Olivia Owner", false)?,
        member: insert_user(tx, rng, email("member"), "Max Member", false)?,
        admin: insert_user(tx, rng, email("admin"), "Ada Admin", true)?,
        developers: [
            insert_user(tx, rng, email("dev1"), "Dana Developer", false)?,
            insert_user(tx, rng, email("dev2"), "Deniz Developer", false)?,
        ],
    })
}

/// The main project and the second, small one.
struct Projects {
    main: String,
    other: String,
}

/// Both projects, owned by the owner; the member and the developers are
/// members of the main one only.
fn seed_projects(
    tx: &Transaction<'_>,
    rng: &mut ChaCha8Rng,
    slug: &str,
    users: &Users,
) -> Result<Projects, SeedError> {
    let projects = Projects {
        main: new_id(rng),
        other: new_id(rng),
    };
    for (id, project_slug, name) in [
        (&projects.main, slug.to_owned(), format!("Bench {slug}")),
        (
            &projects.other,
            format!("{slug}-other"),
            format!("Bench {slug} (other)"),
        ),
    ] {
        tx.execute(
            "INSERT INTO projects (id, slug, name, created_by, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![id, project_slug, name, users.owner.id, SEED_EPOCH_MS],
        )?;
    }
    let mut membership = tx.prepare(
        "INSERT INTO project_memberships (project_id, user_id, role, created_at) VALUES (?1, ?2, ?3, ?4)",
    )?;
    for project in [&projects.main, &projects.other] {
        membership.execute(params![project, users.owner.id, "owner", SEED_EPOCH_MS])?;
    }
    for user in users.members() {
        membership.execute(params![projects.main, user, "member", SEED_EPOCH_MS])?;
    }
    Ok(projects)
}

/// The groups: `everyone` <- `engineering` <- `<slug>-members`.
struct Groups {
    members: String,
}

/// The group chain; the owner manages `engineering`, the main project's
/// members are in `<slug>-members`.
fn seed_groups(
    tx: &Transaction<'_>,
    rng: &mut ChaCha8Rng,
    slug: &str,
    users: &Users,
) -> Result<Groups, SeedError> {
    let everyone = new_id(rng);
    let engineering = new_id(rng);
    let members = new_id(rng);
    for (id, group_slug, name) in [
        (&everyone, "everyone".to_owned(), "Everyone".to_owned()),
        (
            &engineering,
            "engineering".to_owned(),
            "Engineering".to_owned(),
        ),
        (
            &members,
            format!("{slug}-members"),
            format!("{slug} members"),
        ),
    ] {
        tx.execute(
            "INSERT INTO groups (id, slug, name, created_at) VALUES (?1, ?2, ?3, ?4)",
            params![id, group_slug, name, SEED_EPOCH_MS],
        )?;
    }
    tx.execute(
        "INSERT INTO group_parents (group_id, parent_id) VALUES (?1, ?2), (?3, ?4)",
        params![engineering, everyone, members, engineering],
    )?;
    let mut group_member = tx.prepare(
        "INSERT INTO group_members (group_id, principal_kind, principal_id, role) VALUES (?1, 'user', ?2, ?3)",
    )?;
    group_member.execute(params![engineering, users.owner.id, "manager"])?;
    for user in users.members() {
        group_member.execute(params![members, user, "member"])?;
    }
    Ok(Groups { members })
}

/// The owner owns both projects; the members group works in the main one.
fn seed_role_bindings(
    tx: &Transaction<'_>,
    rng: &mut ChaCha8Rng,
    users: &Users,
    projects: &Projects,
    groups: &Groups,
) -> Result<(), SeedError> {
    let mut binding = tx.prepare(
        "INSERT INTO role_bindings (id, principal_kind, principal_id, role_id, scope_kind, scope_id, created_at)
         VALUES (?1, ?2, ?3, ?4, 'project', ?5, ?6)",
    )?;
    for (kind, principal, role, project) in [
        ("user", &users.owner.id, OWNER_ROLE, &projects.main),
        ("user", &users.owner.id, OWNER_ROLE, &projects.other),
        ("group", &groups.members, MEMBER_ROLE, &projects.main),
    ] {
        binding.execute(params![
            new_id(rng),
            kind,
            principal,
            role,
            project,
            SEED_EPOCH_MS
        ])?;
    }
    Ok(())
}

/// The owner lets the member start and stop agents in the main project.
fn seed_delegations(
    tx: &Transaction<'_>,
    rng: &mut ChaCha8Rng,
    users: &Users,
    projects: &Projects,
) -> Result<(), SeedError> {
    tx.execute(
        "INSERT INTO delegation_edges (id, delegator_user_id, delegate_kind, delegate_id, project_id, actions, created_at)
         VALUES (?1, ?2, 'user', ?3, ?4, ?5, ?6)",
        params![
            new_id(rng),
            users.owner.id,
            users.member.id,
            projects.main,
            r#"["agent.start","agent.stop"]"#,
            SEED_EPOCH_MS
        ],
    )?;
    Ok(())
}

/// The same three phase constraints in both projects.
fn seed_access_constraints(
    tx: &Transaction<'_>,
    rng: &mut ChaCha8Rng,
    projects: &Projects,
) -> Result<(), SeedError> {
    let mut constraint = tx.prepare(
        "INSERT INTO access_constraints (id, project_id, action, deny_phases, description) VALUES (?1, ?2, ?3, ?4, ?5)",
    )?;
    for project in [&projects.main, &projects.other] {
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
            constraint.execute(params![new_id(rng), project, action, phases, description])?;
        }
    }
    Ok(())
}

/// The main project's agents, counted as the document reports them.
#[derive(Default)]
struct Distribution {
    phase_counts: BTreeMap<String, u32>,
    activity_counts: BTreeMap<String, u32>,
    creator_counts: BTreeMap<String, u32>,
}

/// `agents` synthetic agents in the main project, then
/// [`OTHER_PROJECT_AGENTS`] in the other, all created by the owner.
fn seed_agents(
    tx: &Transaction<'_>,
    rng: &mut ChaCha8Rng,
    agents: u32,
    users: &Users,
    projects: &Projects,
) -> Result<Distribution, SeedError> {
    let creators = users.creators();
    let mut insert = tx.prepare(
        "INSERT INTO agents (id, project_id, name, phase, activity, created_by, created_at, updated_at, config)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )?;
    let mut distribution = Distribution::default();
    for index in 0..agents {
        // Every creator appears once before the draw, so a small project has
        // them all and per-creator reads are the same at every size.
        let creator = if (index as usize) < creators.len() {
            creators[index as usize]
        } else {
            *pick(rng, &creators)
        };
        let (phase, activity) = insert_agent(&mut insert, rng, &projects.main, index, creator)?;
        *distribution
            .phase_counts
            .entry(phase.as_str().to_owned())
            .or_insert(0) += 1;
        *distribution
            .activity_counts
            .entry(activity.as_str().to_owned())
            .or_insert(0) += 1;
        *distribution
            .creator_counts
            .entry(creator.clone())
            .or_insert(0) += 1;
    }
    for index in 0..OTHER_PROJECT_AGENTS {
        insert_agent(&mut insert, rng, &projects.other, index, &users.owner.id)?;
    }
    Ok(distribution)
}

/// Draws one agent (name, phase, activity, times, config) and inserts it.
fn insert_agent(
    insert: &mut rusqlite::Statement<'_>,
    rng: &mut ChaCha8Rng,
    project: &str,
    index: u32,
    creator: &str,
) -> Result<(AgentPhase, AgentActivity), SeedError> {
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
    insert.execute(params![
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
}

/// The seed document: ids, emails, bearer tokens signed with the session
/// secret's key, and the distribution generated.
fn document(
    options: &SeedOptions,
    users: Users,
    projects: Projects,
    distribution: Distribution,
) -> SeedDocument {
    let signer = TokenSigner::from_session_secret(&options.session_secret);
    let token =
        |user: &SeededUser| signer.issue(&TokenSubject::User(user.id.clone()), TOKEN_EXPIRY_SECS);
    SeedDocument {
        owner_token: token(&users.owner),
        member_token: token(&users.member),
        admin_token: token(&users.admin),
        project_id: projects.main,
        project_slug: options.project_slug.clone(),
        other_project_id: projects.other,
        owner_user_id: users.owner.id,
        owner_email: users.owner.email,
        member_user_id: users.member.id,
        member_email: users.member.email,
        admin_user_id: users.admin.id,
        admin_email: users.admin.email,
        agent_count: options.agents,
        other_agent_count: OTHER_PROJECT_AGENTS,
        rand_seed: options.rand_seed,
        db_path: crate::db::postgres::redacted(&options.db_path.display().to_string()),
        seeded_at: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
        phase_counts: distribution.phase_counts,
        activity_counts: distribution.activity_counts,
        creator_counts: distribution.creator_counts,
    }
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
            "36f4e1099f08d809e92452f1115ce8abb300a407920a8bf35c157dc9cc840bfe"
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
}
