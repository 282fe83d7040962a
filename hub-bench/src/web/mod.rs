//! The web client in a real browser: the browser benchmark (`hub-bench
//! web`) and the measurements the web counter budgets take.
//!
//! - [`browser`]: headless Chromium through chromedriver, one fresh profile
//!   per [`browser::Browser`], and the one-line skip of a browser test on a
//!   machine without Chromium (never with `CI=true`).
//! - [`driver`]: a chromedriver and the browsers it starts, in a process
//!   group of their own, ended together when dropped.
//! - [`page`]: the pages' paths, the DOM markers and the scripts run in them.
//! - [`mod@bench`]: the scenarios, their statistics and the join to the Hub's log.
//! - [`budget`]: the web counter budgets' measurements, the page served
//!   with the web fixture's data.
//! - [`report`]: the JSON report.

pub mod bench;
pub mod browser;
pub mod budget;
pub mod driver;
pub mod page;
pub mod report;

pub use bench::{run, WebArgs};
pub use browser::{Browser, BrowserPaths, SessionPost};
pub use report::BrowserReport;
