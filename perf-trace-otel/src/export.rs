//! The export thread: spans queue in a bounded channel, leave in batches
//! over OTLP/HTTP (protobuf), and are dropped and counted when the queue is
//! full or the collector fails, so a request never waits for the
//! collector.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use opentelemetry::InstrumentationScope;
use opentelemetry_otlp::{Protocol, WithExportConfig};
use opentelemetry_sdk::trace::{SpanData, SpanExporter as _};
use opentelemetry_sdk::Resource;

use crate::config::OtlpConfig;
use crate::span::{span, Finished};
use crate::OtlpError;

/// What went through the exporter so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExportStats {
    /// Spans the collector accepted.
    pub exported: u64,
    /// Spans dropped because the queue was full.
    pub dropped_queue_full: u64,
    /// Spans dropped because their batch failed (collector down, 5xx,
    /// timeout).
    pub dropped_export_failed: u64,
    /// Batches that failed.
    pub failed_batches: u64,
}

impl ExportStats {
    /// Every span dropped, for whatever reason.
    pub fn dropped(&self) -> u64 {
        self.dropped_queue_full + self.dropped_export_failed
    }
}

#[derive(Debug, Default)]
pub(crate) struct Counters {
    exported: AtomicU64,
    dropped_queue_full: AtomicU64,
    dropped_export_failed: AtomicU64,
    failed_batches: AtomicU64,
}

impl Counters {
    pub(crate) fn stats(&self) -> ExportStats {
        ExportStats {
            exported: self.exported.load(Relaxed),
            dropped_queue_full: self.dropped_queue_full.load(Relaxed),
            dropped_export_failed: self.dropped_export_failed.load(Relaxed),
            failed_batches: self.failed_batches.load(Relaxed),
        }
    }
}

pub(crate) enum Message {
    Span(Box<Finished>),
    /// Export what is queued now, then answer.
    Flush(SyncSender<()>),
}

/// The request side of the queue.
#[derive(Debug)]
pub(crate) struct Queue {
    sender: SyncSender<Message>,
    counters: Arc<Counters>,
}

impl Queue {
    /// Queues one span, or drops and counts it: never waits.
    pub(crate) fn push(&self, finished: Finished) {
        match self.sender.try_send(Message::Span(Box::new(finished))) {
            Ok(()) => {}
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                self.counters.dropped_queue_full.fetch_add(1, Relaxed);
            }
        }
    }

    /// Waits until what was queued before this call has been exported or
    /// dropped, at most `timeout`. Returns whether it finished in time.
    pub(crate) fn flush(&self, timeout: Duration) -> bool {
        let (done, wait) = mpsc::sync_channel(1);
        let deadline = Instant::now() + timeout;
        let mut message = Message::Flush(done);
        // The queue may be full: retry until there is room or time is up.
        loop {
            match self.sender.try_send(message) {
                Ok(()) => break,
                Err(TrySendError::Full(back)) if Instant::now() < deadline => {
                    message = back;
                    std::thread::sleep(Duration::from_millis(1));
                }
                Err(_) => return false,
            }
        }
        wait.recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .is_ok()
    }

    pub(crate) fn stats(&self) -> ExportStats {
        self.counters.stats()
    }
}

/// Starts the export thread; it ends when every [`Queue`] is dropped,
/// after exporting what is left.
pub(crate) fn start(config: OtlpConfig) -> Result<(Queue, JoinHandle<()>), OtlpError> {
    let (sender, receiver) = mpsc::sync_channel(config.queue_size.max(1));
    let counters = Arc::new(Counters::default());
    let (ready, started) = mpsc::sync_channel(1);
    let worker_counters = Arc::clone(&counters);
    // The blocking HTTP client runs its own runtime: it is made, used and
    // dropped on this thread only, never inside the service's runtime.
    let handle = std::thread::Builder::new()
        .name("perf-trace-otlp".into())
        .spawn(move || {
            let exporter = match build_exporter(&config) {
                Ok(exporter) => {
                    let _ = ready.send(Ok(()));
                    exporter
                }
                Err(e) => {
                    let _ = ready.send(Err(e));
                    return;
                }
            };
            run(exporter, &config, receiver, &worker_counters);
        })
        .map_err(|e| OtlpError(format!("cannot start the export thread: {e}")))?;
    match started.recv() {
        Ok(Ok(())) => Ok((Queue { sender, counters }, handle)),
        Ok(Err(e)) => Err(e),
        Err(_) => Err(OtlpError("the export thread stopped while starting".into())),
    }
}

fn build_exporter(config: &OtlpConfig) -> Result<opentelemetry_otlp::SpanExporter, OtlpError> {
    let mut exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint(config.traces_url())
        .with_timeout(config.export_timeout)
        .build()
        .map_err(|e| OtlpError(format!("cannot build the OTLP exporter: {e}")))?;
    let resource = Resource::builder_empty()
        .with_service_name(config.service_name.clone())
        .build();
    exporter.set_resource(&resource);
    Ok(exporter)
}

fn run(
    exporter: opentelemetry_otlp::SpanExporter,
    config: &OtlpConfig,
    receiver: Receiver<Message>,
    counters: &Counters,
) {
    let scope = InstrumentationScope::builder("perf-trace-otel")
        .with_version(env!("CARGO_PKG_VERSION"))
        .build();
    let export = |batch: &mut Vec<SpanData>| {
        if batch.is_empty() {
            return;
        }
        let spans = std::mem::take(batch);
        let n = spans.len() as u64;
        match futures_executor::block_on(exporter.export(spans)) {
            Ok(()) => counters.exported.fetch_add(n, Relaxed),
            Err(_) => {
                counters.failed_batches.fetch_add(1, Relaxed);
                counters.dropped_export_failed.fetch_add(n, Relaxed)
            }
        };
    };
    let mut batch = Vec::with_capacity(config.batch_size);
    let mut oldest: Option<Instant> = None;
    loop {
        let wait = oldest.map_or(Duration::from_secs(3600), |t| {
            (t + config.batch_delay).saturating_duration_since(Instant::now())
        });
        match receiver.recv_timeout(wait) {
            Ok(Message::Span(finished)) => {
                batch.push(span(*finished, &scope));
                oldest.get_or_insert_with(Instant::now);
                if batch.len() >= config.batch_size {
                    export(&mut batch);
                    oldest = None;
                }
            }
            Ok(Message::Flush(done)) => {
                export(&mut batch);
                oldest = None;
                let _ = done.send(());
            }
            Err(RecvTimeoutError::Timeout) => {
                export(&mut batch);
                oldest = None;
            }
            Err(RecvTimeoutError::Disconnected) => {
                export(&mut batch);
                let _ = exporter.shutdown();
                return;
            }
        }
    }
}
