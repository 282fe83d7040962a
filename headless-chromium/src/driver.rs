//! A `chromedriver` process and the browsers it starts, ended together.
//!
//! chromedriver starts Chromium as its own child, and Chromium starts
//! renderer, GPU and utility processes of its own. Killing chromedriver alone
//! leaves that browser running, reparented, for as long as the machine runs
//! (a WebDriver session ended with `close` quits it, but a panic or an error
//! on the way skips that). So dropping a [`Chromedriver`] first asks it to
//! shut down (it quits its browsers, which then remove their temporary
//! files), and then kills its process group, which the browsers inherit,
//! for whatever did not end.

use std::io::Write as _;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};

/// How long chromedriver may take to answer on its port.
const START_TIMEOUT: Duration = Duration::from_secs(20);

/// How long a dropped driver is given to quit its browsers and exit before
/// its process group is killed.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(2);

/// A running chromedriver on a loopback port, in a process group of its
/// own: dropping it ends the driver and every browser it started.
#[derive(Debug)]
pub struct Chromedriver {
    child: Child,
    addr: SocketAddr,
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
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let mut driver = Chromedriver {
            child,
            addr,
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
            if let Ok(reply) = http.get(format!("{}/status", self.url())).send().await {
                if reply.status().is_success() {
                    return Ok(());
                }
            }
            if Instant::now() >= until {
                bail!(
                    "chromedriver did not answer on {} within {} s",
                    self.url(),
                    START_TIMEOUT.as_secs()
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The driver's base URL, `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The id of the driver's process group, which its browsers share.
    pub fn process_group(&self) -> u32 {
        self.child.id()
    }

    /// Asks the driver to end its sessions and exit (its `/shutdown`), which
    /// quits each browser cleanly, and waits for the answer, at most
    /// [`SHUTDOWN_WAIT`] for each step. Blocking: it runs in `drop`.
    fn request_shutdown(&self) {
        let Ok(mut stream) = TcpStream::connect_timeout(&self.addr, SHUTDOWN_WAIT) else {
            return;
        };
        let _ = stream.set_read_timeout(Some(SHUTDOWN_WAIT));
        let _ = stream.set_write_timeout(Some(SHUTDOWN_WAIT));
        let request = format!(
            "GET /shutdown HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
            self.addr
        );
        if stream.write_all(request.as_bytes()).is_ok() {
            // The answer comes once the sessions have ended.
            let _ = std::io::copy(&mut stream, &mut std::io::sink());
        }
    }

    /// Waits up to [`SHUTDOWN_WAIT`] for the driver to exit, without reaping
    /// it: while it is unreaped its process group id stays its own.
    #[cfg(unix)]
    fn wait_for_exit_unreaped(&self) {
        let pid: libc::id_t = self.child.id();
        let until = Instant::now() + SHUTDOWN_WAIT;
        while Instant::now() < until {
            // SAFETY: a zeroed siginfo_t is a valid value for waitid to fill.
            let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
            // SAFETY: waitid writes only into `info`; WNOWAIT leaves the
            // child unreaped and WNOHANG returns at once.
            let done = unsafe {
                libc::waitid(
                    libc::P_PID,
                    pid,
                    &mut info,
                    libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
                )
            };
            // SAFETY: `si_pid` is set by waitid when a child has exited, and
            // left zero otherwise.
            if done != 0 || unsafe { info.si_pid() } != 0 {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Chromedriver {
    fn drop(&mut self) {
        if !self.reaped {
            self.request_shutdown();
            #[cfg(unix)]
            {
                self.wait_for_exit_unreaped();
                if let Ok(group) = libc::pid_t::try_from(self.child.id()) {
                    // SAFETY: kill(2) only sends a signal; a negative pid
                    // names the process group the driver leads, which cannot
                    // have been reused while the driver is unreaped (it is
                    // reaped below).
                    unsafe {
                        libc::kill(-group, libc::SIGKILL);
                    }
                }
            }
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
