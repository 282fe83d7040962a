//! A Hub with its web client, served in this process on a free loopback
//! port, as `hub-example serve --enable-web` serves it: the demo's browser
//! table and the browser tests run against it.

use std::path::Path;

use hub_example::api::profiling::set_readiness_marks;
use hub_example::web::{router, WebOptions};
use hub_example::Hub;
use tokio::sync::oneshot;

/// A served Hub with its web client; stopped when dropped.
pub struct WebHub {
    url: String,
    hub: Hub,
    _stop: oneshot::Sender<()>,
}

impl WebHub {
    /// Serves the seeded database at `db_path` (migrations applied), tracing
    /// on or off, every log line written to a new file at `log_path`.
    pub async fn start(
        db_path: &Path,
        session_secret: &str,
        perf_trace: bool,
        log_path: &Path,
    ) -> anyhow::Result<WebHub> {
        let hub = crate::demo::seeded_hub(db_path, session_secret, perf_trace, log_path)?;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}", listener.local_addr()?);
        let (stop, stopped) = oneshot::channel::<()>();
        let web = router(&hub, WebOptions { test_login: false });
        tokio::spawn(hub.serving_router(listener, web, async {
            let _ = stopped.await;
        }));
        Ok(WebHub {
            url,
            hub,
            _stop: stop,
        })
    }

    /// The base URL of the page and the API.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Turns the `profiling.readiness_marks` setting on or off.
    pub fn set_readiness_marks(&self, on: bool) -> anyhow::Result<()> {
        set_readiness_marks(self.hub.db(), on, hub_example::clock::now_ms())?;
        Ok(())
    }
}
