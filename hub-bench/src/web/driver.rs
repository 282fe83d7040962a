//! A `chromedriver` process and the browsers it starts, ended together.
//!
//! chromedriver starts Chromium as its own child, and Chromium starts
//! renderer, GPU and utility processes of its own. Killing chromedriver alone
//! leaves that browser running, reparented, for as long as the machine runs
//! (a WebDriver session ended with `close` quits it, but a panic or an error
//! on the way skips that). So the driver runs in a process group of its own,
//! which its browsers inherit, and dropping a [`Chromedriver`] kills the
//! whole group.

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};

/// How long chromedriver may take to answer on its port.
const START_TIMEOUT: Duration = Duration::from_secs(20);

/// A running chromedriver on a loopback port, in a process group of its
/// own: dropping it ends the driver and every browser it started.
#[derive(Debug)]
pub struct Chromedriver {
    child: Child,
    url: String,
    /// The driver exited (and was reaped) before it answered: its process
    /// group id may since name another group, which is then left alone.
    reaped: bool,
}

fn free_port() -> anyhow::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

impl Chromedriver {
    /// Starts the chromedriver at `path` on a free loopback port and waits
    /// until it answers its `/status`.
    pub async fn start(path: &Path) -> anyhow::Result<Chromedriver> {
        let port = free_port()?;
        let mut command = Command::new(path);
        command
            .arg(format!("--port={port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        #[cfg(unix)]
        {
            use std::os::unix::process::CommandExt;
            // A group of its own, led by the driver (group id = its pid).
            command.process_group(0);
        }
        let child = command
            .spawn()
            .with_context(|| format!("start {}", path.display()))?;
        let mut driver = Chromedriver {
            child,
            url: format!("http://127.0.0.1:{port}"),
            reaped: false,
        };
        // On an error the driver is dropped here, which ends it.
        driver.wait_until_answering().await?;
        Ok(driver)
    }

    async fn wait_until_answering(&mut self) -> anyhow::Result<()> {
        let http = reqwest::Client::new();
        let until = Instant::now() + START_TIMEOUT;
        loop {
            if let Some(status) = self.child.try_wait()? {
                self.reaped = true;
                bail!("chromedriver exited at start ({status})");
            }
            if let Ok(reply) = http.get(format!("{}/status", self.url)).send().await {
                if reply.status().is_success() {
                    return Ok(());
                }
            }
            if Instant::now() >= until {
                bail!(
                    "chromedriver did not answer on {} within {} s",
                    self.url,
                    START_TIMEOUT.as_secs()
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The driver's base URL, `http://127.0.0.1:<port>`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The id of the driver's process group, which its browsers share.
    pub fn process_group(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Chromedriver {
    fn drop(&mut self) {
        #[cfg(unix)]
        if !self.reaped {
            if let Ok(group) = libc::pid_t::try_from(self.child.id()) {
                // SAFETY: kill(2) only sends a signal; a negative pid names
                // the process group the driver leads, which cannot have been
                // reused while the driver is unreaped (it is reaped below).
                unsafe {
                    libc::kill(-group, libc::SIGKILL);
                }
            }
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
