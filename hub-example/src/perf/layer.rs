//! The Hub's tracing layers: where the lines go (the Hub's log, in its
//! format), which exits hang on the emitter, and the pool figures a
//! request's line starts from.

use std::sync::Arc;
use std::time::Duration;

use perf_trace_core::record::{PoolFigures, PoolStats};
use perf_trace_core::{Emitter, LineFormat, LineSink, PerfTraceLayer};

use super::exits::HubExits;
use super::keys::HubSchema;
use super::policy::{HubPolicy, WebPolicy};
use crate::log::{Logger, COMPONENT};
use crate::store::db::Db;

/// The tracing layer the Hub installs when tracing is on.
pub(crate) type HubTraceLayer = PerfTraceLayer<HubSchema, HubPolicy>;

/// The tracing layer on the web client's own routes, writing to the same
/// emitter as the Hub's.
pub(crate) type WebTraceLayer = PerfTraceLayer<HubSchema, WebPolicy>;

/// The Hub's tracing layer and the web routes', over one emitter.
#[derive(Debug, Clone)]
pub(crate) struct TraceLayers {
    /// The Hub's routes'.
    pub hub: HubTraceLayer,
    /// The web client's own routes'.
    pub web: WebTraceLayer,
}

/// How long a perf_trace line may wait, buffered by its thread
/// ([`HubExits::background_lines`]), before it reaches the log (the Hub's
/// own lines write the buffers out at once).
pub const LINE_FLUSH_INTERVAL: Duration = Duration::from_millis(50);

/// Builds the layer: lines in the logger's format and to its destination,
/// pool figures from `pool`. A failing destination is reported once, on
/// standard error, shared with the logger's own report (the destination is
/// the same, so one report covers both). The sink takes the logger's own
/// lock once per line (once per batch when lines are buffered by their
/// threads, as `hub-example serve`'s are, every [`LINE_FLUSH_INTERVAL`]).
/// `exits` (metrics, OTLP export, tail sampling, lines
/// buffered by their threads) are put on the emitter;
/// `HubExits::default()` adds none.
pub fn trace_layer(logger: &Logger, pool: Arc<dyn PoolStats>, exits: &HubExits) -> HubTraceLayer {
    PerfTraceLayer::new(HubPolicy, trace_emitter(logger, exits)).with_pool(pool)
}

/// [`trace_layer`] and the web routes' layer, over one emitter.
pub(crate) fn trace_layers(
    logger: &Logger,
    pool: Arc<dyn PoolStats>,
    exits: &HubExits,
) -> TraceLayers {
    let emitter = trace_emitter(logger, exits);
    TraceLayers {
        hub: PerfTraceLayer::new(HubPolicy, emitter.clone()).with_pool(Arc::clone(&pool)),
        web: PerfTraceLayer::new(WebPolicy, emitter).with_pool(pool),
    }
}

fn trace_emitter(logger: &Logger, exits: &HubExits) -> Emitter {
    let report = logger.clone();
    let sink =
        LineSink::shared(logger.writer().clone()).on_failure(move |e| report.report_failure(e));
    let format = LineFormat::scion(COMPONENT).gcp(logger.gcp());
    let emitter = exits.apply(Emitter::new(format, sink));
    // The Hub's own lines stay after the lines of the requests before them.
    logger.write_after(emitter.queued_lines());
    emitter
}

/// The pool's figures as a traced request arrives, read by authentication
/// before it reads the database (a traced Hub's state notes them:
/// [`crate::api::state::AppState::noting_pool_baseline`]) and handed to the
/// tracing layer ([`perf_trace_core::record::with_baseline`]), so the layer
/// counts those waits in the request's line too (a 503 answered while
/// authenticating for an exhausted pool then shows the wait that ran out).
/// Read there rather than by a layer of its own: axum clones a route's
/// layered service for every request, one boxed service per layer; and
/// handed over for the poll that starts the request rather than put in its
/// extensions, which cost an allocation and a map insert a request.
pub(crate) fn pool_baseline(db: &Db) -> PoolFigures {
    // Only its wait figures are read: `in_use` and `open` are the end's.
    db.pool_wait_figures()
}
