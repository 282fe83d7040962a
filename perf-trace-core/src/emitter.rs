//! The emitter: renders each finished request's line into a [`LineSink`],
//! then hands the request to the exits ([`RequestSink`]), after the
//! tail-sampling decision.

use std::any::Any;
use std::cell::RefCell;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

use crate::clock;
use crate::exits::{FinishedRequest, RequestFacts, RequestSink};
use crate::line::{LineFormat, LineSource};
use crate::recorder::{self, Recorder, RequestEnd};
use crate::sink::{Background, LineSink, QueuedLines};
use crate::snapshot::Snapshot;
use crate::timestamp;

/// Renders snapshots and writes them to a sink, then hands each finished
/// request to the exits added with [`with_sink`](Emitter::with_sink), after
/// the tail-sampling decision of [`with_sampling`](Emitter::with_sampling).
#[derive(Debug, Clone)]
pub struct Emitter {
    format: LineFormat,
    sink: Arc<LineSink>,
    /// `None` for the line alone: the contract's path, untouched.
    exits: Option<Arc<Exits>>,
    /// Set by [`in_background`](Emitter::in_background).
    background: Option<Arc<Background>>,
}

/// The exits and the sampling policy beyond the line.
#[derive(Default)]
struct Exits {
    sinks: Vec<Arc<dyn RequestSink>>,
    sampling: Option<Box<dyn Sampler>>,
}

/// A tail-sampling policy, as the emitter consults it: the crate's own is
/// `exits::sampling::TailSampling`, which the core does not import.
pub(crate) trait Sampler: Any + Send + Sync + fmt::Debug {
    /// Whether a finished request keeps its line.
    fn keep(&self, snapshot: &Snapshot, facts: &RequestFacts) -> bool;

    /// The same policy, with its own counts, for an emitter's copy.
    fn clone_box(&self) -> Box<dyn Sampler>;
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
    /// The snapshot a request's line is taken into as it ends, its lists
    /// kept from one request to the next.
    static SNAPSHOT: RefCell<Snapshot> = RefCell::new(Snapshot::default());
}

/// Where a request's line goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Delivery {
    /// Into this thread's buffer when lines are buffered
    /// ([`Emitter::in_background`]), straight to the writer otherwise: a
    /// request the layer finishes.
    Buffered,
    /// Straight to the writer: a request finished by a direct call.
    Direct,
}

impl Emitter {
    /// An emitter of `format` lines into `sink`.
    pub fn new(format: LineFormat, sink: LineSink) -> Self {
        Emitter {
            format,
            sink: Arc::new(sink),
            exits: None,
            background: None,
        }
    }

    /// Writes the lines of finished requests in batches: each request
    /// renders its line as it ends into a buffer its thread keeps, handed
    /// as a chunk to a thread of the emitter's own past 64 KiB; that thread
    /// writes every buffer out every `interval`, and a thread's chunks at
    /// once when it has four waiting. A
    /// request's end then costs its line, rendered where it is buffered,
    /// not a write under the sink's lock, which the threads of a busy
    /// service contend for; no request waits on a write unless the sink
    /// falls behind by several buffers.
    /// The line is the same; it reaches the sink up to `interval` later,
    /// and the exits at once. Nothing is dropped: dropping the last clone
    /// of the emitter writes out what is buffered, and
    /// [`flush`](Self::flush) does so at once. Lines of requests that ended
    /// on different threads within one interval may reach the sink in
    /// either order; the other lines ([`emit`](Self::emit),
    /// [`emit_request`](Self::emit_request)) are written at once.
    ///
    /// ```
    /// use std::time::Duration;
    /// use perf_trace_core::{Emitter, LineFormat, LineSink};
    ///
    /// let emitter = Emitter::new(LineFormat::scion("svc"), LineSink::stdout())
    ///     .in_background(Duration::from_millis(50));
    /// # drop(emitter);
    /// ```
    pub fn in_background(mut self, interval: Duration) -> Self {
        self.background = Background::start(Arc::clone(&self.sink), interval).map(Arc::new);
        self
    }

    /// Writes out every line buffered by [`in_background`](Self::in_background)
    /// now (waiting up to 100 ms for a write under way on another thread;
    /// past it, the emitter's thread writes them), and flushes the sink.
    pub fn flush(&self) {
        match &self.background {
            Some(background) => background.flush(),
            None => self.sink.flush(),
        }
    }

    /// A handle that writes out the lines buffered by
    /// [`in_background`](Self::in_background) on demand, without keeping
    /// the emitter alive: a service's own logger calls it before writing
    /// one of its lines, so that the lines of the requests that ended
    /// before stay before it. Does nothing for an emitter that writes each
    /// line as its request ends.
    pub fn queued_lines(&self) -> QueuedLines {
        self.background
            .as_ref()
            .map(QueuedLines::of)
            .unwrap_or_default()
    }

    /// Ends `recorder`'s request: renders and writes (or buffers) its line,
    /// straight from the recorder's tables when no exit reads the request,
    /// else from a snapshot that is then handed to the exits; then keeps
    /// the recorder for this thread's next request. `end_ticks` is the
    /// request clock's reading as the request ended.
    pub(crate) fn finish(&self, recorder: Recorder, facts: &RequestFacts, end_ticks: u64) {
        let end = recorder.end_at(end_ticks);
        let epoch_nanos = clock::epoch_nanos_at(end_ticks);
        if self.exits.is_none() {
            // Nothing but the line reads the request: it is rendered from
            // the recorder's tables, with no snapshot taken.
            self.write(
                &recorder.line_at(end),
                epoch_nanos,
                Delivery::Buffered,
                |_| (),
            );
            recorder::recycle(recorder);
            return;
        }
        self.finish_with_exits(recorder, facts, end, epoch_nanos);
    }

    /// [`finish`](Self::finish) for an emitter with exits, which read the
    /// request's snapshot. Out of line: the common request, with the line
    /// its only reader, then brings none of this code into the cache.
    #[inline(never)]
    fn finish_with_exits(
        &self,
        recorder: Recorder,
        facts: &RequestFacts,
        end: RequestEnd,
        epoch_nanos: u64,
    ) {
        SNAPSHOT.with(|snapshot| match snapshot.try_borrow_mut() {
            Ok(mut snapshot) => {
                recorder.snapshot_into(end, &mut snapshot);
                self.emit_at(&snapshot, facts, epoch_nanos, Delivery::Buffered);
            }
            // Re-entered from an exit that itself finishes a request.
            Err(_) => self.emit_at(
                &recorder.snapshot_at(end),
                facts,
                epoch_nanos,
                Delivery::Buffered,
            ),
        });
        recorder::recycle(recorder);
    }

    fn exits_mut(&mut self) -> &mut Exits {
        let exits = self.exits.get_or_insert_with(Arc::default);
        // Clones made earlier keep their own exits.
        if Arc::get_mut(exits).is_none() {
            let copy = Exits {
                sinks: exits.sinks.clone(),
                sampling: exits.sampling.as_ref().map(|s| s.clone_box()),
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

    /// Writes the line only for the requests `sampler` keeps (see
    /// [`with_sampling`](Self::with_sampling)).
    pub(crate) fn with_sampler(mut self, sampler: Box<dyn Sampler>) -> Self {
        self.exits_mut().sampling = Some(sampler);
        self
    }

    /// The tail-sampling policy, if any.
    pub(crate) fn sampler(&self) -> Option<&dyn Sampler> {
        self.exits.as_ref()?.sampling.as_deref()
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
            None => self.write(
                snapshot,
                timestamp::epoch_nanos_now(),
                Delivery::Direct,
                |_| (),
            ),
            Some(_) => self.emit_request(snapshot, &RequestFacts::default()),
        }
    }

    /// Finishes one request: decides whether sampling keeps it, writes its
    /// line if so, and hands it to the exits.
    pub fn emit_request(&self, snapshot: &Snapshot, facts: &RequestFacts) {
        self.emit_at(
            snapshot,
            facts,
            timestamp::epoch_nanos_now(),
            Delivery::Direct,
        );
    }

    /// [`emit_request`](Self::emit_request) for a request that ended
    /// `epoch_nanos` nanoseconds after the epoch, its line delivered as
    /// `delivery` says.
    fn emit_at(
        &self,
        snapshot: &Snapshot,
        facts: &RequestFacts,
        epoch_nanos: u64,
        delivery: Delivery,
    ) {
        let Some(exits) = &self.exits else {
            self.write(snapshot, epoch_nanos, delivery, |_| ());
            return;
        };
        let end_time = UNIX_EPOCH + Duration::from_nanos(epoch_nanos);
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
            self.write(snapshot, epoch_nanos, delivery, |line| {
                hand_over(Some(line))
            });
        } else {
            hand_over(None);
        }
    }

    /// Renders the line of `source` (a snapshot, or a recorder read in
    /// place) stamped `epoch_nanos` (since the epoch), writes it as
    /// `delivery` says, then gives it to `then`.
    fn write(
        &self,
        source: &impl LineSource,
        epoch_nanos: u64,
        delivery: Delivery,
        then: impl FnOnce(&str),
    ) {
        let background = match delivery {
            Delivery::Buffered => self.background.as_deref(),
            Delivery::Direct => None,
        };
        if let (Some(background), None) = (background, &self.exits) {
            // Nothing but the sink reads the line: rendered where it is
            // buffered, with no copy.
            background.push_with(|buffer| self.format.render_onto(source, epoch_nanos, buffer));
            return;
        }
        LINE.with(|line| match line.try_borrow_mut() {
            // The line and its newline in the thread's buffer: no allocation.
            Ok(mut line) => {
                line.clear();
                self.format.render_onto(source, epoch_nanos, &mut line);
                match background {
                    Some(background) => background.push(&line),
                    None => {
                        line.push('\n');
                        self.sink.write_terminated(line.as_bytes());
                        line.pop();
                    }
                }
                then(&line);
            }
            // Re-entered from a sink that itself emits: use a fresh buffer.
            Err(_) => {
                let mut line = String::new();
                self.format.render_onto(source, epoch_nanos, &mut line);
                match background {
                    Some(background) => background.push(&line),
                    None => self.sink.write_line(&line),
                }
                then(&line);
            }
        });
    }
}
