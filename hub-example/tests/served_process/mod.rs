//! What the tests that run the `hub-example` binary share: a free loopback
//! port to serve on, and a child process that never outlives its test.

// Each test file is a crate of its own and uses only part of this module.
#![allow(dead_code)]

/// A child process killed (if still running) when the test ends, even by
/// a failed assertion.
pub struct KillOnDrop(pub std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A loopback port free right now (the OS picks it).
pub fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// The id of an agent of `project_id` in the SQLite database at `db`.
pub fn first_agent(db: &std::path::Path, project_id: &str) -> String {
    rusqlite::Connection::open(db)
        .unwrap()
        .query_row(
            "SELECT id FROM agents WHERE project_id = ?1 LIMIT 1",
            [project_id],
            |r| r.get(0),
        )
        .unwrap()
}
