//! `GET /events?sub=SUBJECT[&sub=...]`: a server-sent event stream.
//!
//! A malformed subject list is answered 400 and writes no trace line. Any
//! other request is a stream for tracing: a refused subscription (403) writes
//! only the close line; an accepted one writes a connect line when its body
//! is first polled and a close line when it ends. Each delivered event adds
//! to `sse_events` and is written inside the `sse_write` phase.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{RawQuery, State};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use perf_trace_core::traced_phase;
use tokio_stream::wrappers::errors::BroadcastStreamRecvError;
use tokio_stream::wrappers::BroadcastStream;
use tokio_stream::StreamExt;

use super::params::Params;
use super::ApiError;
use crate::authz::{AuditEmitter, Authorizer, Principal};
use crate::events::{authorize_subjects, expand_subjects, parse_subjects, HubEvent, Pattern};
use crate::keys::Phase;
use crate::state::AppState;
use crate::store::AuthzStore;

/// How often an idle stream sends a keep-alive comment.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// Formats one event for the wire and counts it.
#[traced_phase(Phase::SseWrite)]
fn write_event(event: &HubEvent) -> Event {
    perf_trace_core::add_sse_events(1);
    Event::default().event(event.kind).data(&event.data)
}

/// The notice a subscriber gets when it fell behind and lost events.
fn lagged_notice(missed: u64) -> Event {
    Event::default()
        .event("lagged")
        .data(format!("{{\"missed\":{missed}}}"))
}

/// `GET /events`.
pub async fn events<S: AuthzStore, A: AuditEmitter>(
    State(state): State<AppState<S, A>>,
    Extension(principal): Extension<Principal>,
    RawQuery(query): RawQuery,
) -> Result<Response, ApiError> {
    let params = Params::parse(query.as_deref());
    let subjects = match parse_subjects(params.all("sub")) {
        Ok(subjects) => subjects,
        Err(e) => {
            perf_trace_core::discard_line();
            return Err(ApiError::bad_request(e.to_string()));
        }
    };
    perf_trace_core::mark_stream();
    let st = state.clone();
    let patterns = perf_trace_core::spawn_blocking(move || {
        let authz = Authorizer::new(st.store(), st.audit(), &principal);
        let expanded = expand_subjects(&authz, &subjects)?;
        authorize_subjects(&authz, expanded)
    })
    .await??
    .ok_or_else(ApiError::forbidden)?;

    let patterns: Arc<[Pattern]> = patterns.into();
    let stream = BroadcastStream::new(state.bus().subscribe()).filter_map(move |item| match item {
        Ok(event) => event
            .subjects
            .iter()
            .any(|s| patterns.iter().any(|p| p.matches(s)))
            .then(|| Ok::<_, Infallible>(write_event(&event))),
        Err(BroadcastStreamRecvError::Lagged(missed)) => Some(Ok(lagged_notice(missed))),
    });
    Ok(Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(KEEP_ALIVE))
        .into_response())
}
