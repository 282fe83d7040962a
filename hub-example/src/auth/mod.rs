//! Authentication: who a request speaks for, and until when. Below both the
//! API and the web client, which import it; it imports neither.
//!
//! - [`bearer`]: the `Authorization: Bearer` header, and resolving a bearer
//!   token (a signed token or an access token) to its principal.
//! - [`tokens`]: the tokens themselves: signed bearer tokens (HMAC-SHA256
//!   under a key derived from the session secret), user access tokens, and
//!   the SHA-256 the Hub stores in their place.
//! - [`session`]: browser sessions: the session cookie, its table, the
//!   cross-site checks, and resolving a session to its user.
//! - `expiry`: when the credential a request came with stops being valid.
//! - [`refused`]: the log of refused credentials, rate-limited, never the
//!   credential itself.
//! - [`error`]: why a credential was refused, or could not be checked.
//!
//! The API router's authentication layer (`api/authenticate.rs`) applies
//! these to every request; the web client's sign-in (`web/signin.rs`) turns
//! a bearer token into a session.

pub mod bearer;
pub mod error;
pub(crate) mod expiry;
pub mod refused;
pub mod session;
pub mod tokens;

pub(crate) use error::AuthError;
pub(crate) use expiry::CredentialExpiry;
pub(crate) use refused::FailedLogins;
pub use tokens::TokenSigner;
