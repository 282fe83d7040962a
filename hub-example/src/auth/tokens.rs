//! Credentials: session bearer tokens signed with HMAC-SHA256 under a key
//! derived from the session secret, and user access tokens, which the Hub
//! stores only as their SHA-256 hash.
//!
//! A bearer token is `scb1.<payload>.<mac>` (both base64url, no padding); the
//! payload is `u:<user id>:<expiry>` or `a:<agent id>:<expiry>`, expiry in
//! Unix seconds. The MAC is checked in constant time before anything in the
//! payload is believed.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::model::is_uuid;

type HmacSha256 = Hmac<Sha256>;

const BEARER_PREFIX: &str = "scb1.";
/// The prefix of user access tokens.
pub(crate) const ACCESS_TOKEN_PREFIX: &str = "scpat_";
const KEY_LABEL: &[u8] = b"scion-hub bearer-token signing key v1";

/// Who a bearer token speaks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenSubject {
    /// A user.
    User(String),
    /// An agent.
    Agent(String),
}

/// Why a token was not accepted. The messages never include the token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum TokenError {
    /// Not a token of a known form.
    #[error("malformed token")]
    Malformed,
    /// The signature does not match.
    #[error("invalid token signature")]
    BadSignature,
    /// The token has expired.
    #[error("token expired")]
    Expired,
}

/// Signs and checks bearer tokens.
#[derive(Clone)]
pub struct TokenSigner {
    key: [u8; 32],
}

impl std::fmt::Debug for TokenSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TokenSigner { .. }")
    }
}

impl TokenSigner {
    /// A signer whose key is derived from `session_secret` (HMAC-SHA256 of a
    /// fixed label), so the secret itself never signs anything.
    pub fn from_session_secret(session_secret: &str) -> Self {
        let mut mac =
            HmacSha256::new_from_slice(session_secret.as_bytes()).expect("any key length");
        mac.update(KEY_LABEL);
        TokenSigner {
            key: mac.finalize().into_bytes().into(),
        }
    }

    fn mac(&self) -> HmacSha256 {
        HmacSha256::new_from_slice(&self.key).expect("32-byte key")
    }

    /// Issues a token for `subject`, valid until `expires_at` (Unix seconds).
    pub fn issue(&self, subject: &TokenSubject, expires_at: i64) -> String {
        let payload = match subject {
            TokenSubject::User(id) => format!("u:{id}:{expires_at}"),
            TokenSubject::Agent(id) => format!("a:{id}:{expires_at}"),
        };
        let payload = URL_SAFE_NO_PAD.encode(payload);
        let mut mac = self.mac();
        mac.update(BEARER_PREFIX.as_bytes());
        mac.update(payload.as_bytes());
        let tag = URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes());
        format!("{BEARER_PREFIX}{payload}.{tag}")
    }

    /// Checks a token's signature, then its expiry against `now` (Unix
    /// seconds); returns who it speaks for and when it expires (Unix seconds).
    pub(crate) fn verify_with_expiry(
        &self,
        token: &str,
        now: i64,
    ) -> Result<(TokenSubject, i64), TokenError> {
        let rest = token
            .strip_prefix(BEARER_PREFIX)
            .ok_or(TokenError::Malformed)?;
        let (payload, tag) = rest.split_once('.').ok_or(TokenError::Malformed)?;
        let tag = URL_SAFE_NO_PAD
            .decode(tag)
            .map_err(|_| TokenError::Malformed)?;
        let mut mac = self.mac();
        mac.update(BEARER_PREFIX.as_bytes());
        mac.update(payload.as_bytes());
        mac.verify_slice(&tag)
            .map_err(|_| TokenError::BadSignature)?;

        let payload = URL_SAFE_NO_PAD
            .decode(payload)
            .map_err(|_| TokenError::Malformed)?;
        let payload = std::str::from_utf8(&payload).map_err(|_| TokenError::Malformed)?;
        let mut parts = payload.splitn(3, ':');
        let (kind, id, expiry) = match (parts.next(), parts.next(), parts.next()) {
            (Some(k), Some(i), Some(e)) => (k, i, e),
            _ => return Err(TokenError::Malformed),
        };
        let expiry: i64 = expiry.parse().map_err(|_| TokenError::Malformed)?;
        if !is_uuid(id) {
            return Err(TokenError::Malformed);
        }
        if expiry <= now {
            return Err(TokenError::Expired);
        }
        match kind {
            "u" => Ok((TokenSubject::User(id.to_owned()), expiry)),
            "a" => Ok((TokenSubject::Agent(id.to_owned()), expiry)),
            _ => Err(TokenError::Malformed),
        }
    }
}

/// Whether `token` has the form of a user access token.
pub(crate) fn is_access_token(token: &str) -> bool {
    token.starts_with(ACCESS_TOKEN_PREFIX)
}

/// Makes a user access token from 32 random bytes.
pub fn access_token_from_bytes(bytes: [u8; 32]) -> String {
    format!("{ACCESS_TOKEN_PREFIX}{}", URL_SAFE_NO_PAD.encode(bytes))
}

pub use crate::store::tokens::token_hash;

/// Compares two hashes in constant time.
pub(crate) fn hashes_match(a: &[u8; 32], b: &[u8; 32]) -> bool {
    use subtle::ConstantTimeEq;
    a.ct_eq(b).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    impl TokenSigner {
        /// Checks a token's signature, then its expiry against `now` (Unix seconds).
        fn verify(&self, token: &str, now: i64) -> Result<TokenSubject, TokenError> {
            self.verify_with_expiry(token, now)
                .map(|(subject, _)| subject)
        }
    }

    const USER: &str = "0b7f1f2e-1c1d-4a7e-9a51-0f5b6c0c1d2e";

    #[test]
    fn issued_tokens_verify_until_they_expire() {
        let signer = TokenSigner::from_session_secret("s3cret");
        let token = signer.issue(&TokenSubject::User(USER.into()), 2_000);
        assert!(!token.contains("s3cret"));
        assert_eq!(
            signer.verify(&token, 1_000),
            Ok(TokenSubject::User(USER.into()))
        );
        assert_eq!(signer.verify(&token, 2_000), Err(TokenError::Expired));
    }

    #[test]
    fn another_secret_or_a_changed_payload_fails_the_signature() {
        let signer = TokenSigner::from_session_secret("one");
        let token = signer.issue(&TokenSubject::Agent(USER.into()), 2_000);
        let other = TokenSigner::from_session_secret("two");
        assert_eq!(other.verify(&token, 0), Err(TokenError::BadSignature));
        let forged = signer.issue(&TokenSubject::User(USER.into()), 2_000);
        let (head, _) = forged.rsplit_once('.').unwrap();
        let (_, tag) = token.rsplit_once('.').unwrap();
        assert_eq!(
            signer.verify(&format!("{head}.{tag}"), 0),
            Err(TokenError::BadSignature)
        );
    }

    #[test]
    fn garbage_is_malformed() {
        let signer = TokenSigner::from_session_secret("x");
        for t in ["", "scb1.", "scb1.a.b", "Bearer x", "scb1.!!.??"] {
            assert!(signer.verify(t, 0).is_err(), "{t}");
        }
    }

    #[test]
    fn access_tokens_hash_stably() {
        let token = access_token_from_bytes([9; 32]);
        assert!(is_access_token(&token));
        assert!(hashes_match(&token_hash(&token), &token_hash(&token)));
        assert!(!hashes_match(&token_hash(&token), &token_hash("other")));
    }

    /// Secrets are compared only in constant time: the bearer token's MAC
    /// through `hmac`'s `verify_slice` (which compares with `subtle`), and
    /// access-token hashes through `subtle::ConstantTimeEq`. This test pins
    /// that down in the source, so a later `==` on a MAC or a hash fails it.
    #[test]
    fn secrets_are_compared_in_constant_time() {
        let source = include_str!("tokens.rs");
        let code = &source[..source.find("#[cfg(test)]").unwrap()];
        assert!(code.contains("mac.verify_slice(&tag)"));
        assert!(code.contains("a.ct_eq(b).into()"));
        for forbidden in ["tag ==", "== tag", "finalize() ==", "a == b", "hash =="] {
            assert!(!code.contains(forbidden), "{forbidden}");
        }
        // And they still answer correctly, whatever differs.
        let hash = token_hash("scpat_x");
        for i in [0, 15, 31] {
            let mut other = hash;
            other[i] ^= 1;
            assert!(!hashes_match(&hash, &other));
        }
        assert!(hashes_match(&hash, &token_hash("scpat_x")));
    }

    mod fuzz {
        use super::*;
        use proptest::prelude::*;

        fn uuid() -> impl Strategy<Value = String> {
            any::<[u8; 16]>().prop_map(crate::model::uuid_from_bytes)
        }

        fn subject() -> impl Strategy<Value = TokenSubject> {
            (any::<bool>(), uuid()).prop_map(|(user, id)| {
                if user {
                    TokenSubject::User(id)
                } else {
                    TokenSubject::Agent(id)
                }
            })
        }

        /// `scb1.<base64 of payload-like text>.<base64 of bytes>`.
        fn token_like() -> impl Strategy<Value = String> {
            let payload = prop_oneof!["[ua]:[a-f0-9-]{0,40}:-?[0-9]{0,20}", "\\PC{0,60}",];
            (payload, proptest::collection::vec(any::<u8>(), 0..40)).prop_map(|(p, tag)| {
                format!(
                    "{BEARER_PREFIX}{}.{}",
                    URL_SAFE_NO_PAD.encode(p),
                    URL_SAFE_NO_PAD.encode(tag)
                )
            })
        }

        proptest! {
            #[test]
            fn fuzz_token_verify_never_panics(token in "\\PC{0,200}", now in any::<i64>()) {
                let signer = TokenSigner::from_session_secret("fuzz");
                let _ = signer.verify(&token, now);
                let _ = is_access_token(&token);
                let _ = token_hash(&token);
            }

            #[test]
            fn fuzz_token_like_text_never_verifies(token in token_like(), now in any::<i64>()) {
                let signer = TokenSigner::from_session_secret("fuzz");
                let result = signer.verify(&token, now);
                prop_assert!(result.is_err(), "{:?}", result);
            }

            #[test]
            fn fuzz_tokens_round_trip_until_expiry(
                subject in subject(),
                expires_at in any::<i64>(),
                now in any::<i64>(),
                secret in "\\PC{0,40}",
            ) {
                let signer = TokenSigner::from_session_secret(&secret);
                let token = signer.issue(&subject, expires_at);
                let result = signer.verify(&token, now);
                if expires_at > now {
                    prop_assert_eq!(result, Ok(subject));
                } else {
                    prop_assert_eq!(result, Err(TokenError::Expired));
                }
            }

            #[test]
            fn fuzz_any_change_to_a_token_fails_it(
                subject in subject(),
                at in any::<prop::sample::Index>(),
                replacement in proptest::char::range('-', 'z'),
            ) {
                let signer = TokenSigner::from_session_secret("fuzz");
                let token = signer.issue(&subject, i64::MAX);
                let at = at.index(token.len());
                let mut changed = token.clone();
                changed.replace_range(at..=at, &replacement.to_string());
                prop_assume!(changed != token);
                prop_assert!(signer.verify(&changed, 0).is_err(), "{}", changed);
                let other = TokenSigner::from_session_secret("another");
                prop_assert_eq!(other.verify(&token, 0), Err(TokenError::BadSignature));
            }
        }
    }
}
