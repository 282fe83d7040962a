//! Bearer credentials: the `Authorization: Bearer` header, and what a
//! bearer token resolves to. A token is a user's or an agent's signed token
//! ([`super::tokens::TokenSigner`]) or a user's access token, stored only as
//! its SHA-256 and scoped to one project.
//!
//! A request with more than one `Authorization` header is refused (400), so
//! a proxy that reads another of them cannot disagree with the Hub.

use axum::http::{header, HeaderMap};

use super::error::AuthError;
use super::expiry::CredentialExpiry;
use super::tokens::{hashes_match, is_access_token, token_hash, TokenSigner, TokenSubject};
use crate::authz::{AgentPrincipal, Credential, Principal, UserPrincipal};
use crate::clock;
use crate::model::Id;
use crate::store::AuthzStore;

/// Longest credential accepted.
const MAX_TOKEN_LEN: usize = 4096;

/// The bearer token of the request's `Authorization` header, checked for
/// form only. The refusals never echo what was sent.
pub(crate) fn bearer_token(headers: &HeaderMap) -> Result<&str, AuthError> {
    if headers
        .get_all(header::AUTHORIZATION)
        .iter()
        .nth(1)
        .is_some()
    {
        return Err(AuthError::Malformed("more than one authorization header"));
    }
    let value = headers
        .get(header::AUTHORIZATION)
        .ok_or_else(|| AuthError::refused("missing bearer token"))?;
    let malformed = || AuthError::refused("malformed authorization header");
    let text = value.to_str().map_err(|_| malformed())?;
    let (scheme, token) = text.split_once(' ').ok_or_else(malformed)?;
    let token = token.trim();
    if !scheme.eq_ignore_ascii_case("bearer") || token.is_empty() || token.len() > MAX_TOKEN_LEN {
        return Err(malformed());
    }
    Ok(token)
}

/// Resolves a credential to its principal and when it expires (reading
/// through the store, with no recorder in scope, so nothing here is counted).
pub(crate) fn resolve_credential<S: AuthzStore + ?Sized>(
    store: &S,
    signer: &TokenSigner,
    token: &str,
) -> Result<(Principal, CredentialExpiry), AuthError> {
    let invalid = || AuthError::refused("invalid token");
    if is_access_token(token) {
        let hash = token_hash(token);
        let stored = store.get_user_access_token(&hash)?.ok_or_else(invalid)?;
        if !hashes_match(&stored.token_hash, &hash) {
            return Err(invalid());
        }
        if stored.revoked_at.is_some() {
            return Err(AuthError::refused("token revoked"));
        }
        if stored.expires_at <= clock::now_ms() {
            return Err(AuthError::refused("token expired"));
        }
        let user = store.get_user(&stored.user_id)?.ok_or_else(invalid)?;
        let principal = Principal::User(UserPrincipal {
            id: user.id,
            is_platform_admin: user.is_platform_admin,
            credential: Credential::AccessToken {
                project_id: stored.project_id,
            },
        });
        return Ok((principal, CredentialExpiry(stored.expires_at)));
    }
    let (subject, expires_secs) = signer
        .verify_with_expiry(token, clock::now_secs())
        .map_err(|e| AuthError::refused(e.to_string()))?;
    let expiry = CredentialExpiry::from_unix_secs(expires_secs);
    match subject {
        TokenSubject::User(id) => {
            let user = store.get_user(&id)?.ok_or_else(invalid)?;
            let principal = Principal::User(UserPrincipal {
                id: user.id,
                is_platform_admin: user.is_platform_admin,
                credential: Credential::Session,
            });
            Ok((principal, expiry))
        }
        TokenSubject::Agent(id) => {
            let agent = store.get_agent(&id)?.ok_or_else(invalid)?;
            let principal = Principal::Agent(AgentPrincipal {
                id: Id::from(id),
                project_id: agent.project_id,
            });
            Ok((principal, expiry))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn with_authorization(value: &[u8]) -> Option<HeaderMap> {
        let value = HeaderValue::from_bytes(value).ok()?;
        let mut headers = HeaderMap::new();
        headers.insert(header::AUTHORIZATION, value);
        Some(headers)
    }

    #[test]
    fn bearer_credentials_are_checked_without_echoing_them() {
        let ok = with_authorization(b"Bearer scb1.abc.def").unwrap();
        assert_eq!(bearer_token(&ok).unwrap(), "scb1.abc.def");
        let lower = with_authorization(b"bearer  tok ").unwrap();
        assert_eq!(bearer_token(&lower).unwrap(), "tok");
        for bad in [
            &b"Basic dXNlcjpwYXNz"[..],
            b"Bearer",
            b"Bearer ",
            b"tok",
            b"Bearer \xff\xfe",
        ] {
            let headers = with_authorization(bad).unwrap();
            let err = bearer_token(&headers).unwrap_err();
            assert!(matches!(err, AuthError::Refused(_)), "{err:?}");
            assert!(!err.to_string().contains("dXNl"));
        }
        let mut twice = with_authorization(b"Bearer first").unwrap();
        twice.append(
            header::AUTHORIZATION,
            HeaderValue::from_static("Bearer last"),
        );
        let err = bearer_token(&twice).unwrap_err();
        assert!(matches!(err, AuthError::Malformed(_)), "{err:?}");
        assert!(!err.to_string().contains("first"));
        let long = format!("Bearer {}", "a".repeat(MAX_TOKEN_LEN + 1));
        assert!(bearer_token(&with_authorization(long.as_bytes()).unwrap()).is_err());
        assert!(bearer_token(&HeaderMap::new()).is_err());
    }

    mod fuzz {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            #[test]
            fn fuzz_authorization_headers_never_panic(
                value in proptest::collection::vec(any::<u8>(), 0..200),
            ) {
                if let Some(headers) = with_authorization(&value) {
                    match bearer_token(&headers) {
                        Ok(token) => prop_assert!(!token.is_empty() && token.len() <= MAX_TOKEN_LEN),
                        Err(e) => prop_assert!(matches!(e, AuthError::Refused(_)), "{:?}", e),
                    }
                }
            }

            #[test]
            fn fuzz_bearer_like_headers_never_panic(token in "(?i:bearer)? ?\\PC{0,100}") {
                if let Some(headers) = with_authorization(token.as_bytes()) {
                    let _ = bearer_token(&headers);
                }
            }
        }
    }
}
