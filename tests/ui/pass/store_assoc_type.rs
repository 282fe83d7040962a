use perf_trace_core::counted_store;

#[counted_store]
pub(crate) trait ProjectStore {
    type Error: std::fmt::Display;
    type Row: Clone;
    const TABLE: &'static str;

    fn get_project(&self, id: u64) -> Result<Self::Row, Self::Error>;

    fn get_project_membership(&mut self, id: u64) -> Result<Vec<Self::Row>, Self::Error>;

    fn close(self) -> Result<(), Self::Error>
    where
        Self: Sized;
}

#[derive(Debug, PartialEq)]
struct NotFound(u64);

impl std::fmt::Display for NotFound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "project {} not found", self.0)
    }
}

struct Db {
    rows: Vec<String>,
}

impl ProjectStore for Db {
    type Error = NotFound;
    type Row = String;
    const TABLE: &'static str = "projects";

    fn get_project(&self, id: u64) -> Result<String, NotFound> {
        self.rows.get(id as usize).cloned().ok_or(NotFound(id))
    }

    fn get_project_membership(&mut self, id: u64) -> Result<Vec<String>, NotFound> {
        self.rows.push(format!("m{id}"));
        Ok(self.rows.clone())
    }

    fn close(self) -> Result<(), NotFound> {
        Ok(())
    }
}

fn generic<S: ProjectStore>(store: &S) -> Result<S::Row, S::Error> {
    store.get_project(0)
}

fn main() {
    let mut store = CountedProjectStore::new(Db { rows: vec!["p0".into()] });
    assert_eq!(generic(&store), Ok("p0".to_owned()));
    assert_eq!(store.get_project(5), Err(NotFound(5)));
    assert_eq!(store.get_project_membership(1).unwrap().len(), 2);
    assert_eq!(<CountedProjectStore<Db> as ProjectStore>::TABLE, "projects");
    assert_eq!(store.close(), Ok(()));
    let _ = ProjectStoreMethod::GetProject;
}
