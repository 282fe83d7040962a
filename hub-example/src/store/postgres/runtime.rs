//! The tokio runtime the PostgreSQL driver runs on, and how synchronous
//! code reaches it.
//!
//! The driver (`tokio-postgres`) and the pool (`bb8`) are async; the
//! store's methods are not, and run inside one `spawn_blocking` per request.
//! They block on the driver's runtime with [`Handle::block_on`], which is
//! legal on a blocking-pool thread or a thread of no runtime, and panics on
//! an async worker thread: every synchronous entry point is called from
//! one of the former, or goes through [`off_runtime`].

use std::sync::OnceLock;

use tokio::runtime::{Handle, Runtime, RuntimeFlavor};

/// The runtime a pool opened here drives its connections on: the current
/// one when it is multi-threaded (the Hub's), else a small one of the
/// process's own. A current-thread runtime cannot serve: its I/O advances
/// only while its own thread is inside `Runtime::block_on`, so a blocking
/// thread waiting on a query would wait for its caller to await.
pub(crate) fn driver_runtime() -> Handle {
    match Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == RuntimeFlavor::MultiThread => handle,
        _ => own_runtime().handle().clone(),
    }
}

/// The process's own driver runtime, started on first use and never shut
/// down (the `seed` command, tests, programs without a multi-threaded one).
fn own_runtime() -> &'static Runtime {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("pg-driver")
            .enable_all()
            .build()
            .expect("cannot start the PostgreSQL driver's runtime")
    })
}

/// Runs `work`, which blocks on the driver's runtime, where blocking is
/// allowed: here when this thread belongs to no runtime, else on a thread
/// of its own (a caller on an async worker, such as a program opening a
/// Hub's database from its `main` task, would panic in `block_on`).
pub(crate) fn off_runtime<T: Send>(work: impl FnOnce() -> T + Send) -> T {
    if Handle::try_current().is_err() {
        return work();
    }
    std::thread::scope(|s| match s.spawn(work).join() {
        Ok(result) => result,
        Err(panic) => std::panic::resume_unwind(panic),
    })
}
