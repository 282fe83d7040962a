//! The Hub's own log: one JSON object per line (`time`, `level`, `msg`,
//! `component`, then fields), written to the same sink as the perf_trace
//! lines. With the GCP format the message key is `message`.
//!
//! Logging never fails a request. When the destination fails (standard
//! output closed, a full disk), the first failure is reported once on
//! standard error, and further lines are dropped silently.

use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::SystemTime;

use parking_lot::Mutex;
use perf_trace_core::sink::QueuedLines;
use serde_json::Value;

/// The `component` of every Hub log line.
pub(crate) const COMPONENT: &str = "scion-hub";

/// A shared writer of whole lines.
pub type SharedWriter = Arc<Mutex<Box<dyn Write + Send>>>;

/// Makes a [`SharedWriter`] for standard output, with no buffer of its
/// own: the perf_trace lines come in batches, each thread's written by the
/// emitter's thread every `LINE_FLUSH_INTERVAL` of the tracing layer (so a traced
/// request makes no system call of its own for its line), and the Hub's own
/// lines are flushed one by one as they are written. A buffer here only
/// copied each batch that did not fill it before writing it out.
pub(crate) fn stdout_writer() -> SharedWriter {
    Arc::new(Mutex::new(Box::new(std::io::stdout())))
}

/// A severity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Level {
    /// Informational.
    Info,
    /// Something to look at.
    Warn,
    /// A failure.
    Error,
}

impl Level {
    fn as_str(self) -> &'static str {
        match self {
            Level::Info => "INFO",
            Level::Warn => "WARN",
            Level::Error => "ERROR",
        }
    }
}

/// The message of the one report of a failing log destination.
pub(crate) const LOG_FAILURE_MESSAGE: &str =
    "log lines cannot be written; further failures are not reported";

/// Writes JSON log lines.
#[derive(Clone)]
pub struct Logger {
    writer: SharedWriter,
    gcp: bool,
    failure_reported: Arc<AtomicBool>,
    /// The perf_trace lines buffered by their threads, written out before
    /// each of the logger's own lines so that they keep their order.
    queued_lines: Arc<OnceLock<QueuedLines>>,
}

impl std::fmt::Debug for Logger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Logger")
            .field("gcp", &self.gcp)
            .finish_non_exhaustive()
    }
}

impl Logger {
    /// A logger writing to `writer`, in GCP format when `gcp`.
    pub fn new(writer: SharedWriter, gcp: bool) -> Self {
        Logger {
            writer,
            gcp,
            failure_reported: Arc::default(),
            queued_lines: Arc::default(),
        }
    }

    /// The writer lines go to.
    pub fn writer(&self) -> &SharedWriter {
        &self.writer
    }

    /// Writes the perf_trace lines `queued` holds before each of this
    /// logger's own lines (set once, by the tracing layer, for all clones).
    pub(crate) fn write_after(&self, queued: QueuedLines) {
        let _ = self.queued_lines.set(queued);
    }

    fn render_queued_lines(&self) {
        if let Some(queued) = self.queued_lines.get() {
            queued.render_now();
        }
    }

    /// Writes out the perf_trace lines buffered by their threads (if any)
    /// and everything the destination buffers.
    pub fn flush(&self) {
        self.render_queued_lines();
        if let Err(e) = self.writer.lock().flush() {
            self.report_failure(&e);
        }
    }

    /// Whether lines use the GCP message key.
    pub fn gcp(&self) -> bool {
        self.gcp
    }

    /// Renders one line, newline included.
    fn render(&self, level: Level, msg: &str, fields: &[(&str, Value)]) -> String {
        let time = humantime::format_rfc3339_nanos(SystemTime::now()).to_string();
        let mut line = String::with_capacity(128);
        line.push_str("{\"time\":");
        line.push_str(&Value::from(time).to_string());
        line.push_str(",\"level\":\"");
        line.push_str(level.as_str());
        line.push_str(if self.gcp {
            "\",\"message\":"
        } else {
            "\",\"msg\":"
        });
        line.push_str(&Value::from(msg).to_string());
        line.push_str(",\"component\":\"");
        line.push_str(COMPONENT);
        line.push('"');
        for (key, value) in fields {
            line.push(',');
            line.push_str(&Value::from(*key).to_string());
            line.push(':');
            line.push_str(&value.to_string());
        }
        line.push_str("}\n");
        line
    }

    /// Writes one line. A failure to write never reaches the caller; the
    /// first one is reported (see `Logger::report_failure`).
    pub(crate) fn log(&self, level: Level, msg: &str, fields: &[(&str, Value)]) {
        self.render_queued_lines();
        let line = self.render(level, msg, fields);
        let result = {
            let mut writer = self.writer.lock();
            writer
                .write_all(line.as_bytes())
                .and_then(|()| writer.flush())
        };
        if let Err(e) = result {
            self.report_failure(&e);
        }
    }

    /// Reports that the log destination failed with `error`: once for this
    /// logger and all its clones (the perf_trace sink shares it), as one
    /// JSON line on standard error. Later calls do nothing.
    pub(crate) fn report_failure(&self, error: &io::Error) {
        if self.failure_reported.swap(true, Ordering::Relaxed) {
            return;
        }
        let line = self.render(
            Level::Error,
            LOG_FAILURE_MESSAGE,
            &[("error", Value::from(error.to_string()))],
        );
        let _ = io::stderr().write_all(line.as_bytes());
    }

    /// Whether a failure of the destination has been reported.
    #[cfg(test)]
    pub(crate) fn failure_reported(&self) -> bool {
        self.failure_reported.load(Ordering::Relaxed)
    }

    /// An informational line.
    pub(crate) fn info(&self, msg: &str, fields: &[(&str, Value)]) {
        self.log(Level::Info, msg, fields);
    }

    /// A warning line.
    pub fn warn(&self, msg: &str, fields: &[(&str, Value)]) {
        self.log(Level::Warn, msg, fields);
    }

    /// An error line.
    pub fn error(&self, msg: &str, fields: &[(&str, Value)]) {
        self.log(Level::Error, msg, fields);
    }
}

/// A writer into a shared buffer, for capturing lines in tests.
#[derive(Debug, Clone, Default)]
pub struct CaptureBuffer(Arc<Mutex<Vec<u8>>>);

impl CaptureBuffer {
    /// An empty buffer.
    pub fn new() -> Self {
        Self::default()
    }

    /// Everything written so far, as text.
    pub fn contents(&self) -> String {
        String::from_utf8_lossy(&self.0.lock()).into_owned()
    }

    /// Every complete line written so far.
    pub fn lines(&self) -> Vec<String> {
        self.contents().lines().map(str::to_owned).collect()
    }

    /// A shared writer into this buffer.
    pub fn writer(&self) -> SharedWriter {
        Arc::new(Mutex::new(Box::new(self.clone())))
    }
}

impl Write for CaptureBuffer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_hold_time_level_message_and_component_in_order() {
        let buf = CaptureBuffer::new();
        Logger::new(buf.writer(), false).warn("careful", &[("port", Value::from(1))]);
        Logger::new(buf.writer(), true).info("hello", &[]);
        let lines = buf.lines();
        assert!(lines[0].starts_with("{\"time\":\""), "{}", lines[0]);
        assert!(lines[0].ends_with(
            "\"level\":\"WARN\",\"msg\":\"careful\",\"component\":\"scion-hub\",\"port\":1}"
        ));
        assert!(lines[1].contains("\"message\":\"hello\""));
        assert!(!lines[1].contains("\"msg\""));
        serde_json::from_str::<Value>(&lines[0]).unwrap();
    }

    struct Broken;

    impl Write for Broken {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(io::Error::from(io::ErrorKind::BrokenPipe))
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_failing_destination_is_reported_once_for_every_clone() {
        let logger = Logger::new(Arc::new(Mutex::new(Box::new(Broken))), false);
        let clone = logger.clone();
        assert!(!logger.failure_reported());
        for _ in 0..3 {
            logger.info("lost", &[]);
            clone.error("lost too", &[]);
        }
        assert!(logger.failure_reported() && clone.failure_reported());
    }
}
