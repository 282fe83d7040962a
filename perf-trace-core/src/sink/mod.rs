//! Where lines go: standard output by default, any writer in tests. A failing
//! sink never fails the request; the failure is reported once.
//!
//! A sink writes each line at once: one `write` system call per request. A
//! busy service writes them in batches instead
//! ([`Emitter::in_background`](crate::Emitter::in_background)): each request renders its line into a
//! buffer its thread keeps, and a thread of the emitter's own writes the
//! buffers out (`background`).

use std::fmt;
use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::line::report_on_stderr;

mod background;
mod memory;

pub(crate) use background::Background;
pub use background::QueuedLines;
pub use memory::MemoryLines;

/// A writer behind a lock, which a service may share with its own log so
/// that both write whole lines to one destination.
pub type SharedLineWriter = Arc<Mutex<Box<dyn Write + Send>>>;

/// A destination for whole lines, shared by all requests. Each write of
/// lines (one line, or a batch of [`Emitter::in_background`](crate::Emitter::in_background)'s) is one
/// `write_all` under one lock, followed by a `flush`.
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
                let msg = "perf_trace lines cannot be written; further failures are not reported";
                report_on_stderr("ERROR", &[("msg", msg), ("error", &e.to_string())]);
            }),
        }
    }

    /// Replaces how the first failure is reported (a service can route it to
    /// its own logger).
    pub fn on_failure(mut self, report: impl Fn(&io::Error) + Send + Sync + 'static) -> Self {
        self.on_failure = Box::new(report);
        self
    }

    /// Writes out what the writer holds now (a failure is reported as a
    /// failed write is; the bytes stay in the buffer, to be tried again).
    pub fn flush(&self) {
        if let Err(e) = self.writer.lock().flush() {
            self.fail(&e, 0);
        }
    }

    /// Counts `lines` lost lines and reports the first failure.
    fn fail(&self, e: &io::Error, lines: u64) {
        self.lost.fetch_add(lines, Relaxed);
        if !self.failed.swap(true, Relaxed) {
            (self.on_failure)(e);
        }
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
    pub(crate) fn write_terminated(&self, line: &[u8]) {
        self.write_lines(line, 1);
    }

    /// Writes `count` whole lines, each ending with its newline, in one
    /// write (a failed write loses them all).
    pub(crate) fn write_lines(&self, lines: &[u8], count: u64) {
        let result = {
            let mut writer = self.writer.lock();
            writer.write_all(lines).and_then(|()| writer.flush())
        };
        if let Err(e) = result {
            self.fail(&e, count);
        }
    }

    /// Lines that could not be written: each line of a failed write counts
    /// one.
    pub fn lost_lines(&self) -> u64 {
        self.lost.load(Relaxed)
    }
}
