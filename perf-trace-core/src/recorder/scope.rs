//! Which recorder is current: a thread-local pointer set for the length of a
//! closure or of one poll, and restored afterwards. It is never held across an
//! `.await`; work moved to another thread carries the recorder explicitly.

use std::cell::Cell;
use std::future::Future;
use std::mem::ManuallyDrop;
use std::pin::Pin;
use std::ptr;
use std::sync::Arc;
use std::task::{Context, Poll};

use super::{pending, Inner, Recorder};

thread_local! {
    // Invariant: non-null only inside `Recorder::in_scope`, whose `&Recorder`
    // keeps the pointee alive until the pointer is restored.
    static CURRENT: Cell<*const Inner> = const { Cell::new(ptr::null()) };
}

/// The current recorder's pointer; null when none is in scope.
#[inline(always)]
pub(crate) fn current_ptr() -> *const Inner {
    CURRENT.with(Cell::get)
}

/// Runs `f` with the current recorder, if any.
#[inline(always)]
pub(crate) fn with_current<R>(f: impl FnOnce(&Inner) -> R) -> Option<R> {
    let p = current_ptr();
    if p.is_null() {
        None
    } else {
        // SAFETY: see the invariant on CURRENT; we are inside that scope.
        Some(f(unsafe { &*p }))
    }
}

/// Ends a scope: flushes what it recorded into its recorder (the one
/// current now), then makes `previous` current again.
struct Restore {
    previous: *const Inner,
}

impl Drop for Restore {
    #[inline]
    fn drop(&mut self) {
        let ending = CURRENT.with(|c| c.replace(self.previous));
        if !ending.is_null() {
            // SAFETY: the scope's `&Recorder` still keeps it alive here.
            pending::flush(unsafe { &*ending });
        }
    }
}

impl Recorder {
    /// Runs `f` with this recorder current on this thread; the previous one is
    /// restored afterwards, also when `f` panics.
    #[inline]
    pub fn in_scope<R>(&self, f: impl FnOnce() -> R) -> R {
        let previous = CURRENT.with(|c| c.replace(Arc::as_ptr(&self.0)));
        if !previous.is_null() {
            // What the enclosing scope recorded so far is its recorder's.
            // SAFETY: the enclosing scope keeps it alive.
            pending::flush(unsafe { &*previous });
        }
        let _restore = Restore { previous };
        f()
    }

    /// Wraps a future so this recorder is current during each of its polls
    /// (and while it is dropped).
    pub fn instrument<F: Future>(&self, future: F) -> Instrumented<F> {
        Instrumented::new(Some(self.clone()), future)
    }
}

/// Whether a recorder is current on this thread: one thread-local read,
/// for code that does work of its own before recording (a SQL wrapper
/// reading a statement's kind) and skips it outside a request.
#[inline]
pub fn is_active() -> bool {
    !current_ptr().is_null()
}

/// The recorder current on this thread, if any.
pub fn current() -> Option<Recorder> {
    let p = current_ptr();
    if p.is_null() {
        return None;
    }
    // SAFETY: the pointer came from `Arc::as_ptr` of a recorder that the
    // enclosing scope keeps alive; we take one more strong count for the clone.
    unsafe {
        Arc::increment_strong_count(p);
        Some(Recorder(Arc::from_raw(p)))
    }
}

/// A future that makes a recorder current while it is polled or dropped.
#[must_use = "futures do nothing unless polled"]
pub struct Instrumented<F> {
    recorder: Option<Recorder>,
    inner: ManuallyDrop<F>,
}

impl<F> Instrumented<F> {
    pub(crate) fn new(recorder: Option<Recorder>, inner: F) -> Self {
        Instrumented {
            recorder,
            inner: ManuallyDrop::new(inner),
        }
    }
}

impl<F: std::fmt::Debug> std::fmt::Debug for Instrumented<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Instrumented")
            .field("recorder", &self.recorder)
            .field("inner", &*self.inner)
            .finish()
    }
}

impl<F: Future> Future for Instrumented<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        // SAFETY: `inner` is structurally pinned: it is never moved out, and is
        // dropped in place by `Drop`.
        let this = unsafe { self.get_unchecked_mut() };
        let inner = unsafe { Pin::new_unchecked(&mut *this.inner) };
        in_scope_of(this.recorder.as_ref(), || inner.poll(cx))
    }
}

impl<F> Drop for Instrumented<F> {
    fn drop(&mut self) {
        // The inner future may end phases while it is dropped (a cancelled
        // request), so it is dropped with its recorder current.
        let inner = &mut self.inner;
        // SAFETY: `inner` is dropped exactly once, here.
        in_scope_of(self.recorder.as_ref(), || unsafe {
            ManuallyDrop::drop(inner)
        });
    }
}

/// Runs `f` with `recorder` current, or with the current recorder left as
/// it is when there is none.
#[inline]
pub(crate) fn in_scope_of<R>(recorder: Option<&Recorder>, f: impl FnOnce() -> R) -> R {
    match recorder {
        Some(recorder) => recorder.in_scope(f),
        None => f(),
    }
}

/// Carries the current recorder into futures that will run elsewhere.
pub trait FutureExt: Future + Sized {
    /// Wraps the future so that the recorder current now is current during its
    /// polls, e.g. before handing it to `tokio::spawn`.
    fn in_current_trace(self) -> Instrumented<Self> {
        Instrumented::new(current(), self)
    }
}

impl<F: Future> FutureExt for F {}

/// Wraps a closure so that the recorder current now is current while it runs,
/// e.g. before handing it to a thread pool.
pub fn bind_current<R>(f: impl FnOnce() -> R) -> impl FnOnce() -> R {
    let recorder = current();
    // The span the closure's own spans nest in (feature `tracing-spans`).
    #[cfg(feature = "tracing-spans")]
    let span = tracing::Span::current();
    move || {
        #[cfg(feature = "tracing-spans")]
        let _entered = span.enter();
        in_scope_of(recorder.as_ref(), f)
    }
}

/// `tokio::task::spawn_blocking` that carries the current recorder onto the
/// blocking thread.
#[cfg(feature = "tokio")]
pub fn spawn_blocking<F, R>(f: F) -> tokio::task::JoinHandle<R>
where
    F: FnOnce() -> R + Send + 'static,
    R: Send + 'static,
{
    tokio::task::spawn_blocking(bind_current(f))
}

/// `tokio::spawn` that carries the current recorder into the task.
#[cfg(feature = "tokio")]
pub fn spawn<F>(future: F) -> tokio::task::JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    tokio::spawn(future.in_current_trace())
}
