//! Which request id the layer adopts, under the plain profile, instead of
//! drawing its own.

use http::header::HeaderName;
use http::Request;

use crate::request_id::adoptable;

/// The id `request` already carries, when it may be adopted: tower-http's
/// `RequestId` extension, set by an outer `SetRequestIdLayer` (feature
/// `tower-http`); else, when `header` is given (the policy trusts
/// callers' ids), that request header's first value. An id that is not
/// 1 to 64 bytes of `[A-Za-z0-9._:-]` is not adopted: the layer draws one.
/// Out of line: the Scion profile never comes here.
#[inline(never)]
pub(super) fn incoming_id<'r, B>(
    request: &'r Request<B>,
    header: Option<&HeaderName>,
) -> Option<&'r str> {
    #[cfg(feature = "tower-http")]
    if let Some(id) = request
        .extensions()
        .get::<tower_http::request_id::RequestId>()
    {
        // The service's own id wins over the header, even when it cannot
        // be adopted: a caller's header never replaces it.
        return adoptable(id.header_value().as_bytes());
    }
    let value = request.headers().get(header?)?;
    adoptable(value.as_bytes())
}
