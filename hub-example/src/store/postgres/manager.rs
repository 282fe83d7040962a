//! The bb8 connection manager of the PostgreSQL pool: `bb8-postgres`'s own,
//! whose connections this one dresses as [`PgClient`]s (a lock timeout set,
//! a statement cache, the runtime to block on).

use std::time::Duration;

use bb8::ManageConnection;
use bb8_postgres::PostgresConnectionManager;
use tokio::runtime::Handle;
use tokio_postgres::tls::NoTlsStream;
use tokio_postgres::{Client, Config, Connection, NoTls, Socket};

use super::client::PgClient;
use super::failures::{one_line, redacted};
use crate::store::db::{DbError, PoolOptions};

/// The connection manager of the PostgreSQL pool.
#[derive(Clone)]
pub(crate) struct PgManager {
    inner: PostgresConnectionManager<NoTls>,
    config: Config,
    url: String,
    lock_timeout: Duration,
    runtime: Handle,
}

impl std::fmt::Debug for PgManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgManager")
            .field("url", &self.url)
            .field("lock_timeout", &self.lock_timeout)
            .finish_non_exhaustive()
    }
}

impl PgManager {
    /// A manager for `url`, whose connections run on `runtime`, wait at most
    /// the pool's checkout timeout to connect and its busy timeout for a
    /// lock.
    pub(crate) fn new(
        url: &str,
        options: PoolOptions,
        runtime: Handle,
    ) -> Result<PgManager, DbError> {
        let mut config: Config = url
            .parse()
            .map_err(|e: tokio_postgres::Error| DbError::BadUrl(e.to_string()))?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(options.checkout_timeout);
        }
        if config.get_application_name().is_none() {
            config.application_name("hub-example");
        }
        Ok(PgManager {
            inner: PostgresConnectionManager::new(config.clone(), NoTls),
            config,
            url: redacted(url),
            lock_timeout: options.busy_timeout,
            runtime,
        })
    }

    /// The runtime the connections run on.
    pub(crate) fn runtime(&self) -> &Handle {
        &self.runtime
    }

    /// A new connection outside the pool (the seeder's, the migrations'
    /// check), reporting on one line why it could not connect. Call it from
    /// where blocking is allowed.
    pub(crate) fn open_client(&self) -> Result<PgClient, DbError> {
        self.runtime.block_on(self.connect())
    }

    /// A connection of its own whose messages the caller polls (the event
    /// listener's: bb8-postgres's connections drop their notifications).
    pub(crate) async fn connect_polled(
        &self,
    ) -> Result<(Client, Connection<Socket, NoTlsStream>), DbError> {
        self.config
            .connect(NoTls)
            .await
            .map_err(|e| self.connect_error(&e))
    }

    fn connect_error(&self, e: &tokio_postgres::Error) -> DbError {
        DbError::Connect {
            url: self.url.clone(),
            reason: one_line(e),
        }
    }
}

impl ManageConnection for PgManager {
    type Connection = PgClient;
    type Error = DbError;

    async fn connect(&self) -> Result<PgClient, DbError> {
        let client = self
            .inner
            .connect()
            .await
            .map_err(|e| self.connect_error(&e))?;
        client
            .batch_execute(&format!(
                "SET lock_timeout = {}",
                self.lock_timeout.as_millis().max(1)
            ))
            .await?;
        Ok(PgClient::new(client, self.runtime.clone()))
    }

    async fn is_valid(&self, conn: &mut PgClient) -> Result<(), DbError> {
        Ok(self.inner.is_valid(conn.inner_mut()).await?)
    }

    fn has_broken(&self, conn: &mut PgClient) -> bool {
        conn.is_closed()
    }
}
