//! The web client in a real browser: the browser benchmark (`hub-bench
//! web`) and the measurements the web counter budgets take.
//!
//! - [`browser`] and [`driver`]: headless Chromium through chromedriver,
//!   one fresh profile per [`Browser`] (the `headless-chromium` crate, which
//!   the report page's test uses too).
//! - [`page`]: the pages' paths, the DOM markers and the scripts run in them.
//! - [`mod@bench`]: the scenarios, their statistics and the join to the Hub's log.
//! - [`budget`]: the web counter budgets' measurements, the page served
//!   with the web fixture's data.
//! - [`report`]: the JSON report.

pub mod bench;
pub mod budget;
pub mod page;
pub mod report;

pub use bench::{run, WebArgs};
pub use headless_chromium::{browser, driver, Browser, BrowserPaths, SessionPost};
pub use report::BrowserReport;
