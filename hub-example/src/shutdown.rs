//! The shutdown signal: set once when the Hub starts shutting down, seen by
//! the accept loop, by every connection and by every event stream (which
//! sends a final `shutdown` event and ends).

use tokio_util::sync::CancellationToken;

/// Whether, and when, the Hub started shutting down. Cheap to clone; every
/// request served by [`Hub::serve`](crate::Hub::serve) carries one in its
/// extensions.
#[derive(Debug, Clone, Default)]
pub(crate) struct ShutdownSignal(CancellationToken);

impl ShutdownSignal {
    /// A signal not yet given.
    pub fn new() -> Self {
        Self::default()
    }

    /// Starts the shutdown (again is a no-op).
    pub fn start(&self) {
        self.0.cancel();
    }

    /// Whether shutdown has started.
    #[cfg(test)]
    pub(crate) fn is_started(&self) -> bool {
        self.0.is_cancelled()
    }

    /// Completes when shutdown starts.
    pub(crate) async fn started(&self) {
        self.0.cancelled().await
    }
}

/// Completes on SIGTERM or SIGINT (Ctrl-C; on other systems, Ctrl-C only).
pub(crate) async fn termination_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let Ok(mut term) = signal(SignalKind::terminate()) else {
            let _ = ctrl_c.await;
            return;
        };
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = ctrl_c.await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn every_clone_sees_the_start() {
        let signal = ShutdownSignal::new();
        let seen = signal.clone();
        assert!(!seen.is_started());
        let waiter = tokio::spawn(async move { seen.started().await });
        signal.start();
        signal.start();
        waiter.await.unwrap();
        assert!(signal.is_started());
    }
}
