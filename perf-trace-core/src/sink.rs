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

/// A destination for whole lines, shared by all requests.
pub struct LineSink {
    writer: Mutex<Box<dyn Write + Send>>,
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
        LineSink {
            writer: Mutex::new(Box::new(writer)),
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
        let result = {
            let mut writer = self.writer.lock();
            // One buffer, one write: concurrent lines never interleave.
            let mut buf = Vec::with_capacity(line.len() + 1);
            buf.extend_from_slice(line.as_bytes());
            buf.push(b'\n');
            writer.write_all(&buf).and_then(|()| writer.flush())
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
            Ok(mut line) => {
                self.format.render(snapshot, SystemTime::now(), &mut line);
                self.sink.write_line(&line);
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
