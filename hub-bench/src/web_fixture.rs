//! The web fixture: a small deterministic generator of the Hub's answers to
//! the project page's requests, and the field-name-and-type schema that holds
//! it in step with the real Hub.
//!
//! The web counter budgets load the project page against this generator
//! rather than a seeded Hub, so the page's DOM does not depend on a database
//! or on the seeder's random choices: 100 agents in one project, with fixed
//! ids, names and times, in the Hub's sort order (by name) and with the
//! Hub's paging (`limit`, an opaque `cursor`, `nextCursor` absent on the last
//! page).
//!
//! Three checks hold the generator, the committed schema file
//! ([`SCHEMA_FILE`]) and the Hub's real answers together:
//!
//! - the Hub's budget test (`tests/hub/tests/perf_budget.rs`) reads the
//!   [`WEB_REQUESTS`] from a seeded Hub and fails with "does not match the
//!   field names and types of the hub's current responses" when the file
//!   differs; `SCION_PERF_BUDGET_WRITE_WEB_SCHEMA=1` rewrites the file;
//! - `tests/web_fixture.rs` fails when the generator's answers differ from
//!   the file;
//! - the web budget test fails on any request [`Fixture::answer`] returns
//!   `None` for.
//!
//! ```
//! use hub_bench::web_fixture::{field_types, Fixture};
//! let fixture = Fixture::new();
//! let page = fixture
//!     .answer("GET", &format!("/api/v1/projects/{}/agents", fixture.project_id()), "limit=2")
//!     .unwrap();
//! assert_eq!(page["agents"].as_array().unwrap().len(), 2);
//! assert_eq!(field_types(&page)["$.agents[].name"], "string");
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::time::{Duration, UNIX_EPOCH};

use serde_json::{json, Map, Value};

/// Agents in the fixture's project.
pub const FIXTURE_AGENTS: usize = 100;

/// Where the schema file lives, relative to the `hub-bench` crate.
pub const SCHEMA_FILE: &str = "web-fixture-schema.json";

/// The environment variable that makes the Hub's budget test rewrite the
/// schema file instead of comparing with it.
pub const WRITE_SCHEMA_ENV: &str = "SCION_PERF_BUDGET_WRITE_WEB_SCHEMA";

/// The message of a schema that no longer matches the Hub.
pub const HUB_DRIFT_MESSAGE: &str =
    "does not match the field names and types of the hub's current responses";

/// One request the project page sends, as the schema names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WebRequest {
    /// The schema's name for it.
    pub name: &'static str,
    /// Its path; `{project}` is the project's id.
    pub path: &'static str,
    /// Its query (empty: none); `{cursor}` is the `nextCursor` of the first
    /// page.
    pub query: &'static str,
}

impl WebRequest {
    /// Path and query for `project`, the cursor filled in.
    pub fn uri(&self, project: &str, cursor: &str) -> String {
        let path = self.path.replace("{project}", project);
        match self.query.replace("{cursor}", cursor) {
            query if query.is_empty() => path,
            query => format!("{path}?{query}"),
        }
    }
}

/// The project page's requests, as its client sends them: the grid's and
/// list's first page (the pager's default of 25, sorted by name), the page
/// after it, the graph's whole project (the unpaged list) and the graph's
/// delegation links.
pub const WEB_REQUESTS: &[WebRequest] = &[
    WebRequest {
        name: "project-first-page",
        path: "/api/v1/projects/{project}/agents",
        query: "limit=25&sort=name",
    },
    WebRequest {
        name: "project-next-page",
        path: "/api/v1/projects/{project}/agents",
        query: "limit=25&sort=name&cursor={cursor}",
    },
    WebRequest {
        name: "project-graph",
        path: "/api/v1/projects/{project}/agents",
        query: "",
    },
    WebRequest {
        name: "project-delegations",
        path: "/api/v1/projects/{project}/delegations",
        query: "",
    },
];

/// Field names and JSON types: a JSON path (`$.agents[].createdBy.id`) to
/// its types, sorted and joined with `|` when a field takes more than one.
pub type FieldTypes = BTreeMap<String, String>;

/// Every request's field types, as the schema file holds them.
pub type Schema = BTreeMap<String, FieldTypes>;

/// The field names and JSON types of `value`: every path that occurs, with
/// the types seen there (array items merged under `[]`).
pub fn field_types(value: &Value) -> FieldTypes {
    let mut seen: BTreeMap<String, BTreeSet<&'static str>> = BTreeMap::new();
    collect_types("$", value, &mut seen);
    seen.into_iter()
        .map(|(path, types)| (path, types.into_iter().collect::<Vec<_>>().join("|")))
        .collect()
}

fn collect_types(path: &str, value: &Value, seen: &mut BTreeMap<String, BTreeSet<&'static str>>) {
    let kind = match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(items) => {
            for item in items {
                collect_types(&format!("{path}[]"), item, seen);
            }
            "array"
        }
        Value::Object(fields) => {
            for (name, field) in fields {
                collect_types(&format!("{path}.{name}"), field, seen);
            }
            "object"
        }
    };
    seen.entry(path.to_owned()).or_default().insert(kind);
}

/// The schema file's text for `schema`: pretty JSON with a trailing newline.
pub fn schema_text(schema: &Schema) -> String {
    let mut text =
        serde_json::to_string_pretty(&json!({ "requests": schema })).expect("a schema serializes");
    text.push('\n');
    text
}

/// Reads the schema file's text.
pub fn parse_schema(text: &str) -> Result<Schema, String> {
    let value: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    serde_json::from_value(value["requests"].clone())
        .map_err(|e| format!("no `requests` map of path to type: {e}"))
}

/// The differences between two schemas, one line each (`request: path: a
/// here, b there`); empty when they are equal.
pub fn schema_differences(expected: &Schema, actual: &Schema, actual_name: &str) -> Vec<String> {
    let mut out = Vec::new();
    let names: BTreeSet<&String> = expected.keys().chain(actual.keys()).collect();
    for name in names {
        let (Some(want), Some(got)) = (expected.get(name), actual.get(name)) else {
            let side = if expected.contains_key(name) {
                "missing from"
            } else {
                "only in"
            };
            out.push(format!("{name}: request {side} {actual_name}"));
            continue;
        };
        let paths: BTreeSet<&String> = want.keys().chain(got.keys()).collect();
        for path in paths {
            match (want.get(path), got.get(path)) {
                (Some(w), Some(g)) if w == g => {}
                (Some(w), Some(g)) => out.push(format!(
                    "{name}: {path}: {w} in the schema file, {g} in {actual_name}"
                )),
                (Some(w), None) => out.push(format!(
                    "{name}: {path} ({w}) is in the schema file, not in {actual_name}"
                )),
                (None, Some(g)) => out.push(format!(
                    "{name}: {path} ({g}) is in {actual_name}, not in the schema file"
                )),
                (None, None) => unreachable!("a path comes from one side"),
            }
        }
    }
    out
}

const ADJECTIVES: [&str; 10] = [
    "amber", "brisk", "calm", "dusky", "eager", "fleet", "gentle", "hardy", "ivory", "jolly",
];
const ANIMALS: [&str; 10] = [
    "badger", "crane", "dingo", "egret", "ferret", "gecko", "heron", "ibis", "jackal", "koala",
];
const PHASES: [&str; 5] = ["created", "provisioning", "running", "stopped", "error"];
const ACTIVITIES: [&str; 5] = [
    "idle",
    "working",
    "waiting_for_input",
    "blocked",
    "completed",
];
const HARNESSES: [&str; 3] = ["claude", "codex", "gemini"];
const MODELS: [&str; 4] = ["flash", "opus", "sonnet", "pro"];
const TEMPLATES: [&str; 3] = ["default", "docs-writer", "gemini-default"];
const CREATORS: [(&str, &str); 4] = [
    ("00000000-0000-4000-8000-00000000u001", "Olivia Owner"),
    ("00000000-0000-4000-8000-00000000u002", "Max Member"),
    ("00000000-0000-4000-8000-00000000u003", "Dana Developer"),
    ("00000000-0000-4000-8000-00000000u004", "Deniz Developer"),
];
const CAPABILITIES: [&[&str]; 4] = [
    &["read", "start", "stop"],
    &["read", "update", "delete", "start", "stop"],
    &["read", "update", "delete", "start", "stop", "attach"],
    &["read", "update", "start", "stop", "attach"],
];
/// 2026-01-01T00:00:00Z in Unix milliseconds, where the seeder's dates start.
const EPOCH_MS: u64 = 1_767_225_600_000;

/// The deterministic 100-agent project the web budgets load.
#[derive(Debug, Clone)]
pub struct Fixture {
    project_id: String,
    /// The agents, sorted by name as the Hub sorts them.
    agents: Vec<Value>,
}

impl Default for Fixture {
    fn default() -> Self {
        Fixture::new()
    }
}

impl Fixture {
    /// The fixture: [`FIXTURE_AGENTS`] agents with fixed ids, names and times.
    pub fn new() -> Fixture {
        let project_id = "00000000-0000-4000-8000-0000000000p1".to_owned();
        let mut agents: Vec<Value> = (0..FIXTURE_AGENTS).map(|i| agent(&project_id, i)).collect();
        agents.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
        Fixture { project_id, agents }
    }

    /// The project's id.
    pub fn project_id(&self) -> &str {
        &self.project_id
    }

    /// The agents, in the Hub's order.
    pub fn agents(&self) -> &[Value] {
        &self.agents
    }

    /// The answer to `method path?query`, or `None` for a request the
    /// generator does not answer (the web budget test fails on those).
    pub fn answer(&self, method: &str, path: &str, query: &str) -> Option<Value> {
        let agents_path = format!("/api/v1/projects/{}/agents", self.project_id);
        let delegations_path = format!("/api/v1/projects/{}/delegations", self.project_id);
        if method != "GET" {
            return None;
        }
        if path == delegations_path && query.is_empty() {
            return Some(self.delegations());
        }
        if path != agents_path {
            return None;
        }
        // Without `limit`, `sort` or `cursor` the Hub answers its unpaged
        // list; with any of them, pages of 50 unless `limit` says otherwise.
        let mut limit = None;
        let mut paged = false;
        let mut start = 0usize;
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            paged = true;
            match key {
                "limit" => limit = Some(value.parse().ok().filter(|n| (1..=500).contains(n))?),
                "sort" if value == "name" => {}
                "cursor" => start = value.strip_prefix("fixture-after-")?.parse().ok()?,
                _ => return None,
            }
        }
        let limit = match (paged, limit) {
            (false, _) => self.agents.len(),
            (true, limit) => limit.unwrap_or(50),
        };
        let end = (start + limit).min(self.agents.len());
        let mut page = Map::new();
        page.insert(
            "agents".into(),
            Value::Array(self.agents.get(start..end)?.to_vec()),
        );
        if end < self.agents.len() {
            page.insert("nextCursor".into(), json!(format!("fixture-after-{end}")));
        }
        page.insert(
            "scope".into(),
            json!({
                "kind": "project",
                "id": self.project_id,
                "capabilities": ["agent.create", "events.subscribe"],
                "membership": "member",
            }),
        );
        Some(Value::Object(page))
    }

    /// The answers to [`WEB_REQUESTS`], by name, the next page's cursor taken
    /// from the first page as the page takes it.
    pub fn web_answers(&self) -> BTreeMap<&'static str, Value> {
        let answer = |request: &WebRequest, cursor: &str| {
            let uri = request.uri(&self.project_id, cursor);
            let (path, query) = uri.split_once('?').unwrap_or((&uri, ""));
            self.answer("GET", path, query)
                .expect("every web request is answered")
        };
        let first = answer(&WEB_REQUESTS[0], "");
        let cursor = first["nextCursor"].as_str().unwrap_or_default().to_owned();
        WEB_REQUESTS
            .iter()
            .map(|request| (request.name, answer(request, &cursor)))
            .collect()
    }

    /// The project's delegations, as the graph reads them: the owner lends
    /// the member some of their permissions.
    fn delegations(&self) -> Value {
        let (owner_id, owner) = CREATORS[0];
        let (member_id, member) = CREATORS[1];
        json!({
            "delegations": [{
                "id": "00000000-0000-4000-8000-0000000000d1",
                "delegator": { "kind": "user", "id": owner_id, "name": owner },
                "delegate": { "kind": "user", "id": member_id, "name": member },
                "actions": ["agent.read", "agent.update"],
            }]
        })
    }

    /// The field types of [`Fixture::web_answers`], comparable with the
    /// schema file.
    pub fn schema(&self) -> Schema {
        self.web_answers()
            .into_iter()
            .map(|(name, answer)| (name.to_owned(), field_types(&answer)))
            .collect()
    }
}

fn time(offset_ms: u64) -> String {
    let at = UNIX_EPOCH + Duration::from_millis(EPOCH_MS + offset_ms);
    humantime::format_rfc3339_millis(at).to_string()
}

fn agent(project_id: &str, i: usize) -> Value {
    let mut name = String::new();
    let _ = write!(
        name,
        "{}-{}-{i:05}",
        ADJECTIVES[i % ADJECTIVES.len()],
        ANIMALS[(i / ADJECTIVES.len()) % ANIMALS.len()]
    );
    let (creator_id, creator_name) = CREATORS[i % CREATORS.len()];
    let created_ms = (i as u64) * 61_000;
    json!({
        "id": format!("00000000-0000-4000-8000-{:012}", i + 1),
        "projectId": project_id,
        "name": name,
        "phase": PHASES[i % PHASES.len()],
        "activity": ACTIVITIES[(i * 3) % ACTIVITIES.len()],
        "createdBy": { "id": creator_id, "displayName": creator_name },
        "createdAt": time(created_ms),
        "updatedAt": time(created_ms + 3_600_000 + (i as u64) * 7_000),
        "config": {
            "branch": format!("agents/{name}"),
            "harness": HARNESSES[i % HARNESSES.len()],
            "maxTurns": 20 + (i * 37) % 180,
            "model": MODELS[i % MODELS.len()],
            "template": TEMPLATES[i % TEMPLATES.len()],
        },
        "capabilities": CAPABILITIES[i % CAPABILITIES.len()],
        "messageable": !i.is_multiple_of(3),
    })
}
