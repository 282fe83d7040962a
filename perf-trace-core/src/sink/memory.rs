//! Lines kept in memory, for tests: [`LineSink::memory`].

use std::io::{self, Write};
use std::sync::Arc;

use parking_lot::Mutex;

use super::LineSink;

/// The lines a [`LineSink::memory`] sink was given, read back in a test.
#[derive(Debug, Clone, Default)]
pub struct MemoryLines(Arc<Mutex<Vec<u8>>>);

impl MemoryLines {
    /// Every line written so far, in order, without its newline.
    pub fn lines(&self) -> Vec<String> {
        String::from_utf8_lossy(&self.0.lock())
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// The last line written, if any.
    pub fn last(&self) -> Option<String> {
        self.lines().pop()
    }

    /// Forgets every line written so far.
    pub fn clear(&self) {
        self.0.lock().clear();
    }
}

/// The writer side of [`MemoryLines`].
struct MemoryWriter(Arc<Mutex<Vec<u8>>>);

impl Write for MemoryWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.lock().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl LineSink {
    /// A sink that keeps its lines in memory, and the handle a test reads
    /// them from.
    ///
    /// ```
    /// use perf_trace_core::LineSink;
    /// let (sink, lines) = LineSink::memory();
    /// sink.write_line("{\"msg\":\"perf_trace\"}");
    /// assert_eq!(lines.lines(), ["{\"msg\":\"perf_trace\"}"]);
    /// ```
    pub fn memory() -> (LineSink, MemoryLines) {
        let lines = MemoryLines::default();
        let sink = LineSink::new(MemoryWriter(Arc::clone(&lines.0)));
        (sink, lines)
    }
}
