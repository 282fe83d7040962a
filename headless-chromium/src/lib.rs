//! Headless Chromium for tests and benchmarks: the distribution's
//! `chromium` driven through its `chromedriver`, nothing downloaded at run
//! time.
//!
//! - [`browser`]: where the browser is ([`BrowserPaths`], and the one-line
//!   skip of a browser test on a machine without it, never with `CI=true`),
//!   and one session with a fresh profile ([`Browser`]).
//! - [`driver`]: a chromedriver and the browsers it starts, in a process
//!   group of their own, ended together when dropped.
#![warn(missing_docs)]

pub mod browser;
pub mod driver;

pub use browser::{Browser, BrowserPaths, SessionPost};
pub use driver::Chromedriver;
