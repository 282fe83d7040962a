//! Lines rendered off the request's thread: a finished request is queued as
//! its recorder and where it ended (the clock, the pool's figures, the wall
//! time), and a thread of the emitter's own takes the queue every interval,
//! takes each snapshot, renders and writes the lines, and hands them to the
//! exits. A request then pays for a push under a short lock instead of the
//! snapshot, the line and the write.
//!
//! Nothing is dropped: a queue at capacity (the thread cannot keep up) makes
//! the request render its own line, as without a queue, and dropping the
//! last emitter renders what is still queued.

use std::thread::JoinHandle;
use std::time::{Duration, SystemTime};

use parking_lot::{Condvar, Mutex};

use crate::export::RequestFacts;
use crate::recorder::{Recorder, Recycled, RequestEnd};
use crate::sink::Emitter;
use crate::snapshot::Snapshot;

/// Requests queued before the thread is woken early, rather than at its
/// interval.
const BATCH: usize = 512;

/// Requests queued at most; beyond, requests render their own lines.
const CAPACITY: usize = 16 * 1024;

/// How long a flush waits for the batch the thread is rendering.
const FLUSH_WAIT: Duration = Duration::from_millis(100);

/// A finished request whose line is not rendered yet.
pub(crate) struct Queued {
    pub(crate) recorder: Recorder,
    pub(crate) end: RequestEnd,
    pub(crate) time: SystemTime,
    pub(crate) facts: RequestFacts,
}

impl Queued {
    /// Renders through `scratch`, a snapshot whose lists are reused, then
    /// keeps the recorder in `recycled` for a next request.
    fn emit_with(self, emitter: &Emitter, scratch: &mut Snapshot, recycled: &Recycled) {
        self.recorder.snapshot_into(self.end, scratch);
        emitter.emit_at(scratch, &self.facts, self.time);
        recycled.put(self.recorder);
    }
}

#[derive(Default)]
struct State {
    items: Vec<Queued>,
    stopped: bool,
}

#[derive(Default)]
struct Queue {
    state: Mutex<State>,
    wake: Condvar,
    /// Held while a batch is taken and rendered, so that a flush returns
    /// only once every line queued before it is written; it keeps the
    /// snapshot every line is taken into.
    rendering: Mutex<Snapshot>,
    /// Recorders whose lines are written, for the next requests.
    recycled: Recycled,
}

impl Queue {
    /// Takes what is queued and renders it with `emitter`, then flushes.
    fn render(&self, emitter: &Emitter) {
        let mut scratch = self.rendering.lock();
        self.render_locked(emitter, &mut scratch);
    }

    /// [`render`](Self::render), the rendering lock held.
    fn render_locked(&self, emitter: &Emitter, scratch: &mut Snapshot) {
        let mut batch = std::mem::take(&mut self.state.lock().items);
        if batch.is_empty() {
            return;
        }
        for queued in batch.drain(..) {
            queued.emit_with(emitter, scratch, &self.recycled);
        }
        emitter.sink().flush();
        // The emptied list goes back, with what was queued meanwhile, so
        // that the queue does not grow from nothing every batch.
        let mut state = self.state.lock();
        batch.append(&mut state.items);
        state.items = batch;
    }
}

/// The queue and its thread; dropped with the last emitter that shares it.
pub(crate) struct Background {
    queue: std::sync::Arc<Queue>,
    thread: Option<JoinHandle<()>>,
    /// Renders in the foreground: what is left when the thread stops, and
    /// what a full queue turns away.
    emitter: Emitter,
    interval: Duration,
}

impl std::fmt::Debug for Background {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Background")
            .field("interval", &self.interval)
            .field("queued", &self.queue.state.lock().items.len())
            .finish_non_exhaustive()
    }
}

impl Background {
    /// Starts the thread that renders `emitter`'s lines every `interval`;
    /// `None` when no thread can be started (lines are then rendered by
    /// their requests).
    pub(crate) fn start(emitter: Emitter, interval: Duration) -> Option<Background> {
        let queue = std::sync::Arc::new(Queue::default());
        let thread = std::thread::Builder::new()
            .name("perf-trace-lines".into())
            .spawn({
                let queue = std::sync::Arc::clone(&queue);
                let emitter = emitter.clone();
                move || loop {
                    {
                        let mut state = queue.state.lock();
                        if !state.stopped && state.items.len() < BATCH {
                            queue.wake.wait_for(&mut state, interval);
                        }
                        if state.stopped {
                            return;
                        }
                    }
                    queue.render(&emitter);
                }
            })
            .ok()?;
        Some(Background {
            queue,
            thread: Some(thread),
            emitter,
            interval,
        })
    }

    /// Queues a finished request, or renders it now when the queue is full.
    pub(crate) fn push(&self, queued: Queued) {
        let mut state = self.queue.state.lock();
        if state.items.len() >= CAPACITY {
            drop(state);
            queued.emit_with(
                &self.emitter,
                &mut Snapshot::default(),
                &self.queue.recycled,
            );
            return;
        }
        state.items.push(queued);
        if state.items.len() == BATCH {
            self.queue.wake.notify_one();
        }
    }

    /// Renders everything queued now, on this thread, and flushes the sink.
    /// Waits up to [`FLUSH_WAIT`] for a batch the thread is rendering (a
    /// flush called from that very thread, by an exit, would otherwise wait
    /// for itself); past it, what is queued stays for the thread.
    pub(crate) fn flush(&self) {
        if let Some(mut scratch) = self.queue.rendering.try_lock_for(FLUSH_WAIT) {
            self.queue.render_locked(&self.emitter, &mut scratch);
        }
        self.emitter.sink().flush();
    }

    pub(crate) fn interval(&self) -> Duration {
        self.interval
    }

    /// Recorders of rendered lines, for the next requests.
    pub(crate) fn recycled(&self) -> &Recycled {
        &self.queue.recycled
    }
}

/// Renders an emitter's queued lines on demand without keeping the emitter
/// (or its thread) alive: see [`Emitter::queued_lines`].
#[derive(Debug, Clone, Default)]
pub struct QueuedLines(std::sync::Weak<Background>);

impl QueuedLines {
    pub(crate) fn of(background: &std::sync::Arc<Background>) -> Self {
        QueuedLines(std::sync::Arc::downgrade(background))
    }

    /// Renders and writes every line queued so far (nothing once the
    /// emitter is gone: its last clone rendered them as it was dropped).
    pub fn render_now(&self) {
        if let Some(background) = self.0.upgrade() {
            background.flush();
        }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        self.queue.state.lock().stopped = true;
        self.queue.wake.notify_one();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        self.flush();
    }
}
