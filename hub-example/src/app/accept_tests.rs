//! The accept loop's unit tests: probation, the quiet times at the cap,
//! the headroom, and hyper's parse errors answered as JSON.

use super::*;

fn limits(header_ms: u64, idle_ms: u64) -> ServerLimits {
    ServerLimits {
        header_read_timeout: Duration::from_millis(header_ms),
        idle_timeout: Duration::from_millis(idle_ms),
        ..ServerLimits::default()
    }
}

fn activity() -> Arc<Activity> {
    activity_at(gate(4_096), None)
}

fn gate(capacity: usize) -> Arc<ConnectionGate> {
    let limits = ServerLimits {
        max_connections: Some(capacity),
        ..ServerLimits::default()
    };
    let caps = crate::connections::ConnectionCaps::derive(&limits, None);
    ConnectionGate::new(caps, Default::default())
}

fn activity_at(gate: Arc<ConnectionGate>, probation: Option<Probation>) -> Arc<Activity> {
    Arc::new(Activity::new(Arc::default(), gate, probation))
}

#[test]
fn a_connection_on_probation_has_a_second_for_its_first_head() {
    let limits = limits(10_000, 60_000);
    let on_probation = activity_at(gate(16), Some(Probation::Headroom));
    assert!(!on_probation.timed_out_at(900, &limits));
    assert!(on_probation.timed_out_at(1_100, &limits));
    assert!(on_probation.tick(&limits) < limits.connection_tick());
    assert_eq!(on_probation.take_probation(), Some(Probation::Headroom));
    assert!(
        !on_probation.timed_out_at(1_100, &limits),
        "its request came"
    );
    assert!(!activity().timed_out_at(1_100, &limits));
}

#[test]
fn at_the_cap_idle_and_silent_connections_wait_less() {
    let limits = limits(10_000, 60_000);
    let gate = gate(4);
    let idle = activity_at(Arc::clone(&gate), None);
    drop(idle.begin_request());
    idle.on_write();
    let silent = activity_at(Arc::clone(&gate), None);
    assert!(!idle.timed_out_at(1_000, &limits) && !silent.timed_out_at(1_000, &limits));
    let slots: Vec<_> = (0..4)
        .map(|_| gate.admit([127, 0, 0, 1].into()).0)
        .collect();
    assert!(idle.timed_out_at(1_000, &limits), "idle at the cap");
    assert!(silent.timed_out_at(1_000, &limits), "silent at the cap");
    // A head on its way keeps the header-read timeout.
    let sending = activity_at(Arc::clone(&gate), None);
    sending.on_read_at(10, 5);
    assert!(!sending.timed_out_at(1_000, &limits));
    drop(slots);
    assert!(!idle.timed_out_at(1_000, &limits), "room again");
}

#[test]
fn healthz_and_requests_with_a_credential_may_use_the_headroom() {
    let request = |uri: &str, header: Option<(&str, &str)>| {
        let mut builder = http::Request::builder().uri(uri);
        if let Some((name, value)) = header {
            builder = builder.header(name, value);
        }
        builder.body(()).unwrap()
    };
    assert_eq!(
        headroom_for(&request("/healthz", None)),
        Headroom::HealthCheck
    );
    assert_eq!(
        headroom_for(&request(
            "/api/v1/agents",
            Some(("authorization", "Bearer x"))
        )),
        Headroom::Caller
    );
    assert_eq!(
        headroom_for(&request("/", Some(("cookie", "a=1; scion_session=scws_x")))),
        Headroom::Caller
    );
    assert_eq!(
        headroom_for(&request("/api/v1/settings/public", None)),
        Headroom::Refused
    );
    assert_eq!(
        headroom_for(&request("/healthz/x", Some(("cookie", "a=1")))),
        Headroom::Refused
    );
    let refused = refusal(Probation::Address);
    assert_eq!(refused.status(), http::StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(refused.headers()[http::header::CONNECTION], "close");
    assert_eq!(refused.headers()[http::header::RETRY_AFTER], "1");
}

#[test]
fn a_request_in_flight_never_times_out_here() {
    let a = activity();
    let guard = a.begin_request();
    assert!(!a.timed_out_at(10_000, &limits(1, 1)));
    drop(guard);
    assert!(a.idle());
    assert!(a.timed_out_at(10_000, &limits(1, 1)));
}

#[test]
fn the_first_head_is_timed_from_the_accept_and_later_ones_from_their_first_byte() {
    let a = activity();
    assert!(a.head_pending());
    assert!(!a.timed_out_at(100, &limits(200, 60_000)));
    assert!(a.timed_out_at(500, &limits(200, 60_000)), "first head late");

    let b = activity();
    drop(b.begin_request());
    assert!(!b.head_pending(), "between requests no head is arriving");
    assert!(!b.timed_out_at(500, &limits(200, 60_000)), "idle, not slow");
    assert!(b.timed_out_at(500, &limits(60_000, 200)), "idle too long");
    b.on_read_at(3, 450);
    assert!(b.head_pending());
    assert!(
        !b.timed_out_at(500, &limits(200, 200)),
        "the head just started"
    );
    assert!(
        b.timed_out_at(700, &limits(200, 60_000)),
        "the head is late"
    );
}

#[test]
fn only_empty_4xx_answers_are_taken_for_the_parser_s() {
    assert!(is_parse_error_answer(
        b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\ndate: x\r\n\r\n"
    ));
    assert!(!is_parse_error_answer(
        b"HTTP/1.1 404 Not Found\r\ncontent-type: application/json\r\ncontent-length: 27\r\n\r\n{}"
    ));
    assert!(!is_parse_error_answer(
        b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n"
    ));
}

#[test]
fn hyper_parse_errors_become_json() {
    for (status, code, message) in [
        (
            &b"HTTP/1.1 431 Request Header Fields Too Large\r\n"[..],
            "431",
            "request headers too large",
        ),
        (
            b"HTTP/1.1 414 URI Too Long\r\n",
            "414",
            "request path too long",
        ),
        (b"HTTP/1.1 400 Bad Request\r\n", "400", "malformed request"),
    ] {
        let answer = String::from_utf8(parse_error_answer(status)).unwrap();
        assert!(answer.starts_with(&format!("HTTP/1.1 {code} ")), "{answer}");
        let (head, body) = answer.split_once("\r\n\r\n").unwrap();
        assert!(head.contains("content-type: application/json"));
        assert!(head.contains(&format!("content-length: {}", body.len())));
        let json: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(json["error"], message);
    }
}
