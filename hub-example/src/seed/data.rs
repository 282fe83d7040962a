//! The data of one seed, drawn from the PRNG and written entity by entity.

use std::collections::BTreeMap;

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::{SeedOptions, OTHER_PROJECT_AGENTS, SEED_EPOCH_MS};
use crate::model::{uuid_from_bytes, AgentActivity, AgentPhase};
use crate::store::db::DbError;
use crate::store::seed::Param::{self, Int, Text};
use crate::store::seed::SeedTable::*;
use crate::store::seed::SeedWriter;

/// Writes every entity in a fixed order (every step draws from `rng`, so
/// the order is part of the data).
pub(super) fn write(
    writer: &SeedWriter<'_>,
    rng: &mut ChaCha8Rng,
    options: &SeedOptions,
) -> Result<(Users, Projects, Distribution), DbError> {
    let slug = &options.project_slug;
    let mut seeding = Seeding { writer, rng };
    let users = seeding.seed_users(slug)?;
    let projects = seeding.seed_projects(slug, &users)?;
    let groups = seeding.seed_groups(slug, &users)?;
    seeding.seed_role_bindings(&users, &projects, &groups)?;
    seeding.seed_delegations(&users, &projects)?;
    seeding.seed_access_constraints(&projects)?;
    let distribution = seeding.seed_agents(options.agents, &users, &projects)?;
    Ok((users, projects, distribution))
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

/// A row of text columns followed by the seed's creation time, as most
/// seeded rows are.
fn created<'a>(texts: &[&'a str]) -> Vec<Param<'a>> {
    let texts = texts.iter().map(|text| Text(text));
    texts.chain([Int(SEED_EPOCH_MS)]).collect()
}

fn new_id(rng: &mut ChaCha8Rng) -> String {
    uuid_from_bytes(rng.random())
}

/// The role definitions the migrations create, by id.
const OWNER_ROLE: &str = "00000000-0000-4000-8000-000000000002";
const MEMBER_ROLE: &str = "00000000-0000-4000-8000-000000000003";

/// A seeded user.
pub(super) struct SeededUser {
    pub(super) id: String,
    pub(super) email: String,
}

/// The people of the data set.
pub(super) struct Users {
    /// Owns both projects.
    pub(super) owner: SeededUser,
    /// A non-admin member of the main project, through a group.
    pub(super) member: SeededUser,
    /// An unscoped platform admin.
    pub(super) admin: SeededUser,
    /// Two more members of the main project, agent creators.
    pub(super) developers: [SeededUser; 2],
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

/// The main project and the second, small one.
pub(super) struct Projects {
    pub(super) main: String,
    pub(super) other: String,
}

/// The groups: `everyone` <- `engineering` <- `<slug>-members`.
struct Groups {
    members: String,
}

/// The main project's agents, counted as the document reports them.
#[derive(Default)]
pub(super) struct Distribution {
    pub(super) phase_counts: BTreeMap<String, u32>,
    pub(super) activity_counts: BTreeMap<String, u32>,
    pub(super) creator_counts: BTreeMap<String, u32>,
}

/// Where the seed's rows go and the generator every drawn value comes
/// from, which every step takes together.
struct Seeding<'a, 'c> {
    writer: &'a SeedWriter<'c>,
    rng: &'a mut ChaCha8Rng,
}

impl Seeding<'_, '_> {
    /// Draws one user's id and inserts the user.
    fn insert_user(
        &mut self,
        email: String,
        name: &str,
        admin: bool,
    ) -> Result<SeededUser, DbError> {
        let id = new_id(self.rng);
        let admin = Int(i64::from(admin));
        self.writer.row(
            Users,
            &[
                Text(&id),
                Text(&email),
                Text(name),
                admin,
                Int(SEED_EPOCH_MS),
            ],
        )?;
        Ok(SeededUser { id, email })
    }

    /// The owner, the member, the admin and two developers.
    fn seed_users(&mut self, slug: &str) -> Result<Users, DbError> {
        let email = |name: &str| format!("{name}@{slug}.example.com");
        Ok(Users {
            owner: self.insert_user(email("owner"), "Olivia Owner", false)?,
            member: self.insert_user(email("member"), "Max Member", false)?,
            admin: self.insert_user(email("admin"), "Ada Admin", true)?,
            developers: [
                self.insert_user(email("dev1"), "Dana Developer", false)?,
                self.insert_user(email("dev2"), "Deniz Developer", false)?,
            ],
        })
    }

    /// Both projects, owned by the owner; the member and the developers are
    /// members of the main one only.
    fn seed_projects(&mut self, slug: &str, users: &Users) -> Result<Projects, DbError> {
        let projects = Projects {
            main: new_id(self.rng),
            other: new_id(self.rng),
        };
        for (id, project_slug, name) in [
            (&projects.main, slug.to_owned(), format!("Bench {slug}")),
            (
                &projects.other,
                format!("{slug}-other"),
                format!("Bench {slug} (other)"),
            ),
        ] {
            let owner = &users.owner.id;
            self.writer
                .row(Projects, &created(&[id, &project_slug, &name, owner]))?;
        }
        for project in [&projects.main, &projects.other] {
            let owner = &users.owner.id;
            self.writer
                .row(ProjectMembers, &created(&[project, owner, "owner"]))?;
        }
        for user in users.members() {
            self.writer
                .row(ProjectMembers, &created(&[&projects.main, user, "member"]))?;
        }
        Ok(projects)
    }

    /// The group chain; the owner manages `engineering`, the main project's
    /// members are in `<slug>-members`.
    fn seed_groups(&mut self, slug: &str, users: &Users) -> Result<Groups, DbError> {
        let everyone = new_id(self.rng);
        let engineering = new_id(self.rng);
        let members = new_id(self.rng);
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
            self.writer
                .row(Groups, &created(&[id, &group_slug, &name]))?;
        }
        for (group, parent) in [(&engineering, &everyone), (&members, &engineering)] {
            self.writer
                .row(GroupParents, &[Text(group), Text(parent)])?;
        }
        self.writer.row(
            GroupMembers,
            &[Text(&engineering), Text(&users.owner.id), Text("manager")],
        )?;
        for user in users.members() {
            self.writer
                .row(GroupMembers, &[Text(&members), Text(user), Text("member")])?;
        }
        Ok(Groups { members })
    }

    /// The owner owns both projects; the members group works in the main one.
    fn seed_role_bindings(
        &mut self,
        users: &Users,
        projects: &Projects,
        groups: &Groups,
    ) -> Result<(), DbError> {
        for (kind, principal, role, project) in [
            ("user", &users.owner.id, OWNER_ROLE, &projects.main),
            ("user", &users.owner.id, OWNER_ROLE, &projects.other),
            ("group", &groups.members, MEMBER_ROLE, &projects.main),
        ] {
            let id = new_id(self.rng);
            self.writer.row(
                ProjectRoleBindings,
                &created(&[&id, kind, principal, role, project]),
            )?;
        }
        Ok(())
    }

    /// The owner lets the member start and stop agents in the main project.
    fn seed_delegations(&mut self, users: &Users, projects: &Projects) -> Result<(), DbError> {
        let id = new_id(self.rng);
        let actions = r#"["agent.start","agent.stop"]"#;
        let (owner, member) = (&users.owner.id, &users.member.id);
        self.writer.row(
            UserDelegations,
            &created(&[&id, owner, member, &projects.main, actions]),
        )?;
        Ok(())
    }

    /// The same three phase constraints in both projects.
    fn seed_access_constraints(&mut self, projects: &Projects) -> Result<(), DbError> {
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
                let id = new_id(self.rng);
                self.writer.row(
                    AccessConstraints,
                    &[
                        Text(&id),
                        Text(project),
                        Text(action),
                        Text(phases),
                        Text(description),
                    ],
                )?;
            }
        }
        Ok(())
    }

    /// `agents` synthetic agents in the main project, then
    /// [`OTHER_PROJECT_AGENTS`] in the other, all created by the owner.
    fn seed_agents(
        &mut self,
        agents: u32,
        users: &Users,
        projects: &Projects,
    ) -> Result<Distribution, DbError> {
        let creators = users.creators();
        let mut distribution = Distribution::default();
        for index in 0..agents {
            // Every creator appears once before the draw, so a small project has
            // them all and per-creator reads are the same at every size.
            let creator = if (index as usize) < creators.len() {
                creators[index as usize]
            } else {
                *pick(self.rng, &creators)
            };
            let (phase, activity) = self.insert_agent(&projects.main, index, creator)?;
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
            self.insert_agent(&projects.other, index, &users.owner.id)?;
        }
        Ok(distribution)
    }

    /// Draws one agent (name, phase, activity, times, config) and inserts it.
    fn insert_agent(
        &mut self,
        project: &str,
        index: u32,
        creator: &str,
    ) -> Result<(AgentPhase, AgentActivity), DbError> {
        let id = new_id(self.rng);
        let name = format!(
            "{}-{}-{index:05}",
            pick(self.rng, &ADJECTIVES),
            pick(self.rng, &NOUNS)
        );
        let phase = AgentPhase::ALL[weighted(self.rng, &PHASE_WEIGHTS)];
        let activity = *pick(self.rng, &AgentActivity::ALL);
        let created_at =
            SEED_EPOCH_MS + i64::from(index) * 60_000 + self.rng.random_range(0..60_000);
        let updated_at = created_at + self.rng.random_range(0..86_400_000);
        let config = serde_json::json!({
            "template": pick(self.rng, &TEMPLATES),
            "harness": pick(self.rng, &HARNESSES),
            "model": pick(self.rng, &MODELS),
            "branch": format!("agents/{name}"),
            "maxTurns": self.rng.random_range(10..200),
        })
        .to_string();
        let agent = [
            Text(&id),
            Text(project),
            Text(&name),
            Text(phase.as_str()),
            Text(activity.as_str()),
            Text(creator),
            Int(created_at),
            Int(updated_at),
            Text(&config),
        ];
        self.writer.row(Agents, &agent)?;
        Ok((phase, activity))
    }
}
