//! `sqlx-example [ROWS]`: serves the inventory API on 127.0.0.1:3000 over an
//! in-memory database of ROWS products (default 10), one line per request
//! on standard output.

use std::process::ExitCode;

use perf_trace_core::LineSink;
use sqlx_example::{app, Inventory};

#[tokio::main]
async fn main() -> ExitCode {
    let arg = std::env::args().nth(1);
    let rows = match arg.as_deref().map(str::parse::<usize>) {
        None => 10,
        Some(Ok(rows)) => rows,
        Some(Err(_)) => {
            eprintln!("usage: sqlx-example [ROWS]  (ROWS: a number of products, e.g. 10)");
            return ExitCode::from(2);
        }
    };
    let result = async {
        let inventory = Inventory::in_memory(rows).await?;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
        eprintln!("sqlx-example listening on 127.0.0.1:3000");
        axum::serve(listener, app(inventory, LineSink::stdout())).await?;
        Ok::<_, Box<dyn std::error::Error>>(())
    };
    match result.await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
