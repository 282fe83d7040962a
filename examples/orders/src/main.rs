//! `orders-example [--listen ADDR] [--perf-trace]`: serves the orders API.

use std::net::SocketAddr;
use std::process::ExitCode;

use orders_example::perf::app;
use orders_example::store::MemoryStore;
use perf_trace_core::LineSink;

const USAGE: &str = "usage: orders-example [--listen ADDR] [--perf-trace]

  --listen ADDR   address to serve on (default 127.0.0.1:3000)
  --perf-trace    write one perf_trace line per request to standard output";

#[derive(Debug)]
struct Options {
    listen: SocketAddr,
    perf_trace: bool,
}

fn parse(args: impl IntoIterator<Item = String>) -> Result<Options, String> {
    let mut options = Options {
        listen: SocketAddr::from(([127, 0, 0, 1], 3000)),
        perf_trace: false,
    };
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--perf-trace" => options.perf_trace = true,
            "--listen" => {
                let value = args.next().ok_or("--listen needs an address")?;
                options.listen = value.parse().map_err(|_| {
                    format!("--listen: {value:?} is not an address such as 127.0.0.1:3000")
                })?;
            }
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(options)
}

#[tokio::main]
async fn main() -> ExitCode {
    let options = match parse(std::env::args().skip(1)) {
        Ok(options) => options,
        Err(problem) if problem.is_empty() => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(problem) => {
            eprintln!("error: {problem}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let trace = options.perf_trace.then(LineSink::stdout);
    let app = app(MemoryStore::sample(), trace);
    let listener = match tokio::net::TcpListener::bind(options.listen).await {
        Ok(listener) => listener,
        Err(e) => {
            eprintln!("error: cannot listen on {}: {e}", options.listen);
            return ExitCode::FAILURE;
        }
    };
    eprintln!("orders-example listening on {}", options.listen);
    let shutdown = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    match axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await
    {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::parse;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn flags_are_read_and_bad_ones_refused() {
        let options = parse(args(&["--perf-trace", "--listen", "0.0.0.0:8080"])).unwrap();
        assert!(options.perf_trace);
        assert_eq!(options.listen.port(), 8080);
        assert!(parse(args(&["--listen"]))
            .unwrap_err()
            .contains("needs an address"));
        assert!(parse(args(&["--listen", "nowhere"]))
            .unwrap_err()
            .contains("not an address"));
        assert!(parse(args(&["--verbose"]))
            .unwrap_err()
            .contains("unknown argument"));
        assert_eq!(parse(args(&["--help"])).err().as_deref(), Some(""));
    }
}
