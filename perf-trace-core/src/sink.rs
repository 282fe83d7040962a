//! Where lines go: standard output by default, any writer in tests. A failing
//! sink never fails the request; the failure is reported once.

use std::cell::RefCell;
use std::fmt;
use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::SystemTime;

use parking_lot::Mutex;

use crate::export::{FinishedRequest, RequestFacts, RequestSink};
use crate::line::LineFormat;
use crate::sampling::TailSampling;
use crate::snapshot::Snapshot;

/// A writer behind a lock, which a service may share with its own log so
/// that both write whole lines to one destination.
pub type SharedLineWriter = Arc<Mutex<Box<dyn Write + Send>>>;

/// A destination for whole lines, shared by all requests. Each line is one
/// `write_all` and one `flush` under one lock.
pub struct LineSink {
    writer: SharedLineWriter,
    failed: AtomicBool,
    lost: AtomicU64,
    on_failure: Box<dyn Fn(&io::Error) + Send + Sync>,
}

impl fmt::Debug for LineSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LineSink")
            .field("failed", &self.failed.load(Relaxed))
            .field("lost", &self.lost.load(Relaxed))
            .finish_non_exhaustive()
    }
}

impl LineSink {
    /// Lines to standard output; a failure is reported once on standard error.
    pub fn stdout() -> Self {
        Self::new(io::stdout())
    }

    /// Lines to `writer`; a failure is reported once on standard error.
    pub fn new(writer: impl Write + Send + 'static) -> Self {
        Self::shared(Arc::new(Mutex::new(Box::new(writer))))
    }

    /// Lines to a writer the service shares with its own log: each line takes
    /// that writer's lock once, so its log lines and these never interleave
    /// and a line costs one lock, not one for the sink and one for the log.
    ///
    /// ```
    /// use std::io::Write;
    /// use std::sync::Arc;
    /// use perf_trace_core::LineSink;
    ///
    /// let log: Arc<parking_lot::Mutex<Box<dyn Write + Send>>> =
    ///     Arc::new(parking_lot::Mutex::new(Box::new(Vec::new())));
    /// let sink = LineSink::shared(log.clone());
    /// sink.write_line("{\"msg\":\"perf_trace\"}");
    /// log.lock().write_all(b"{\"msg\":\"hub listening\"}\n").unwrap();
    /// assert_eq!(sink.lost_lines(), 0);
    /// ```
    pub fn shared(writer: SharedLineWriter) -> Self {
        LineSink {
            writer,
            failed: AtomicBool::new(false),
            lost: AtomicU64::new(0),
            on_failure: Box::new(|e| {
                let _ = writeln!(
                    io::stderr(),
                    "{{\"level\":\"ERROR\",\"msg\":\"perf_trace lines cannot be written; further failures are not reported\",\"error\":{:?}}}",
                    e.to_string()
                );
            }),
        }
    }

    /// Replaces how the first failure is reported (a service can route it to
    /// its own logger).
    pub fn on_failure(mut self, report: impl Fn(&io::Error) + Send + Sync + 'static) -> Self {
        self.on_failure = Box::new(report);
        self
    }

    /// Writes `line` and a newline in one write. Errors are counted, and the
    /// first one is reported; the caller never sees them.
    pub fn write_line(&self, line: &str) {
        // One buffer, one write: concurrent lines never interleave.
        let mut buf = Vec::with_capacity(line.len() + 1);
        buf.extend_from_slice(line.as_bytes());
        buf.push(b'\n');
        self.write_terminated(&buf);
    }

    /// Writes `line`, which already ends with its newline, in one write.
    fn write_terminated(&self, line: &[u8]) {
        let result = {
            let mut writer = self.writer.lock();
            writer.write_all(line).and_then(|()| writer.flush())
        };
        if let Err(e) = result {
            self.lost.fetch_add(1, Relaxed);
            if !self.failed.swap(true, Relaxed) {
                (self.on_failure)(&e);
            }
        }
    }

    /// Lines that could not be written.
    pub fn lost_lines(&self) -> u64 {
        self.lost.load(Relaxed)
    }
}

/// Renders snapshots and writes them to a sink, then hands each finished
/// request to the exits added with [`with_sink`](Emitter::with_sink), after
/// the tail-sampling decision of [`with_sampling`](Emitter::with_sampling).
#[derive(Debug, Clone)]
pub struct Emitter {
    format: LineFormat,
    sink: Arc<LineSink>,
    /// `None` for the line alone: the contract's path, untouched.
    exits: Option<Arc<Exits>>,
}

/// The exits and the sampling policy beyond the line.
#[derive(Default)]
struct Exits {
    sinks: Vec<Arc<dyn RequestSink>>,
    sampling: Option<TailSampling>,
}

impl fmt::Debug for Exits {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Exits")
            .field("sinks", &self.sinks.len())
            .field("sampling", &self.sampling)
            .finish()
    }
}

thread_local! {
    static LINE: RefCell<String> = RefCell::new(String::with_capacity(2048));
}

impl Emitter {
    /// An emitter of `format` lines into `sink`.
    pub fn new(format: LineFormat, sink: LineSink) -> Self {
        Emitter {
            format,
            sink: Arc::new(sink),
            exits: None,
        }
    }

    fn exits_mut(&mut self) -> &mut Exits {
        let exits = self.exits.get_or_insert_with(Arc::default);
        // Clones made earlier keep their own exits.
        if Arc::get_mut(exits).is_none() {
            let copy = Exits {
                sinks: exits.sinks.clone(),
                sampling: exits.sampling.clone(),
            };
            *exits = Arc::new(copy);
        }
        Arc::get_mut(exits).expect("a fresh Arc is unique")
    }

    /// Adds an exit: every finished request is handed to `sink` (those tail
    /// sampling drops only when the sink [sees every
    /// request](RequestSink::sees_every_request)).
    pub fn with_sink(mut self, sink: impl RequestSink) -> Self {
        self.exits_mut().sinks.push(Arc::new(sink));
        self
    }

    /// Writes the line (and hands the request to the exits that want kept
    /// requests only) only for the requests `sampling` keeps. Without it,
    /// every request keeps its line.
    pub fn with_sampling(mut self, sampling: TailSampling) -> Self {
        self.exits_mut().sampling = Some(sampling);
        self
    }

    /// The tail-sampling policy, if any (its count of sampled-out requests).
    pub fn sampling(&self) -> Option<&TailSampling> {
        self.exits.as_ref()?.sampling.as_ref()
    }

    /// Whether an exit asked for the request's trace context.
    pub fn wants_trace_context(&self) -> bool {
        self.exits
            .as_ref()
            .is_some_and(|exits| exits.sinks.iter().any(|s| s.wants_trace_context()))
    }

    /// The line format.
    pub fn format(&self) -> &LineFormat {
        &self.format
    }

    /// The sink.
    pub fn sink(&self) -> &LineSink {
        &self.sink
    }

    /// Renders and writes one line for `snapshot`, stamped now (and hands
    /// it to the exits, with no facts: see [`emit_request`](Self::emit_request)).
    pub fn emit(&self, snapshot: &Snapshot) {
        match &self.exits {
            None => self.write(snapshot, SystemTime::now(), |_| ()),
            Some(_) => self.emit_request(snapshot, &RequestFacts::default()),
        }
    }

    /// Finishes one request: decides whether sampling keeps it, writes its
    /// line if so, and hands it to the exits.
    pub fn emit_request(&self, snapshot: &Snapshot, facts: &RequestFacts) {
        let end_time = SystemTime::now();
        let Some(exits) = &self.exits else {
            self.write(snapshot, end_time, |_| ());
            return;
        };
        let sampled = exits
            .sampling
            .as_ref()
            .is_none_or(|sampling| sampling.keep(snapshot, facts));
        let hand_over = |line: Option<&str>| {
            let request = FinishedRequest {
                snapshot,
                facts,
                sampled,
                line,
                end_time,
            };
            for sink in &exits.sinks {
                if sampled || sink.sees_every_request() {
                    sink.record(&request);
                }
            }
        };
        if sampled {
            self.write(snapshot, end_time, |line| hand_over(Some(line)));
        } else {
            hand_over(None);
        }
    }

    /// Renders the line stamped `time`, writes it, then gives it to `then`.
    fn write(&self, snapshot: &Snapshot, time: SystemTime, then: impl FnOnce(&str)) {
        LINE.with(|line| match line.try_borrow_mut() {
            // The line and its newline in the thread's buffer: no allocation.
            Ok(mut line) => {
                self.format.render(snapshot, time, &mut line);
                line.push('\n');
                self.sink.write_terminated(line.as_bytes());
                then(&line[..line.len() - 1]);
            }
            // Re-entered from a sink that itself emits: use a fresh buffer.
            Err(_) => {
                let mut line = String::new();
                self.format.render(snapshot, time, &mut line);
                self.sink.write_line(&line);
                then(&line);
            }
        });
    }
}
