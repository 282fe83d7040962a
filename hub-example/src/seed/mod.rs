//! The seeder: writes one project with an owner, a non-admin member, a
//! platform admin, groups, bindings, a delegation, access constraints, a
//! second small project and N synthetic agents into a fresh database, and
//! returns the seed document benchmarks read.
//!
//! Everything is drawn from a ChaCha PRNG seeded with `rand_seed` and dated
//! from a fixed epoch, so the same seed gives the same data byte for byte
//! (only `seededAt` and `dbPath` in the document vary).

mod data;
mod file;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::auth::tokens::{TokenSigner, TokenSubject};
use crate::store::db::{postgres_url, DbError};
use crate::store::seed::SeedTarget;
use data::{Distribution, Projects, SeededUser, Users};
pub use file::seed_to_file;

/// 2026-01-01T00:00:00Z: every seeded time is an offset from here.
pub(crate) const SEED_EPOCH_MS: i64 = 1_767_225_600_000;
/// Seeded bearer tokens expire at 2100-01-01T00:00:00Z.
pub const TOKEN_EXPIRY_SECS: i64 = 4_102_444_800;
/// Agents in the second project.
pub const OTHER_PROJECT_AGENTS: u32 = 10;
/// Most agents one seed writes.
pub(crate) const MAX_AGENTS: u32 = 100_000;

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
    pub(crate) seeded_at: String,
    /// Main-project agents per phase.
    pub phase_counts: BTreeMap<String, u32>,
    /// Main-project agents per activity.
    pub(crate) activity_counts: BTreeMap<String, u32>,
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
    let not_empty = || match postgres_url(&options.db_path) {
        Some(url) => SeedError::NotEmpty(crate::store::postgres::redacted(url).into()),
        None => SeedError::NotEmpty(options.db_path.clone()),
    };
    let target = SeedTarget::open_fresh(&options.db_path, SEED_EPOCH_MS)?.ok_or_else(not_empty)?;
    target.write(SEED_EPOCH_MS, |writer| {
        let mut rng = ChaCha8Rng::seed_from_u64(options.rand_seed);
        let (users, projects, distribution) = data::write(writer, &mut rng, options)?;
        Ok(document(options, users, projects, distribution))
    })
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
        db_path: crate::store::postgres::redacted(&options.db_path.display().to_string()),
        seeded_at: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
        phase_counts: distribution.phase_counts,
        activity_counts: distribution.activity_counts,
        creator_counts: distribution.creator_counts,
    }
}

/// The unit tests' fixture: a fresh SQLite database in `dir`, seeded with
/// 30 agents in a main project named `project_slug`, and its document.
#[cfg(test)]
pub(crate) fn seeded_for_tests(
    dir: &Path,
    project_slug: &str,
) -> (crate::store::db::Db, SeedDocument) {
    use crate::store::db::{Db, OpenMode, PoolOptions};
    let path = dir.join("hub.db");
    let doc = seed(&SeedOptions {
        db_path: path.clone(),
        session_secret: "s".into(),
        agents: 30,
        project_slug: project_slug.into(),
        rand_seed: 42,
    })
    .unwrap();
    let db = Db::open(&path, OpenMode::MustExist, PoolOptions::default()).unwrap();
    (db, doc)
}

#[cfg(test)]
mod tests;
