//! Where lines go: standard output by default, any writer in tests. A failing
//! sink never fails the request; the failure is reported once.

use std::cell::RefCell;
use std::fmt;
use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::SystemTime;

use parking_lot::Mutex;

use crate::line::LineFormat;
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

/// Renders snapshots and writes them to a sink.
#[derive(Debug, Clone)]
pub struct Emitter {
    format: LineFormat,
    sink: Arc<LineSink>,
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
        }
    }

    /// The line format.
    pub fn format(&self) -> &LineFormat {
        &self.format
    }

    /// The sink.
    pub fn sink(&self) -> &LineSink {
        &self.sink
    }

    /// Renders and writes one line for `snapshot`, stamped now.
    pub fn emit(&self, snapshot: &Snapshot) {
        LINE.with(|line| match line.try_borrow_mut() {
            // The line and its newline in the thread's buffer: no allocation.
            Ok(mut line) => {
                self.format.render(snapshot, SystemTime::now(), &mut line);
                line.push('\n');
                self.sink.write_terminated(line.as_bytes());
            }
            // Re-entered from a sink that itself emits: use a fresh buffer.
            Err(_) => {
                let mut line = String::new();
                self.format.render(snapshot, SystemTime::now(), &mut line);
                self.sink.write_line(&line);
            }
        });
    }
}
