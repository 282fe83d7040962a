//! Lines written in batches: each request renders its line as it ends, on
//! its own thread, into a buffer that thread keeps for the emitter, and a
//! thread of the emitter's own writes the buffers out to the sink. A line
//! then costs its rendering, under a lock its thread alone takes but for a
//! moment now and then, instead of a write under the sink's lock, which the
//! threads of a busy service contend for.
//!
//! No request thread waits on a write: a buffer past [`CHUNK_BYTES`] is
//! handed to the emitter's thread as a chunk, whole, and that thread writes
//! every buffer, chunks first, every interval (and at once when a thread
//! has [`WAKE_AT_CHUNKS`] chunks waiting), taking each buffer's lines out
//! under its lock and writing them with no buffer's lock held. (Writing
//! under the buffer's lock, as a first version did, parked the buffer's
//! thread at its next line for as long as the write took.)
//!
//! Nothing is dropped: [`Background::flush`] writes every buffer out, and
//! so does dropping the last emitter; a thread whose chunks pile up past
//! [`QUEUED_CHUNKS_MAX`] (a sink slower than the lines) writes them itself.
//! Lines of one thread keep their order, as chunks are taken and written
//! under one lock; lines of requests that ended on different threads within
//! one interval may reach the sink in either order, as concurrent requests'
//! may anyway.

use std::cell::RefCell;
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex, MutexGuard};

use super::LineSink;

/// A thread's buffer becomes a chunk for the emitter's thread once it holds
/// this much (about a hundred and twenty lines of the contract's length):
/// as much as a service's own log buffers (a `BufWriter`'s 64 KiB), so
/// that the write goes straight through such a buffer rather than being
/// copied in.
const CHUNK_BYTES: usize = 64 * 1024;

/// Room for a line past [`CHUNK_BYTES`]: a buffer is never grown or moved.
const BUFFER_CAPACITY: usize = CHUNK_BYTES + 4096;

/// Chunks a thread may have waiting for the emitter's thread before it
/// writes them itself: a sink slower than the lines then slows the threads
/// that make them rather than the memory growing.
const QUEUED_CHUNKS_MAX: usize = 8;

/// Chunks a thread may have waiting before it wakes the emitter's thread
/// to write them before its next round. Fewer wait for that round: waking
/// a thread on another core costs a system call and, under a hypervisor,
/// an interrupt between cores, which, once a chunk, cost more than a
/// tenth of the lines' own cost.
const WAKE_AT_CHUNKS: usize = QUEUED_CHUNKS_MAX / 2;

/// Emptied buffers kept for the next chunks, so that handing a chunk over
/// allocates nothing.
const SPARE_BUFFERS_MAX: usize = 16;

/// How long a flush waits for a write under way on another thread.
const FLUSH_WAIT: Duration = Duration::from_millis(100);

/// One thread's lines, not yet written: the chunks it handed over, oldest
/// first, and the lines since.
struct Buffer {
    chunks: Vec<Chunk>,
    current: Chunk,
}

/// Whole lines, each ending with its newline, and how many.
struct Chunk {
    text: String,
    lines: u64,
}

/// Where a line went.
enum Pushed {
    /// Into this thread's buffer.
    Buffered,
    /// Into this thread's buffer, which then held more chunks than the
    /// emitter's thread may leave waiting.
    BackedUp(SharedBuffer),
    /// Nowhere: this thread's buffers are in use or gone.
    Nowhere,
}

/// What wakes the emitter's thread.
#[derive(Default)]
struct Wake {
    stopped: bool,
    /// A thread handed a chunk over since the emitter's thread last looked.
    chunk_ready: bool,
}

/// Every thread's buffer, and the sink they are written to.
struct Buffers {
    sink: Arc<LineSink>,
    /// The buffer of each thread that wrote a line; a thread that is gone
    /// leaves its buffer here until it is written out.
    threads: Mutex<Vec<SharedBuffer>>,
    /// Held while lines are taken out of the buffers and written, so that
    /// what was taken first is written first.
    writing: Mutex<()>,
    spare: Mutex<Vec<String>>,
    wake: Mutex<Wake>,
    woken: Condvar,
}

/// A thread's buffer, shared with the emitter's thread that writes it out.
type SharedBuffer = Arc<Mutex<Buffer>>;

thread_local! {
    /// This thread's buffer for each live emitter it wrote a line for.
    static THREAD_BUFFERS: RefCell<Vec<(Weak<Buffers>, SharedBuffer)>> =
        const { RefCell::new(Vec::new()) };
}

impl Buffers {
    /// Appends a line, written by `render` (which appends to the string it
    /// is given), and its newline to this thread's buffer, and hands the
    /// buffer over as a chunk when it has grown past [`CHUNK_BYTES`].
    fn push_with(self: &Arc<Self>, render: impl FnOnce(&mut String)) {
        let mut render = Some(render);
        let pushed = THREAD_BUFFERS.try_with(|buffers| {
            let Ok(mut buffers) = buffers.try_borrow_mut() else {
                return Pushed::Nowhere;
            };
            let at = buffers
                .iter()
                .position(|(owner, _)| std::ptr::eq(owner.as_ptr(), Arc::as_ptr(self)));
            let at = at.unwrap_or_else(|| self.add_thread_buffer(&mut buffers));
            let shared = &buffers[at].1;
            let mut buffer = shared.lock();
            if let Some(render) = render.take() {
                render(&mut buffer.current.text);
            }
            buffer.current.text.push('\n');
            buffer.current.lines += 1;
            if buffer.current.text.len() < CHUNK_BYTES {
                return Pushed::Buffered;
            }
            self.hand_over(shared, buffer)
        });
        match pushed.unwrap_or(Pushed::Nowhere) {
            Pushed::Buffered => {}
            // The emitter's thread is behind: this thread writes its own
            // lines, in the order of every other write.
            Pushed::BackedUp(buffer) => {
                let _writing = self.writing.lock();
                self.write_buffer(&buffer, true);
            }
            // A thread tearing down its thread-locals writes its line at once.
            Pushed::Nowhere => {
                if let Some(render) = render.take() {
                    let mut line = String::new();
                    render(&mut line);
                    self.sink.write_line(&line);
                }
            }
        }
    }

    /// A buffer for this thread's lines, added to `buffers` (this thread's)
    /// and to every thread's: at its index in `buffers`. Out of line, as
    /// the rest of what a line does only now and then, so that a line's
    /// common path stays small in the instruction cache.
    #[cold]
    #[inline(never)]
    fn add_thread_buffer(
        self: &Arc<Self>,
        buffers: &mut Vec<(Weak<Buffers>, SharedBuffer)>,
    ) -> usize {
        // Emitters dropped since this thread last wrote leave their
        // entries behind: dropped here, on a first line.
        buffers.retain(|(owner, _)| owner.strong_count() > 0);
        let buffer = Arc::new(Mutex::new(Buffer {
            chunks: Vec::new(),
            current: Chunk {
                text: String::with_capacity(BUFFER_CAPACITY),
                lines: 0,
            },
        }));
        self.threads.lock().push(Arc::clone(&buffer));
        buffers.push((Arc::downgrade(self), buffer));
        buffers.len() - 1
    }

    /// Hands this thread's full buffer, `buffer` (locked, of `shared`),
    /// over as a chunk, and wakes the emitter's thread when chunks pile up.
    #[inline(never)]
    fn hand_over(&self, shared: &SharedBuffer, mut buffer: MutexGuard<'_, Buffer>) -> Pushed {
        let chunk = self.take_current(&mut buffer);
        buffer.chunks.push(chunk);
        let queued = buffer.chunks.len();
        drop(buffer);
        if queued > QUEUED_CHUNKS_MAX {
            return Pushed::BackedUp(Arc::clone(shared));
        }
        if queued < WAKE_AT_CHUNKS {
            // Written on the emitter's thread's next round.
            return Pushed::Buffered;
        }
        let mut wake = self.wake.lock();
        wake.chunk_ready = true;
        self.woken.notify_one();
        Pushed::Buffered
    }

    /// Takes `buffer`'s lines since its last chunk, leaving it an empty
    /// buffer kept from an earlier chunk (or a new one).
    fn take_current(&self, buffer: &mut Buffer) -> Chunk {
        let empty = self
            .spare
            .lock()
            .pop()
            .unwrap_or_else(|| String::with_capacity(BUFFER_CAPACITY));
        Chunk {
            text: std::mem::replace(&mut buffer.current.text, empty),
            lines: std::mem::take(&mut buffer.current.lines),
        }
    }

    /// Writes out `buffer`'s chunks and, when `all`, its lines since, with
    /// no lock on it held while writing. The caller holds `writing`.
    fn write_buffer(&self, buffer: &Mutex<Buffer>, all: bool) {
        let (chunks, rest) = {
            let mut buffer = buffer.lock();
            let chunks = std::mem::take(&mut buffer.chunks);
            let rest = (all && buffer.current.lines > 0).then(|| self.take_current(&mut buffer));
            (chunks, rest)
        };
        for mut chunk in chunks.into_iter().chain(rest) {
            self.sink.write_lines(chunk.text.as_bytes(), chunk.lines);
            chunk.text.clear();
            let mut spare = self.spare.lock();
            if spare.len() < SPARE_BUFFERS_MAX {
                spare.push(chunk.text);
            }
        }
    }

    /// Writes every thread's chunks out and, when `all`, every line
    /// buffered, then flushes the sink. `wait` is how long to wait for a
    /// write under way on another thread: `None` to wait as long as it
    /// takes (the emitter's thread), else nothing is written when it takes
    /// longer (a flush from a thread that is itself writing, through a
    /// sink's failure report, would otherwise wait for itself); the
    /// emitter's thread writes it all later.
    fn write_all(&self, wait: Option<Duration>, all: bool) {
        let writing = match wait {
            None => Some(self.writing.lock()),
            Some(wait) => self.writing.try_lock_for(wait),
        };
        if writing.is_some() {
            let threads = self.threads.lock().clone();
            for buffer in &threads {
                self.write_buffer(buffer, all);
            }
        }
        drop(writing);
        if !all {
            return;
        }
        self.sink.flush();
        // The buffers of threads that are gone, now empty, are let go.
        self.threads.lock().retain(|buffer| {
            Arc::strong_count(buffer) > 1 || {
                let buffer = buffer.lock();
                buffer.current.lines > 0 || !buffer.chunks.is_empty()
            }
        });
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
    /// Starts the thread that writes the chunks out to `sink` as they come
    /// and every buffer every `interval`; `None` when no thread can be
    /// started (each line is then written as its request ends).
    pub(crate) fn start(sink: Arc<LineSink>, interval: Duration) -> Option<Background> {
        let buffers = Arc::new(Buffers {
            sink,
            threads: Mutex::default(),
            writing: Mutex::new(()),
            spare: Mutex::default(),
            wake: Mutex::default(),
            woken: Condvar::new(),
        });
        let thread = std::thread::Builder::new()
            .name("perf-trace-lines".into())
            .spawn({
                let buffers = Arc::clone(&buffers);
                move || {
                    // Every buffer every interval; the chunks of a thread
                    // that has many waiting, when it wakes this thread.
                    let mut last_all = Instant::now();
                    loop {
                        {
                            let mut wake = buffers.wake.lock();
                            let left = interval.saturating_sub(last_all.elapsed());
                            if !wake.stopped && !wake.chunk_ready && !left.is_zero() {
                                buffers.woken.wait_for(&mut wake, left);
                            }
                            if wake.stopped {
                                return;
                            }
                            wake.chunk_ready = false;
                        }
                        let all = last_all.elapsed() >= interval;
                        if all {
                            last_all = Instant::now();
                        }
                        buffers.write_all(None, all);
                    }
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
        self.buffers.push_with(|buffer| buffer.push_str(line));
    }

    /// Adds the line `render` appends to the string it is given (without
    /// its newline) to this thread's buffer, rendered in place.
    pub(crate) fn push_with(&self, render: impl FnOnce(&mut String)) {
        self.buffers.push_with(render);
    }

    /// Writes every buffer out now, on this thread, and flushes the sink.
    /// Waits up to [`FLUSH_WAIT`] for a write under way on another thread;
    /// past it, the lines stay for the emitter's thread.
    pub(crate) fn flush(&self) {
        self.buffers.write_all(Some(FLUSH_WAIT), true);
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
        self.buffers.wake.lock().stopped = true;
        self.buffers.woken.notify_one();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        self.buffers.write_all(None, true);
    }
}
