//! An in-process OTLP/HTTP collector on 127.0.0.1 that decodes what
//! arrives with `opentelemetry-proto`, and a small traced service.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU16, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;

/// What the collector received and how it answers.
#[derive(Default)]
struct State {
    requests: Mutex<Vec<ExportTraceServiceRequest>>,
    paths: Mutex<Vec<String>>,
    status: AtomicU16,
    delay_ms: AtomicU16,
}

/// A collector serving until the test ends.
#[derive(Clone)]
pub struct Collector {
    pub addr: SocketAddr,
    state: Arc<State>,
}

impl Collector {
    /// Answers every export with `status` (200: accepted).
    pub fn start(status: u16) -> Collector {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(State::default());
        state.status.store(status, Relaxed);
        let shared = Arc::clone(&state);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let state = Arc::clone(&shared);
                std::thread::spawn(move || serve(stream, &state));
            }
        });
        Collector { addr, state }
    }

    /// An address where nothing listens any more.
    pub fn gone() -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.local_addr().unwrap()
    }

    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Holds every answer back by `ms` milliseconds.
    pub fn delay(&self, ms: u16) {
        self.state.delay_ms.store(ms, Relaxed);
    }

    pub fn requests(&self) -> Vec<ExportTraceServiceRequest> {
        self.state.requests.lock().unwrap().clone()
    }

    pub fn paths(&self) -> Vec<String> {
        self.state.paths.lock().unwrap().clone()
    }

    pub fn spans(&self) -> Vec<Span> {
        self.requests()
            .into_iter()
            .flat_map(|r| r.resource_spans)
            .flat_map(|r| r.scope_spans)
            .flat_map(|s| s.spans)
            .collect()
    }
}

/// Serves one connection's requests (HTTP/1.1, `Content-Length` bodies).
fn serve(stream: TcpStream, state: &State) {
    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
    let mut stream = stream;
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
            return;
        }
        let path = request_line
            .split_whitespace()
            .nth(1)
            .unwrap_or("")
            .to_owned();
        let mut length = 0;
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 {
                return;
            }
            let header = header.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':') {
                if name.eq_ignore_ascii_case("content-length") {
                    length = value.trim().parse().expect("a length");
                }
            }
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let delay = state.delay_ms.load(Relaxed);
        if delay > 0 {
            std::thread::sleep(Duration::from_millis(u64::from(delay)));
        }
        let status = state.status.load(Relaxed);
        if status == 200 {
            let decoded = ExportTraceServiceRequest::decode(&body[..]).expect("OTLP protobuf");
            state.requests.lock().unwrap().push(decoded);
        }
        state.paths.lock().unwrap().push(path);
        let reason = if status == 200 { "OK" } else { "Unavailable" };
        let answer = format!(
            "HTTP/1.1 {status} {reason}\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n"
        );
        if stream.write_all(answer.as_bytes()).is_err() {
            return;
        }
    }
}
