//! A Hub's router served on a loopback port (for tests that need a real
//! connection: disconnects, streams, load), raw HTTP/1.1 over TCP, and
//! bounded waits for log lines.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::time::Duration;

use axum::Router;
use hub_example::log::CaptureBuffer;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// A router served in the background.
pub struct Served {
    pub addr: SocketAddr,
    stop: oneshot::Sender<()>,
    task: JoinHandle<()>,
}

impl Served {
    /// Serves `router` on a free loopback port.
    pub async fn start(router: Router) -> Served {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            axum::serve(listener, router)
                .with_graceful_shutdown(async {
                    let _ = stopped.await;
                })
                .await
                .unwrap();
        });
        Served { addr, stop, task }
    }

    /// Serves `hub` the way `hub-example serve` does (its connection
    /// timeouts, caps and graceful shutdown) on a free loopback port.
    pub async fn hub(hub: &hub_example::Hub) -> Served {
        Self::by_hub(|listener, stopped| {
            hub.serving(listener, async {
                let _ = stopped.await;
            })
        })
        .await
    }

    /// Serves `router` (the web client's) over `hub`'s parts, as
    /// [`Served::hub`] serves the API.
    pub async fn web(hub: &hub_example::Hub, router: Router) -> Served {
        Self::by_hub(|listener, stopped| {
            hub.serving_router(listener, router, async {
                let _ = stopped.await;
            })
        })
        .await
    }

    /// Serves what `serve` makes of a free loopback port and the signal
    /// that stops it.
    async fn by_hub<F, Fut>(serve: F) -> Served
    where
        F: FnOnce(TcpListener, oneshot::Receiver<()>) -> Fut,
        Fut: std::future::Future<Output = std::io::Result<()>> + Send + 'static,
    {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let serving = serve(listener, stopped);
        let task = tokio::spawn(async move { serving.await.unwrap() });
        Served { addr, stop, task }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Stops accepting and waits until every connection has ended, so every
    /// request's line has been written.
    pub async fn stop(self) {
        let _ = self.stop.send(());
        self.task.await.unwrap();
    }
}

/// Opens a connection and sends `GET path` with `token` and `extra` header
/// lines; the connection stays open.
pub async fn send_get(addr: SocketAddr, path: &str, token: &str) -> TcpStream {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let request =
        format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    stream
}

/// Reads until the end of the response head and returns it (and whatever
/// body bytes came with it).
pub async fn read_head(stream: &mut TcpStream) -> (String, Vec<u8>) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).into_owned();
            return (head, buf[end + 4..].to_vec());
        }
        let n = stream.read(&mut chunk).await.unwrap();
        assert!(n > 0, "connection closed before the response head");
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// A header of a raw response head, by lower-case name.
pub fn head_header(head: &str, name: &str) -> Option<String> {
    head.lines().skip(1).find_map(|line| {
        let (k, v) = line.split_once(':')?;
        k.trim()
            .eq_ignore_ascii_case(name)
            .then(|| v.trim().to_owned())
    })
}

/// The perf_trace lines of a captured log, parsed.
pub fn perf_values(log: &CaptureBuffer) -> Vec<Value> {
    log.lines()
        .iter()
        .filter(|l| l.contains("\"subsystem\":\"hub.perf-trace\""))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Reads until the peer closes the connection (or `limit` passes, a
/// liveness bound only) and returns everything read, and whether it closed.
pub async fn read_to_close(stream: &mut TcpStream, limit: Duration) -> (Vec<u8>, bool) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let read_all = async {
        loop {
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
    };
    let closed = tokio::time::timeout(limit, read_all).await.is_ok();
    (buf, closed)
}

/// Polls the log until `found` holds, for at most `tries` times 10 ms. A
/// liveness bound only: the assertions that follow count lines.
pub async fn wait_for_lines(
    log: &CaptureBuffer,
    tries: u32,
    found: impl Fn(&[Value]) -> bool,
) -> Vec<Value> {
    for _ in 0..tries {
        let lines = perf_values(log);
        if found(&lines) {
            return lines;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the expected lines never came: {:?}", perf_values(log));
}

/// Waits (see [`wait_for_lines`]) for the line of the event stream
/// `request_id` at `stage` (`connect`, `close`).
pub async fn wait_for_stage(log: &CaptureBuffer, request_id: &str, stage: &str) -> Vec<Value> {
    wait_for_lines(log, 1000, |lines| {
        lines
            .iter()
            .any(|l| l["request_id"] == request_id && l["sse_stage"] == stage)
    })
    .await
}
