//! `GET /events?sub=SUBJECT[&sub=...]`: a server-sent event stream.
//!
//! A malformed subject list is answered 400 and writes no trace line. Any
//! other request is a stream for tracing: a refused subscription (403) writes
//! only the close line; an accepted one writes a connect line when its body
//! is first polled and a close line when it ends. Each delivered event adds
//! to `sse_events` and is written inside the `sse_write` phase.
//!
//! A stream over the caller's or the Hub's cap is refused 429 (only the
//! close line). An accepted stream ends, after a final `end` event naming
//! why, when the Hub shuts down, when its credential expires, or when a
//! re-check (every `stream_recheck_interval`) finds the credential revoked
//! (a browser's session signed out) or any subscribed subject no longer
//! allowed, whether it was opened with a bearer token or the session
//! cookie. The re-check runs outside the request's trace: it adds nothing
//! to the stream's line. Its audit records are written only when their
//! outcomes change from the re-check before (an idle stream writes none).
//!
//! When the replica may have missed events (its relay's listening
//! connection was away), every stream gets `event: resync`, not counted
//! as an event: the client refetches what it shows.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::extract::{FromRequestParts, RawQuery, State};
use axum::http::request::Parts;
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use perf_trace_core::traced_phase;
use serde::Serialize;
use tokio_stream::wrappers::errors::BroadcastStreamRecvError;
use tokio_stream::wrappers::BroadcastStream;
use tokio_stream::{Stream, StreamExt};

use super::params::Params;
use super::state::{AppState, Guards};
use super::{ApiError, StreamLimiter, StreamPermit};
use crate::auth::bearer::{bearer_token, resolve_credential};
use crate::auth::session::{resolve_session, session_cookie, BrowserSession};
use crate::auth::{AuthError, CredentialExpiry};
use crate::authz::audit::recheck::{CollectedRecords, RepeatedCheck};
use crate::authz::{AuditEmitter, Principal};
use crate::events::{
    authorize_subjects, expand_subjects, parse_subjects, HubEvent, Pattern, Subject,
};
use crate::perf::keys::Phase;
use crate::shutdown::ShutdownSignal;
use crate::store::AuthzStore;

/// How often an idle stream sends a keep-alive comment.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// Formats one event for the wire and counts it.
#[traced_phase(Phase::SseWrite)]
fn write_event(event: &HubEvent) -> Event {
    perf_trace_core::record::add_sse_events(1);
    Event::default().event(event.kind).data(&event.data)
}

/// The notice a subscriber gets when it fell behind and lost events.
fn lagged_notice(missed: u64) -> Event {
    Event::default()
        .event("lagged")
        .data(format!("{{\"missed\":{missed}}}"))
}

/// Why the Hub ended a stream, named on the wire in snake_case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
enum StreamEnd {
    /// The Hub is shutting down.
    Shutdown,
    /// The credential the stream was opened with expired.
    CredentialExpired,
    /// The credential was revoked, or a subject is no longer allowed.
    AccessRevoked,
}

impl StreamEnd {
    /// The final event: `event: end`, `data: {"reason": ...}`.
    fn event(self) -> Event {
        Event::default()
            .event("end")
            .data(serde_json::json!({ "reason": self }).to_string())
    }
}

/// The subscription's events until `end` completes; then its final event
/// and the end of the stream. Holds the stream's place under the caps.
struct EndingStream<E> {
    events: E,
    end: Option<Pin<Box<dyn Future<Output = StreamEnd> + Send>>>,
    _permit: Option<StreamPermit>,
}

impl<E: Stream<Item = Result<Event, Infallible>> + Unpin> Stream for EndingStream<E> {
    type Item = Result<Event, Infallible>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let Some(end) = self.end.as_mut() else {
            return Poll::Ready(None);
        };
        if let Poll::Ready(reason) = end.as_mut().poll(cx) {
            self.end = None;
            return Poll::Ready(Some(Ok(reason.event())));
        }
        Pin::new(&mut self.events).poll_next(cx)
    }
}

/// The notice that the stream may have missed events: refetch.
fn resync_notice(event: &HubEvent) -> Event {
    Event::default().event(event.kind).data(&event.data)
}

/// The credential a stream was opened with, checked again while it runs.
#[derive(Debug, Clone)]
enum StreamCredential {
    /// A bearer token (a session or access token, an agent's token).
    Bearer(Arc<str>),
    /// A browser session's id, from the session cookie.
    Session(Arc<str>),
}

impl StreamCredential {
    /// What the request authenticated with: the session cookie when the
    /// web listener accepted it ([`BrowserSession`]), else the bearer
    /// header.
    fn of(headers: &HeaderMap, browser: bool) -> Option<StreamCredential> {
        if browser {
            session_cookie(headers).map(|id| StreamCredential::Session(id.into()))
        } else {
            bearer_token(headers)
                .ok()
                .map(|token| StreamCredential::Bearer(token.into()))
        }
    }
}

/// Whether the credential still authenticates and its principal may still
/// see every subject. A database that cannot answer now is not a refusal:
/// the next re-check asks again. Its decisions are written only when their
/// outcomes differ from the re-check before (`repeated`).
fn still_allowed<S: AuthzStore, A: AuditEmitter>(
    state: &AppState<S, A>,
    credential: &StreamCredential,
    subjects: &[Subject],
    repeated: &mut RepeatedCheck,
) -> bool {
    let resolved = match credential {
        StreamCredential::Bearer(token) => resolve_credential(state.store(), state.signer(), token),
        StreamCredential::Session(id) => resolve_session(state.store(), state.db(), id),
    };
    let principal = match resolved {
        Ok((principal, _)) => principal,
        Err(e) => return !matches!(e, AuthError::Refused(_)),
    };
    let collected = CollectedRecords::default();
    let authz = state.authorizer_reporting_to(&principal, &collected);
    let allowed =
        match expand_subjects(&authz, subjects).and_then(|e| authorize_subjects(&authz, e)) {
            Ok(patterns) => patterns.is_some(),
            Err(_) => true,
        };
    drop(authz);
    repeated.report(collected.into_records(), state.audit());
    allowed
}

/// Completes when the stream must end, and says why.
async fn stream_end<S: AuthzStore, A: AuditEmitter>(
    state: AppState<S, A>,
    credential: Option<StreamCredential>,
    subjects: Vec<Subject>,
    expiry: Option<CredentialExpiry>,
    shutdown: Option<ShutdownSignal>,
    recheck: Duration,
) -> StreamEnd {
    let shutdown = async move {
        match shutdown {
            Some(signal) => signal.started().await,
            None => std::future::pending().await,
        }
    };
    let expired = async move {
        match expiry {
            Some(expiry) => tokio::time::sleep(expiry.time_left(crate::clock::now_ms())).await,
            None => std::future::pending().await,
        }
    };
    let revoked = async move {
        let Some(credential) = credential else {
            return std::future::pending().await;
        };
        let subjects: Arc<[Subject]> = subjects.into();
        let mut ticks = tokio::time::interval(recheck);
        ticks.tick().await;
        let mut repeated = Some(RepeatedCheck::default());
        loop {
            ticks.tick().await;
            let (st, credential, subjects) =
                (state.clone(), credential.clone(), Arc::clone(&subjects));
            let mut check = repeated.take().unwrap_or_default();
            // A plain blocking task: no recorder, so nothing is counted.
            let checked = tokio::task::spawn_blocking(move || {
                let allowed = still_allowed(&st, &credential, &subjects, &mut check);
                (allowed, check)
            })
            .await;
            let allowed = match checked {
                Ok((allowed, check)) => {
                    repeated = Some(check);
                    allowed
                }
                Err(_) => true,
            };
            if !allowed {
                return;
            }
        }
    };
    tokio::select! {
        _ = shutdown => StreamEnd::Shutdown,
        _ = expired => StreamEnd::CredentialExpired,
        // A re-check that runs just as the credential expires finds it
        // refused: that is its expiry, not a revocation.
        _ = revoked => match expiry {
            Some(expiry) if expiry.has_passed(crate::clock::now_ms()) => {
                StreamEnd::CredentialExpired
            }
            _ => StreamEnd::AccessRevoked,
        },
    }
}

/// What a stream reads besides its caller, headers and query: from its
/// request, what authentication noted (when the credential expires,
/// whether a browser's session carried it) and the shutdown signal of the
/// server it came through; from the state, the Hub's stream caps and
/// re-check interval (none, and the default interval, on a router built
/// without a Hub).
pub(crate) struct StreamContext {
    expiry: Option<CredentialExpiry>,
    browser: bool,
    shutdown: Option<ShutdownSignal>,
    limiter: Option<StreamLimiter>,
    recheck: Duration,
}

impl StreamContext {
    fn read(parts: &Parts, guards: &Guards) -> StreamContext {
        let extensions = &parts.extensions;
        StreamContext {
            expiry: extensions.get::<CredentialExpiry>().cloned(),
            browser: extensions.get::<BrowserSession>().is_some(),
            shutdown: extensions.get::<ShutdownSignal>().cloned(),
            limiter: guards.streams.clone(),
            recheck: guards.limits.stream_recheck_interval,
        }
    }
}

impl<S: Send + Sync, A: Send + Sync> FromRequestParts<AppState<S, A>> for StreamContext {
    type Rejection = Infallible;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState<S, A>,
    ) -> Result<Self, Infallible> {
        Ok(StreamContext::read(parts, state.guards()))
    }
}

/// `GET /events`.
pub(crate) async fn events<S: AuthzStore, A: AuditEmitter>(
    State(state): State<AppState<S, A>>,
    Extension(principal): Extension<Principal>,
    context: StreamContext,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Result<Response, ApiError> {
    let params = Params::parse(query.as_deref());
    let subjects = match parse_subjects(params.all("sub")) {
        Ok(subjects) => subjects,
        Err(e) => {
            perf_trace_core::record::discard_line();
            return Err(ApiError::bad_request(e.to_string()));
        }
    };
    perf_trace_core::record::mark_stream();
    let permit = match &context.limiter {
        Some(limiter) => Some(limiter.try_open(&principal.reference())?),
        None => None,
    };
    let st = state.clone();
    let kept_subjects = subjects.clone();
    let patterns = perf_trace_core::scope::spawn_blocking(move || {
        let authz = st.authorizer(&principal);
        let expanded = expand_subjects(&authz, &subjects)?;
        authorize_subjects(&authz, expanded)
    })
    .await??
    .ok_or_else(ApiError::forbidden)?;

    let patterns: Arc<[Pattern]> = patterns.into();
    let stream = BroadcastStream::new(state.bus().subscribe()).filter_map(move |item| match item {
        Ok(event) if event.is_resync() => Some(Ok(resync_notice(&event))),
        Ok(event) => event
            .subjects
            .iter()
            .any(|s| patterns.iter().any(|p| p.matches(s)))
            .then(|| Ok::<_, Infallible>(write_event(&event))),
        Err(BroadcastStreamRecvError::Lagged(missed)) => Some(Ok(lagged_notice(missed))),
    });
    let credential = StreamCredential::of(&headers, context.browser);
    let end = stream_end(
        state.clone(),
        credential,
        kept_subjects,
        context.expiry,
        context.shutdown,
        context.recheck,
    );
    let stream = EndingStream {
        events: stream,
        end: Some(Box::pin(end)),
        _permit: permit,
    };
    Ok(Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(KEEP_ALIVE))
        .into_response())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::ServerLimits;

    fn context(request: axum::http::Request<()>, guards: &Guards) -> StreamContext {
        let (parts, ()) = request.into_parts();
        StreamContext::read(&parts, guards)
    }

    #[test]
    fn a_stream_reads_the_hub_s_values_from_its_state_and_request_and_defaults_without_them() {
        let bare = context(axum::http::Request::new(()), &Guards::default());
        assert!(bare.limiter.is_none() && bare.shutdown.is_none() && bare.expiry.is_none());
        assert!(!bare.browser);
        assert_eq!(
            bare.recheck,
            ServerLimits::default().stream_recheck_interval
        );

        let limits = ServerLimits {
            stream_recheck_interval: Duration::from_millis(1_234),
            ..ServerLimits::default()
        };
        let guards = Guards {
            limits,
            streams: Some(StreamLimiter::new(1, 1)),
            ..Guards::default()
        };
        let mut request = axum::http::Request::new(());
        let extensions = request.extensions_mut();
        extensions.insert(ShutdownSignal::new());
        extensions.insert(CredentialExpiry(42));
        let served = context(request, &guards);
        assert_eq!(served.recheck, Duration::from_millis(1_234));
        assert!(served.limiter.is_some() && served.shutdown.is_some());
        assert_eq!(served.expiry.map(|expiry| expiry.0), Some(42));
    }
}
