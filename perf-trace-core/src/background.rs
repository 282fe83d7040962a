//! Lines written in batches: each request renders its line as it ends, on
//! its own thread, into a buffer that thread keeps for the emitter, and a
//! thread of the emitter's own writes every buffer out to the sink every
//! interval. A line then costs its rendering and a copy under a lock no
//! other thread takes but every interval, instead of a write under the
//! sink's lock, which the threads of a busy service contend for.
//!
//! Nothing is dropped: a buffer past [`BUFFER_LIMIT`] is written out by its
//! own thread at once, [`Background::flush`] writes every buffer out, and so
//! does dropping the last emitter. Lines of one thread keep their order;
//! lines of requests that ended on different threads within one interval
//! may reach the sink in either order, as concurrent requests' may anyway.

use std::cell::RefCell;
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

use crate::recorder::Recycled;
use crate::sink::LineSink;

/// A thread's buffer is written out by that thread once it holds this much
/// (about sixty lines of the contract's length).
const BUFFER_LIMIT: usize = 32 * 1024;

/// How long a flush waits for a buffer another thread is writing to.
const FLUSH_WAIT: Duration = Duration::from_millis(100);

/// One thread's lines, not yet written.
#[derive(Default)]
struct Buffer {
    text: String,
    lines: u64,
}

/// Every thread's buffer, and the sink they are written to.
struct Buffers {
    sink: Arc<LineSink>,
    /// The buffer of each thread that wrote a line; a thread that is gone
    /// leaves its buffer here until it is written out.
    threads: Mutex<Vec<SharedBuffer>>,
    stopped: Mutex<bool>,
    wake: Condvar,
    /// Recorders whose lines are written, for the next requests.
    recycled: Recycled,
}

/// A thread's buffer, shared with the emitter's thread that writes it out.
type SharedBuffer = Arc<Mutex<Buffer>>;

thread_local! {
    /// This thread's buffer for each live emitter it wrote a line for.
    static THREAD_BUFFERS: RefCell<Vec<(Weak<Buffers>, SharedBuffer)>> =
        const { RefCell::new(Vec::new()) };
}

impl Buffers {
    /// Appends `line` and its newline to this thread's buffer, and writes
    /// the buffer out when it has grown past [`BUFFER_LIMIT`].
    fn push(self: &Arc<Self>, line: &str) {
        let pushed = THREAD_BUFFERS.try_with(|buffers| {
            let Ok(mut buffers) = buffers.try_borrow_mut() else {
                return false;
            };
            let at = buffers
                .iter()
                .position(|(owner, _)| std::ptr::eq(owner.as_ptr(), Arc::as_ptr(self)));
            let at = at.unwrap_or_else(|| {
                // Emitters dropped since this thread last wrote leave their
                // entries behind: dropped here, on a first line.
                buffers.retain(|(owner, _)| owner.strong_count() > 0);
                let buffer = Arc::new(Mutex::new(Buffer::default()));
                self.threads.lock().push(Arc::clone(&buffer));
                buffers.push((Arc::downgrade(self), buffer));
                buffers.len() - 1
            });
            let buffer = &buffers[at].1;
            let mut buffer = buffer.lock();
            buffer.text.push_str(line);
            buffer.text.push('\n');
            buffer.lines += 1;
            if buffer.text.len() >= BUFFER_LIMIT {
                // Written under the buffer's lock, so that no later line of
                // this thread can reach the sink before these.
                self.write_out(&mut buffer);
            }
            true
        });
        // A thread tearing down its thread-locals writes its line at once.
        if pushed != Ok(true) {
            self.sink.write_line(line);
        }
    }

    /// Writes `buffer`'s lines to the sink in one write and empties it.
    fn write_out(&self, buffer: &mut Buffer) {
        if buffer.lines > 0 {
            self.sink.write_lines(buffer.text.as_bytes(), buffer.lines);
            buffer.text.clear();
            buffer.lines = 0;
        }
    }

    /// Writes every thread's buffer out, then flushes the sink. `wait` is
    /// how long to wait for a buffer its thread is writing to: `None` to
    /// wait as long as it takes (the emitter's thread), else a buffer held
    /// longer is left for later (a flush from a thread that holds one,
    /// through a sink's failure report, would otherwise wait for itself).
    fn write_all(&self, wait: Option<Duration>) {
        let threads = self.threads.lock().clone();
        for buffer in &threads {
            let buffer = match wait {
                None => Some(buffer.lock()),
                Some(wait) => buffer.try_lock_for(wait),
            };
            if let Some(mut buffer) = buffer {
                self.write_out(&mut buffer);
            }
        }
        drop(threads);
        self.sink.flush();
        // The buffers of threads that are gone, now empty, are let go.
        self.threads
            .lock()
            .retain(|buffer| Arc::strong_count(buffer) > 1 || buffer.lock().lines > 0);
    }
}

/// The threads' buffers and the thread that writes them out; dropped with
/// the last emitter that shares it, writing out what is left.
pub(crate) struct Background {
    buffers: Arc<Buffers>,
    thread: Option<JoinHandle<()>>,
    interval: Duration,
}

impl std::fmt::Debug for Background {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Background")
            .field("interval", &self.interval)
            .field("threads", &self.buffers.threads.lock().len())
            .finish_non_exhaustive()
    }
}

impl Background {
    /// Starts the thread that writes the buffers out to `sink` every
    /// `interval`; `None` when no thread can be started (each line is then
    /// written as its request ends).
    pub(crate) fn start(sink: Arc<LineSink>, interval: Duration) -> Option<Background> {
        let buffers = Arc::new(Buffers {
            sink,
            threads: Mutex::default(),
            stopped: Mutex::new(false),
            wake: Condvar::new(),
            recycled: Recycled::default(),
        });
        let thread = std::thread::Builder::new()
            .name("perf-trace-lines".into())
            .spawn({
                let buffers = Arc::clone(&buffers);
                move || loop {
                    {
                        let mut stopped = buffers.stopped.lock();
                        if !*stopped {
                            buffers.wake.wait_for(&mut stopped, interval);
                        }
                        if *stopped {
                            return;
                        }
                    }
                    buffers.write_all(None);
                }
            })
            .ok()?;
        Some(Background {
            buffers,
            thread: Some(thread),
            interval,
        })
    }

    /// Adds a rendered line (without its newline) to this thread's buffer.
    pub(crate) fn push(&self, line: &str) {
        self.buffers.push(line);
    }

    /// Writes every buffer out now, on this thread, and flushes the sink.
    /// Waits up to [`FLUSH_WAIT`] for a buffer another thread is writing
    /// to; past it, that buffer stays for the emitter's thread.
    pub(crate) fn flush(&self) {
        self.buffers.write_all(Some(FLUSH_WAIT));
    }

    /// Recorders of written lines, for the next requests.
    pub(crate) fn recycled(&self) -> &Recycled {
        &self.buffers.recycled
    }
}

/// Writes an emitter's buffered lines out on demand without keeping the
/// emitter (or its thread) alive: see [`Emitter::queued_lines`](crate::Emitter::queued_lines).
#[derive(Debug, Clone, Default)]
pub struct QueuedLines(Weak<Background>);

impl QueuedLines {
    pub(crate) fn of(background: &Arc<Background>) -> Self {
        QueuedLines(Arc::downgrade(background))
    }

    /// Writes out every line buffered so far (nothing once the emitter is
    /// gone: its last clone wrote them out as it was dropped).
    pub fn render_now(&self) {
        if let Some(background) = self.0.upgrade() {
            background.flush();
        }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        *self.buffers.stopped.lock() = true;
        self.buffers.wake.notify_one();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        self.buffers.write_all(None);
    }
}
